"""The cache traces the field benchmarks on, read as they are: libCacheSim's oracleGeneral (plain and .zst)
and CSV traces with a column spec (libCacheSim's `-t csv` params; Twitter's layout as a preset). The hits
must equal libcachesim's on the same file, at several capacities, for several policies."""

import json
import subprocess

import libcachesim
import numpy as np
import pytest

from conftest import run_cli
from test_bad_input import assert_one_line_error

# Our registry name -> libCacheSim's class (tests/test_policies_vs_libcachesim.py and
# tests/test_adaptive_vs_libcachesim.py show each is exact).
POLICIES = {"lru": "LRU", "fifo": "FIFO", "clock": "Clock", "sieve": "Sieve", "arc": "ARC", "s3fifo": "S3FIFO"}


def zipf(seed, n=30_000, alpha=1.1, universe=5_000):
    rng = np.random.default_rng(seed)
    return (rng.zipf(alpha, n) % universe + 1).astype(np.uint64), rng


def write_oracle_general(path, keys, sizes, t0=1_000):
    """libCacheSim's documented layout: u32 time, u64 id, u32 size, i64 next access (-1: none)."""
    rec = np.zeros(len(keys), dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["t"] = t0 + np.arange(len(keys), dtype=np.uint32) // 10
    rec["id"], rec["size"], rec["next"] = keys, sizes, -1
    rec.tofile(path)
    return path


def libcachesim_hits(path, trace_type, policy, capacity, params=None):
    reader = libcachesim.TraceReader(str(path), trace_type, reader_init_params=params)
    cache = getattr(libcachesim, POLICIES[policy])(cache_size=capacity, hashpower=16)
    hits = n = 0
    for req in reader:
        n += 1
        hits += cache.get(req)
    return hits, n


def ours(path, *flags):
    out = run_cli("simulate.py", path, *flags, "--json", "--no-progress", check_rc=0)
    doc = json.loads(out.stdout)
    return {(r["policy"], r["capacity"]): r["hits"] for r in doc["results"] if r["policy"] in POLICIES}, doc


def policy_flags(capacities):
    caps = ",".join(map(str, capacities))
    return [arg for p in POLICIES for arg in (f"--{p}", caps)]


@pytest.mark.parametrize("compressed", [False, True])
def test_oracle_general_hits_equal_libcachesim(tmp_path, compressed):
    keys, rng = zipf(1)
    path = write_oracle_general(tmp_path / "t.oracleGeneral.bin", keys, 1)
    if compressed:
        subprocess.run(["zstd", "-q", "--rm", str(path)], check=True)
        path = tmp_path / "t.oracleGeneral.bin.zst"
    capacities = [20, 300, 2_000]
    got, doc = ours(path, *policy_flags(capacities))
    assert doc["trace"]["format"] == "oracleGeneral" and doc["trace"]["lookups"] == len(keys)
    for (policy, cap), hits in got.items():
        want, n = libcachesim_hits(path, libcachesim.TraceType.ORACLE_GENERAL_TRACE, policy, cap)
        assert (policy, cap, hits) == (policy, cap, want) and n == len(keys)
    assert len({hits for (p, c), hits in got.items() if c == 300}) >= 4, "the policies really differ here"


def test_oracle_general_sizes_give_byte_capacities_as_libcachesim(tmp_path):
    keys, rng = zipf(2)
    sizes = (rng.integers(1, 200, 5_001))[keys.astype(np.int64)].astype(np.uint32)  # one size per object
    path = write_oracle_general(tmp_path / "sized.oracleGeneral", keys, sizes)
    got, _ = ours(path, "--lru", "20kB,100kB", "--fifo", "20kB,100kB", "--entry-overhead", "0")
    for (policy, cap), hits in got.items():
        assert hits == libcachesim_hits(path, libcachesim.TraceType.ORACLE_GENERAL_TRACE, policy, cap)[0], policy


def test_oracle_general_has_the_clock_of_its_time_field(tmp_path):
    keys, _ = zipf(3, n=6_000)
    path = write_oracle_general(tmp_path / "t.oracleGeneral", keys, 1)
    _, doc = ours(path, "--lru", "100", "--ttl", "5s")
    _, plain = ours(path, "--lru", "100")
    (ttl_run,) = [r for r in doc["results"] if r["policy"] == "lru"]
    assert ttl_run["expirations"] > 0 and ttl_run["hits"] < [r for r in plain["results"] if r["policy"] == "lru"][0]["hits"]


def test_the_same_ids_as_keys_text_give_the_same_answer(tmp_path):
    keys, _ = zipf(4)
    (tmp_path / "t.keys").write_text("\n".join(map(str, keys.tolist())) + "\n")
    write_oracle_general(tmp_path / "t.oracleGeneral", keys, 1)
    flags = ["--lru", "100,1000", "--wtinylfu", "1000"]
    a, b = ours(tmp_path / "t.keys", *flags)[1], ours(tmp_path / "t.oracleGeneral", *flags)[1]
    assert [r["hits"] for r in a["results"]] == [r["hits"] for r in b["results"]]


def test_a_cut_oracle_general_record_is_one_line_naming_the_byte(tmp_path):
    path = write_oracle_general(tmp_path / "t.oracleGeneral", np.arange(1, 11, dtype=np.uint64), 1)
    path.write_bytes(path.read_bytes()[:-5])
    proc = run_cli("simulate.py", path, "--lru", "10", "--no-progress")
    assert_one_line_error(proc, str(path), "byte 216: oracleGeneral record cut short (19 of 24 bytes)")


def csv_params(**fields):
    p = libcachesim.ReaderInitParam(has_header=fields.pop("has_header", False), has_header_set=True,
                                    delimiter=fields.pop("delimiter", ","),
                                    obj_id_is_num=fields.pop("obj_id_is_num", True), obj_id_is_num_set=True)
    for name, col in fields.items():
        setattr(p, name, col)
    return p


def test_a_csv_trace_with_a_column_spec_equals_libcachesim(tmp_path):
    keys, rng = zipf(5)
    path = tmp_path / "t.csv"
    lines = ["time,size,id"] + [f"{1_000 + i // 7},{1 + int(k) % 97},{k}" for i, k in enumerate(keys.tolist())]
    path.write_text("\n".join(lines) + "\n")
    spec = "time-col=1,obj-size-col=2,obj-id-col=3,delimiter=,,has-header=true,obj-id-is-num=true"
    capacities = [30, 500]
    params = csv_params(has_header=True, time_field=1, obj_size_field=2, obj_id_field=3)
    # libCacheSim's capacity counts the bytes of the sizes: entry capacities compare on a trace of unit
    # sizes, then byte capacities on the sized one.
    unit = tmp_path / "unit.csv"
    unit.write_text("\n".join(["time,size,id"] + [f"{1_000 + i // 7},1,{k}" for i, k in enumerate(keys.tolist())]) + "\n")
    got, doc = ours(unit, "--csv-spec", spec, *policy_flags(capacities))
    assert doc["trace"]["lookups"] == len(keys)
    for (policy, cap), hits in got.items():
        assert hits == libcachesim_hits(unit, libcachesim.TraceType.CSV_TRACE, policy, cap, params)[0], (policy, cap)
    sized, _ = ours(path, "--csv-spec", spec, "--lru", "5kB", "--fifo", "5kB", "--entry-overhead", "0")
    for (policy, cap), hits in sized.items():
        assert hits == libcachesim_hits(path, libcachesim.TraceType.CSV_TRACE, policy, cap, params)[0], policy


def test_twitter_layout_is_a_preset(tmp_path):
    """Twitter's cache traces: timestamp, anonymized key, key size, value size, client id, operation, TTL."""
    keys, rng = zipf(6, n=20_000)
    path = tmp_path / "cluster052.sort"
    rows = [f"{i // 50},k{k:x},12,{100 + int(k) % 50},7,get,0" for i, k in enumerate(keys.tolist())]
    path.write_text("\n".join(rows) + "\n")
    got, doc = ours(path, "--format", "twitter", *policy_flags([50, 800]))
    assert doc["trace"]["lookups"] == len(keys)
    # Entry capacities: libCacheSim counts every object as 1 with ignore_obj_size.
    params = csv_params(obj_id_is_num=False, time_field=1, obj_id_field=2, obj_size_field=4)
    params.ignore_obj_size = True
    for (policy, cap), hits in got.items():
        want = libcachesim_hits(path, libcachesim.TraceType.CSV_TRACE, policy, cap, params)[0]
        assert hits == want, (policy, cap)


def test_twitter_writes_and_deletes_are_events(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("0,a,1,10,1,get,0\n1,a,1,10,1,set,0\n2,a,1,10,1,get,0\n3,a,1,10,1,delete,0\n4,a,1,10,1,get,0\n")
    _, doc = ours(path, "--format", "twitter", "--lru", "10", "--writes", "invalidate")
    assert (doc["trace"]["lookups"], doc["trace"]["writes"], doc["trace"]["deletes"]) == (3, 1, 1)
    (run,) = [r for r in doc["results"] if r["policy"] == "lru"]
    assert run["hits"] == 0  # the set and the delete each took the entry away


def test_a_csv_without_a_spec_and_a_bad_line_are_one_line_errors(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("1,a\n2,b\nthree,c\n")
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10"), "--csv-spec")
    proc = run_cli("simulate.py", path, "--lru", "10", "--csv-spec", "time-col=1,obj-id-col=2,has-header=false")
    assert_one_line_error(proc, f"{path}: line 3: time \"three\" is not a number of seconds")


def test_requests_of_size_zero_are_left_out_as_libcachesim_does(tmp_path):
    keys, rng = zipf(7, n=10_000)
    sizes = np.where(rng.random(len(keys)) < 0.1, 0, 1).astype(np.uint32)
    path = write_oracle_general(tmp_path / "z.oracleGeneral", keys, sizes)
    got, doc = ours(path, *policy_flags([40, 400]))
    zeros = int((sizes == 0).sum())
    assert doc["trace"]["zero_size_requests"] == zeros > 0
    assert doc["trace"]["lookups"] == len(keys) - zeros
    for (policy, cap), hits in got.items():
        want, n = libcachesim_hits(path, libcachesim.TraceType.ORACLE_GENERAL_TRACE, policy, cap)
        assert (hits, doc["trace"]["lookups"]) == (want, n), (policy, cap)
    summary = run_cli("simulate.py", path, "--lru", "40", "--no-progress", check_rc=0).stdout
    assert f"{zeros:,} requests of size 0 left out" in summary
