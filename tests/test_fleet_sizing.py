"""Fleet curves and sizing answers against what they must equal: an LRU fleet's curve is the fleet run at every
capacity, each answer reaches its target in a run of its own while 2% less does not, the byte budget reaches it
as `--lru <bytes>B`, W-TinyLFU's answer reaches it at every admission draw, the cheapest fleet is the one with
the least memory, and the plot's lines carry the data their labels name."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import cachescope
from conftest import REPO

SAMPLE = str(REPO / "sample_traces" / "feature_store_paced.pcap")
PORTS = [16380]


@pytest.fixture(scope="module")
def sample_parquet(tmp_path_factory):
    """The bundled capture as a Parquet trace: read faster by the many runs these tests make."""
    out = tmp_path_factory.mktemp("sizing") / "sample.parquet"
    subprocess.run([sys.executable, "parse.py", SAMPLE, "--port", "16380", "-o", str(out)], cwd=REPO, check=True,
                   capture_output=True)
    return str(out)


@pytest.fixture(scope="module")
def sized(sample_parquet):
    return cachescope.simulate_trace(sample_parquet, curve="lru,wtinylfu", target="45%,55%", pods="1,4",
                                     route="entity,random", seeds=3)


@pytest.mark.parametrize("pods,route", [(4, "entity"), (3, "random"), (5, "round-robin"), (0, "client")])
def test_an_lru_fleets_curve_is_the_fleet_run_at_every_capacity(sample_parquet, pods, route):
    caps = [30, 300, 1500, 6000]
    curve = cachescope.simulate_trace(sample_parquet, curve="lru", curve_capacities=",".join(map(str, caps)),
                                      _shapes=[(pods, route)])
    mine = curve.curves[curve.curves["route"] == route].set_index("capacity")
    runs = cachescope.simulate_trace(sample_parquet, lru=caps, pods=str(pods) if pods else None, route=route)
    assert len(mine) == len(caps)
    for row in runs.summary.to_dict("records"):
        point = mine.loc[row["capacity"]]
        assert (point["hits"], point["commands_served"], point["round_trips_saved"]) == \
            (row["hits"], row["commands_served"], row["round_trips_saved"]), (route, row["capacity"])
    assert mine["hits"].is_monotonic_increasing and mine["hits"].iloc[0] < mine["hits"].iloc[-1]


def _hit_rates(path, policy, capacity, pods=None, route=None, seeds=(None,), unit=""):
    """The hit rate of separate runs of `policy` at `capacity` (one per seed)."""
    out = []
    for seed in seeds:
        params = {} if seed is None else {"params": {policy: {"seed": seed}}}
        r = cachescope.simulate_trace(path, pods=pods, route=route or "random", **params,
                                      **{policy: [f"{capacity}{unit}"]})
        out.append(float(r.summary["hit_rate"][0]))
    return out


def test_each_answer_reaches_its_target_in_a_run_of_its_own_and_two_percent_less_does_not(sized, sample_parquet):
    rows = [r for r in sized.to_json()["sizing"] if r["reached"]]
    assert {(r["policy"], r["pods"], r["route"]) for r in rows} >= {("lru", 1, None), ("lru", 4, "entity"),
                                                                    ("wtinylfu", 1, None)}
    for row in rows:
        seeds = range(row["seeds"]) if row.get("seeds") else (None,)
        pods = None if row["route"] is None else row["pods"]
        at = _hit_rates(sample_parquet, row["policy"], row["capacity"], pods, row["route"], seeds)
        assert min(at) == pytest.approx(row["hit_rate"]) and min(at) >= row["target"], row
        assert row["method"] in ("exact", "confirmed")
        if row["policy"] == "lru":  # a stack algorithm: less capacity never hits more
            below = _hit_rates(sample_parquet, "lru", int(row["capacity"] * 0.98), pods, row["route"])
            assert below[0] < row["target"], row
            assert row["hit_rate_low"] == row["hit_rate_high"] == row["hit_rate"]
        else:
            assert row["hit_rate_low"] == min(at) and row["hit_rate_high"] == max(at)


def test_the_byte_budget_reaches_the_target_as_a_byte_capacity(sized, sample_parquet):
    for row in sized.to_json()["sizing"]:
        if row["reached"] and row["policy"] == "lru" and row["route"] is None:
            budget = row["capacity_bytes"]
            assert _hit_rates(sample_parquet, "lru", budget, unit="B")[0] >= row["target"]
            assert _hit_rates(sample_parquet, "lru", int(budget * 0.98), unit="B")[0] < row["target"]
            # The memory of the entry answer is of the same order as the budget that holds as much.
            assert 0.8 < row["memory_bytes"] / budget < 1.25


def test_the_json_carries_the_fleet_curves_the_sizing_and_the_cheapest(sized):
    doc = json.loads(json.dumps(sized.to_json()))
    shapes = {(c["policy"], c["pods"], c["route"]) for c in doc["curves"]}
    assert {("lru", 1, None), ("lru", 4, "entity"), ("lru", 4, "random"), ("wtinylfu", 1, None),
            ("wtinylfu", 4, "entity"), ("wtinylfu", 4, "random")} <= shapes
    minisims = [c for c in doc["curves"] if c["policy"] == "wtinylfu"]
    assert all(c["method"] == "minisim" and "hit_rate_low" in c["points"][0] for c in minisims)
    keys = {"policy", "target", "pods", "route", "capacity", "hit_rate", "method", "hit_rate_low", "hit_rate_high",
            "memory_bytes", "fleet_memory_bytes", "capacity_bytes", "reached"}
    for row in doc["sizing"]:
        if row["reached"]:
            assert keys <= set(row), row
            assert row["fleet_memory_bytes"] == row["memory_bytes"] * row["pods"]
    for target in (0.45, 0.55):
        (best,) = [b for b in doc["best"] if b["target"] == target]
        reached = [r for r in doc["sizing"] if r["target"] == target and r["reached"]]
        assert best["fleet_memory_bytes"] == min(r["fleet_memory_bytes"] for r in reached)
    unreachable = [r for r in doc["sizing"] if r["route"] == "random" and r["target"] == 0.55]
    assert unreachable and not unreachable[0]["reached"] and unreachable[0]["hit_rate"] < 0.55


def test_the_summary_and_the_report_give_the_cheapest_first(sample_parquet, tmp):
    report = tmp / "r.html"
    proc = subprocess.run([sys.executable, "simulate.py", sample_parquet, "--curve", "lru", "--target", "45%",
                           "--pods", "1,4", "--route", "entity,random", "--report", str(report)],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout[proc.stdout.index("for 45% "):]
    assert re.search(r"^LRU x4 entity +[0-9,]+ entries +[0-9.]+% +(confirmed|exact) ", table, re.M)
    assert re.search(r"^LRU x4 random +(out of reach|[0-9,]+ entries)", table, re.M)
    assert "cheapest for 45%: " in table and "budget/pod" in table
    page = report.read_text()
    box = page[page.index('id="answer"'):]
    assert box.index("Cheapest for 45%") < box.index("LRU for 45%")


def test_an_answer_from_a_pipe_says_it_is_the_curves_not_confirmed():
    with open(SAMPLE, "rb") as capture:
        proc = subprocess.run([sys.executable, "simulate.py", "-", "--port", "16380", "--curve", "lru", "--target",
                               "50%", "--json"], cwd=REPO, stdin=capture, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["sizing"]
    assert row["method"] == "exact" and row["reached"] and "memory_bytes" not in row


def test_every_plotted_line_carries_the_data_its_label_names(sized):
    fig = sized.plot()
    ax = fig.axes[0]
    curves = sized.curves
    single = curves[(curves["policy"] == "lru") & curves["route"].isna()]
    lines = {line.get_label(): line for line in ax.get_lines()}
    saved = lines["LRU: round trips saved"]
    assert np.allclose(saved.get_ydata(), single["round_trips_saved_rate"] * 100)
    assert not np.allclose(saved.get_ydata(), single["command_hit_rate"] * 100)
    sharded = lines["LRU x4 entity (exact)"]
    fleet = curves[(curves["policy"] == "lru") & (curves["route"] == "entity")]
    assert np.allclose(sharded.get_ydata(), fleet["hit_rate"] * 100) and sharded.get_linestyle() == "-"
    assert lines["LRU x4 random (exact)"].get_linestyle() == "--"
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # lays the figure out as it is saved
    renderer = canvas.get_renderer()
    texts = [t for t in ax.texts if " for " in t.get_text()]
    from matplotlib.text import Text

    boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the words, not their leader lines
    assert len(texts) == len([r for r in sized.to_json()["sizing"] if r["reached"]])
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), "answer labels overlap"


def test_what_a_curve_cannot_model_is_sized_by_full_runs_alone(sample_parquet):
    """LRU's stack cannot model a TTL; with a target, full runs alone find the answer, as one cache and as a
    sharded fleet."""
    result = cachescope.simulate_trace(sample_parquet, curve="lru", target="40%", ttl="60s", pods="1,4",
                                       route="entity")
    assert result.curves.empty and result.confirming_passes >= 2
    for row in result.to_json()["sizing"]:
        assert row["reached"] and row["method"] in ("exact", "confirmed") and "estimate_method" not in row
        pods = None if row["route"] is None else row["pods"]
        rates = [cachescope.simulate_trace(sample_parquet, lru=[c], ttl="60s", pods=pods,
                                           route=row["route"] or "random").summary["hit_rate"][0]
                 for c in (row["capacity"], int(row["capacity"] * 0.98))]
        assert rates[0] == pytest.approx(row["hit_rate"]) and rates[0] >= 0.4 > rates[1], row


def test_a_fleet_timeline_is_one_panel_per_cache_with_its_routes_overlaid(sample_parquet):
    result = cachescope.simulate_trace(sample_parquet, lru=[1000, 3000, 10000], pods="2,4", route="entity,random")
    fig = result.plot()
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert [ax.get_title() for ax in panels] == ["LRU 1k per pod", "LRU 3k per pod", "LRU 10k per pod"]
    colors = {}
    for ax in panels:
        fleets = {line.get_label().split(":")[0]: line for line in ax.get_lines() if line.get_label()[0] == "x"}
        assert set(fleets) == {"x2 entity", "x2 random", "x4 entity", "x4 random"}
        for name, line in fleets.items():
            colors.setdefault(name, line.get_color())
            assert line.get_color() == colors[name], "one colour per fleet shape in every panel"
            assert line.get_linestyle() == ("-" if "entity" in name else "--")


def test_a_sampled_curve_brackets_fleets_too_and_the_runs_settle_them(sample_parquet):
    """`--sample` gives each fleet a SHARDS curve of its own (with its band); the confirmed answers agree with
    the exact curves' to the 1% the runs settle them to."""
    shapes = dict(pods="4", route="entity,round-robin", target="35%")
    sampled = cachescope.simulate_trace(sample_parquet, curve="lru", sample="10%", **shapes)
    exact = cachescope.simulate_trace(sample_parquet, curve="lru", **shapes)
    curves = sampled.to_json()["curves"]
    assert {(c["pods"], c["route"], c["method"]) for c in curves} == \
        {(1, None, "shards"), (4, "entity", "shards"), (4, "round-robin", "shards")}
    assert all("hit_rate_low" in p for c in curves for p in c["points"])
    want = {(r["pods"], r["route"]): r for r in exact.to_json()["sizing"]}
    for row in sampled.to_json()["sizing"]:
        assert row["estimate_method"] == "shards" and row["method"] in ("exact", "confirmed")
        assert row["estimate_hit_rate_low"] < row["estimate_hit_rate_high"]
        assert row["capacity"] == pytest.approx(want[(row["pods"], row["route"])]["capacity"], rel=0.011)


def test_a_round_too_large_for_memory_is_read_in_several_passes_with_the_same_answers(sample_parquet, monkeypatch):
    from cachescope.simulate import answers

    whole = cachescope.simulate_trace(sample_parquet, curve="lru,wtinylfu", target="45%", pods="4", route="entity")
    reads = []
    share_out = answers.memory_shares

    def counted(asks):
        shares = share_out(asks)
        reads.append(len(shares))
        return shares

    monkeypatch.setattr(answers, "MAX_ENTRIES_A_PASS", 20_000)
    monkeypatch.setattr(answers, "memory_shares", counted)
    cut = cachescope.simulate_trace(sample_parquet, curve="lru,wtinylfu", target="45%", pods="4", route="entity")
    assert max(reads) > 1, "the bound must cut a round here"
    key = ["policy", "pods", "route", "capacity", "hit_rate", "memory_bytes", "capacity_bytes"]
    assert [{k: r.get(k) for k in key} for r in cut.to_json()["sizing"]] == \
        [{k: r.get(k) for k in key} for r in whole.to_json()["sizing"]]
