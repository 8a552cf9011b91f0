"""Fleets of pods against what they must equal: one pod is the single cache, the pods' lookups add up to the
trace's, round-robin pods are LRUs over their own share of the commands, sharded pods hold each key once, and
rolling restarts restart each pod at its own time."""

import json
from collections import OrderedDict

import pytest

import cachescope
from cachescope.simulate.registry import POLICIES
from conftest import run_cli
from test_semantics import random_events, write_parquet

FLEET_POLICIES = [name for name in POLICIES if name != "belady"]


@pytest.fixture
def trace(tmp):
    events = random_events(3, n_commands=1500)
    write_parquet(events, tmp / "t.parquet")
    return str(tmp / "t.parquet"), events


def kw(policy):
    return POLICIES[policy].keyword


@pytest.mark.parametrize("policy", FLEET_POLICIES)
def test_one_pod_is_the_single_cache(trace, policy):
    path, _ = trace
    single = cachescope.simulate_trace(path, writes="invalidate", **{kw(policy): [20, 40]}).summary
    fleet = cachescope.simulate_trace(path, writes="invalidate", pods=1, route="entity", **{kw(policy): [20, 40]}).summary
    columns = ["capacity", "lookups", "hits", "round_trips_saved", "evictions", "invalidations", "resident"]
    assert fleet[columns].to_dict("records") == single[columns].to_dict("records")
    assert list(fleet["pods"]) == [1, 1]


@pytest.mark.parametrize("route", ["random", "round-robin", "entity"])
def test_the_pods_lookups_add_up_to_the_fleets(trace, route):
    path, _ = trace
    result = cachescope.simulate_trace(path, lru=[10], pods="3,7", route=route)
    for row in result.summary.to_dict("records"):
        assert sum(p["lookups"] for p in row["per_pod"]) == row["lookups"] == result.trace.lookups
        assert sum(p["hits"] for p in row["per_pod"]) == row["hits"]
        assert row["pod_hit_rate_min"] <= row["hit_rate"] <= row["pod_hit_rate_max"] or row["pods"] == 1
        assert row["load_imbalance"] >= 1 and row["fleet_capacity_entries"] == row["pods"] * 10
    pods = result.per_pod
    assert len(pods) == 3 + 7 and pods.groupby("pods")["lookups"].sum().to_dict() == {3: result.trace.lookups,
                                                                                        7: result.trace.lookups}


def test_the_timeline_gives_the_spread_of_the_pods_in_every_window(trace):
    path, _ = trace
    result = cachescope.simulate_trace(path, lru=[10], pods="1,7", route="entity", window=200)
    tl = result.timeline
    fleets = tl[tl["pod_hit_rate_min"].notna()]
    assert set(fleets["run"]) == {0, 1} and tl[tl["policy"] == "infinite"]["pod_hit_rate_min"].isna().all()
    eps = 1e-6  # the spread is kept as 32-bit floats
    for run, rows in fleets.groupby("run"):
        assert len(rows) == len(tl[tl["run"] == run])
        # The fleet's window hit rate is a lookup-weighted mean of its pods' rates: within their range.
        assert ((rows["pod_hit_rate_min"] <= rows["hit_rate"] + eps) & (rows["hit_rate"] <= rows["pod_hit_rate_max"] + eps)).all()
        assert ((rows["pod_hit_rate_min"] <= rows["pod_hit_rate_median"]) & (rows["pod_hit_rate_median"] <= rows["pod_hit_rate_max"])).all()
        if result.summary.loc[run, "pods"] == 1:
            assert (abs(rows["pod_hit_rate_max"] - rows["hit_rate"]) < eps).all()
        else:
            assert (rows["pod_hit_rate_max"] - rows["pod_hit_rate_min"] > 0.05).any()


def test_round_robin_pods_are_lrus_over_their_own_commands(trace):
    path, events = trace
    pods, capacity = 4, 6
    caches = [OrderedDict() for _ in range(pods)]
    hits = [0] * pods
    owner, turn = {}, 0
    for e in events:
        if e.op != "read":
            continue
        if e.req not in owner:
            owner[e.req], turn = turn, (turn + 1) % pods
        cache, key = caches[owner[e.req]], (e.entity, e.field)
        if key in cache:
            cache.move_to_end(key)
            hits[owner[e.req]] += 1
        else:
            cache[key] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    result = cachescope.simulate_trace(path, lru=[capacity], pods=pods, route="round-robin")
    assert [p["hits"] for p in result.summary["per_pod"][0]] == hits


def test_sharded_pods_hold_each_key_once_and_replicated_ones_once_per_pod(trace):
    path, events = trace
    big = 10_000  # above the unique keys: only first references miss
    result = cachescope.simulate_trace(path, lru=[big], pods=5, route="random,entity")
    rows = {r["route"]: r for r in result.summary.to_dict("records")}
    assert rows["entity"]["misses"] == result.unique_keys
    # Replicated: a key misses once in every pod that sees it, more than once in all.
    assert rows["random"]["misses"] == sum(p["lookups"] - p["hits"] for p in rows["random"]["per_pod"])
    assert rows["random"]["misses"] > result.unique_keys
    assert rows["entity"]["hit_rate"] == result.infinite["hit_rate"]


def test_a_sharded_batch_is_saved_only_when_every_pod_it_reached_hit(trace, tmp):
    """Batches of several entities (so several pods under `entity`): with caches above the unique keys an
    entity fleet misses only first references, as the infinite cache does, so it must serve exactly the
    commands and save exactly the round trips the infinite cache does; summing over pods would count each
    pod's part of a batch as a round trip of its own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, events = trace
    table = pq.read_table(path)
    reqs = table.column("req").to_numpy()
    table = table.append_column("conn", pa.array((reqs % 3).astype("uint32")))
    table = table.append_column("batch", pa.array((reqs // 6).astype("uint64")))
    batched = tmp / "batched.parquet"
    pq.write_table(table, batched)
    result = cachescope.simulate_trace(str(batched), lru=[10_000], pods=5, route="entity,random")
    rows = {r["route"]: r for r in result.summary.to_dict("records")}
    inf = result.infinite
    assert result.trace.round_trips_known and inf["round_trips"] < inf["commands"]
    for key in ("commands", "commands_served", "round_trips", "round_trips_saved"):
        assert rows["entity"][key] == inf[key], key
    assert sum(p["round_trips"] for p in rows["entity"]["per_pod"]) > inf["round_trips"]
    assert rows["random"]["round_trips"] == inf["round_trips"]
    assert rows["random"]["round_trips_saved"] < inf["round_trips_saved"]


def test_a_rolling_restart_restarts_each_pod_at_its_own_time(trace):
    path, events = trace
    span_s = (events[-1].ts - events[0].ts) / 1e9
    every = f"{int(span_s // 4)}s"
    result = cachescope.simulate_trace(path, lru=[30], pods=4, route="entity", rolling_restart_every=every,
                                       rolling_over=f"{int(span_s // 8)}s")
    row = result.summary.to_dict("records")[0]
    assert row["restarts"] >= 4 * 3 and len(row["deploy_times"]) >= 3
    at_once = cachescope.simulate_trace(path, lru=[30], pods=4, route="entity", restart_every=every)
    # Rolling loses less at each deploy than restarting every pod at once, and the bound does not restart.
    assert row["hits"] > at_once.summary["hits"][0]
    assert result.infinite["hits"] == cachescope.simulate_trace(path, lru=[30]).infinite["hits"]


def test_the_command_line_reports_a_fleet(trace, tmp):
    path, _ = trace
    out = run_cli("simulate.py", path, "--lru", "10,40", "--pods", "2,8", "--route", "random,entity", "--json",
                  check_rc=0).stdout
    results = json.loads(out)["results"]
    assert {(r["capacity"], r["pods"], r["route"]) for r in results} == {
        (c, n, r) for c in (10, 40) for n in (2, 8) for r in ("random", "entity")}
    assert all(len(r["per_pod"]) == r["pods"] and {"pod", "lookups", "hits", "hit_rate"} <= set(r["per_pod"][0])
               for r in results)
    text = run_cli("simulate.py", path, "--lru", "10", "--pods", "8", "--route", "entity", "--plot",
                   tmp / "fleet.png", check_rc=0).stdout
    assert "LRU 10 x8 entity" in text and "imbalance" in text
    bad = run_cli("simulate.py", path, "--lru", "10", "--pods", "8", "--route", "sideways")
    assert bad.returncode == 2 and "unknown route 'sideways'" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("simulate.py", path, "--lru", "10", "--rolling-restart-every", "1h")
    assert bad.returncode == 2 and "give --pods" in bad.stderr


def test_client_routing_equals_separate_runs_over_each_clients_own_stream(tmp):
    """A MONITOR log of three service hosts (each from two ports): one pod per host, each pod exactly a
    single cache over that host's lines."""
    from traces import as_monitor_text, random_commands

    lines = as_monitor_text(random_commands(4, n_commands=900)).splitlines()
    (tmp / "all.monitor").write_text("\n".join(lines) + "\n")
    hosts = ["10.0.0.0", "10.0.0.1", "10.0.0.2"]
    fleet = cachescope.simulate_trace(str(tmp / "all.monitor"), lru=[15], route="client").summary
    row = fleet.to_dict("records")[0]
    assert row["pods"] == 3 and row["route"] == "client"
    by_host = {p["client"]: p for p in row["per_pod"]}
    assert sorted(by_host) == hosts
    for host in hosts:
        own = [lines[0]] + [line for line in lines[1:] if f" {host}:" in line]
        (tmp / f"{host}.monitor").write_text("\n".join(own) + "\n")
        single = cachescope.simulate_trace(str(tmp / f"{host}.monitor"), lru=[15]).summary.iloc[0]
        assert (by_host[host]["lookups"], by_host[host]["hits"]) == (single["lookups"], single["hits"])


def test_client_routing_needs_a_trace_that_knows_its_clients(tmp):
    from traces import as_commands_text, random_commands

    (tmp / "t.txt").write_text(as_commands_text(random_commands(1)))
    bad = run_cli("simulate.py", tmp / "t.txt", "--lru", "10", "--route", "client")
    assert bad.returncode == 2 and "knows its clients" in bad.stderr and "Traceback" not in bad.stderr


def test_key_pattern_routing_puts_every_key_of_one_id_on_one_pod(trace, tmp):
    path, events = trace
    # The entities are st_0 .. st_11: shard by the id's last digit, so st_1 and st_11 share a pod.
    result = cachescope.simulate_trace(path, lru=[10_000], pods=4, route="key-pattern,entity",
                                       key_pattern=r"^st_\d*?(\d)$")
    rows = {r["route"]: r for r in result.summary.to_dict("records")}
    assert rows["key-pattern"]["misses"] == result.unique_keys == rows["entity"]["misses"]
    assert result.unmatched_shards == 0
    # One id for every key: one pod takes all the lookups.
    one = cachescope.simulate_trace(path, lru=[10], pods=4, route="key-pattern", key_pattern=r"^(st)_").summary
    loads = sorted(p["lookups"] for p in one["per_pod"][0])
    assert loads[:3] == [0, 0, 0] and one["load_imbalance"][0] == 4.0
    # Keys the pattern misses are their own shards, and counted.
    none = cachescope.simulate_trace(path, lru=[10_000], pods=4, route="key-pattern", key_pattern=r"^(cx)_")
    assert none.unmatched_shards == len(events) and none.summary["misses"][0] == none.unique_keys


def test_a_bad_key_pattern_is_one_line(trace):
    path, _ = trace
    for pattern, message in (("(", "key pattern"), ("st_", "no capture group")):
        bad = run_cli("simulate.py", path, "--lru", "10", "--pods", "2", "--route", "key-pattern",
                      "--key-pattern", pattern)
        assert bad.returncode == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    bad = run_cli("simulate.py", path, "--lru", "10", "--pods", "2", "--route", "key-pattern")
    assert bad.returncode == 2 and "go together" in bad.stderr


def test_the_sharded_what_if_from_one_pods_capture(trace):
    """One pod's capture of a replicated fleet of 6: the replicated estimate is the pod alone; the sharded
    what-if routes by entity over 6 pods whose clock runs 6 times faster (a shard takes its entities' lookups
    from 6 pods): the same hits as an entity fleet when nothing depends on time, 6 times fewer restarts in the
    trace's span, and warm-ups measured on the shards' clock."""
    path, events = trace
    span_s = (events[-1].ts - events[0].ts) / 1e9
    every = f"{int(span_s // 12)}s"
    what_if = cachescope.simulate_trace(path, lru=[40], one_pod_of=6).summary.to_dict("records")
    single = cachescope.simulate_trace(path, lru=[40]).summary.iloc[0]
    sharded = cachescope.simulate_trace(path, lru=[40], pods=6, route="entity").summary.iloc[0]
    assert (what_if[0]["pods"], what_if[0]["hits"]) == (1, single["hits"])
    assert (what_if[1]["pods"], what_if[1]["hits"]) == (6, sharded["hits"]) and "what-if" in what_if[1]["estimate"]
    timed = cachescope.simulate_trace(path, lru=[40], one_pod_of=6, restart_every=every).summary
    plain = cachescope.simulate_trace(path, lru=[40], pods=6, route="entity", restart_every=every).summary
    assert plain["restarts"][0] >= 6 * 11
    assert timed["restarts"][1] <= 6 * 2 < plain["restarts"][0]
    bad = run_cli("simulate.py", path, "--lru", "10", "--one-pod-of", "6", "--pods", "3")
    assert bad.returncode == 2 and "without --pods" in bad.stderr


def test_several_hosts_traces_merge_into_one_fleet_stream(tmp):
    """Two hosts' MONITOR logs given together equal the one log holding both, and each host stays a client
    of its own (named by its file) under the client route."""
    from traces import as_monitor_text, random_commands

    lines = as_monitor_text(random_commands(4, n_commands=900)).splitlines()
    parts = {"a": (" 10.0.0.0:", " 10.0.0.2:"), "b": (" 10.0.0.1:",)}
    for name, hosts in parts.items():
        own = [lines[0]] + [line for line in lines[1:] if any(h in line for h in hosts)]
        (tmp / f"{name}.monitor").write_text("\n".join(own) + "\n")
    (tmp / "all.monitor").write_text("\n".join(lines) + "\n")
    both = [str(tmp / "a.monitor"), str(tmp / "b.monitor")]
    whole = cachescope.simulate_trace(str(tmp / "all.monitor"), lru=[15, 40], curve="lru", curve_capacities=[15, 40])
    merged = cachescope.simulate_trace(both, lru=[15, 40], curve="lru", curve_capacities=[15, 40])
    columns = ["lookups", "hits", "round_trips_saved"]
    assert merged.summary[columns].to_dict("records") == whole.summary[columns].to_dict("records")
    assert merged.curves["hits"].tolist() == whole.curves["hits"].tolist()
    assert (merged.trace.commands, merged.trace.lookups) == (whole.trace.commands, whole.trace.lookups)
    clients = cachescope.simulate_trace(both, lru=[15], route="client").per_pod
    assert sorted(clients["client"]) == ["a:10.0.0.0", "a:10.0.0.2", "b:10.0.0.1"]
    out = run_cli("simulate.py", *both, "--lru", "15", "--json", check_rc=0).stdout
    assert json.loads(out)["results"][0]["hits"] == whole.summary["hits"][0]
    (tmp / "k.keys").write_text("a\nb\na\n")
    bad = run_cli("simulate.py", tmp / "k.keys", tmp / "a.monitor", "--lru", "2")
    assert bad.returncode == 2 and "needs timestamps" in bad.stderr and "Traceback" not in bad.stderr
