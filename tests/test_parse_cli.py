"""parse.py on real captures: every output format reads back as the same trace, counters on stderr and in
JSON, captures straight into simulate.py, and bad input as one clear line."""

import json

import pandas as pd
import pytest

import cachescope
from conftest import REPO, run_cli

CAPTURE = REPO / "tests" / "data" / "captures" / "tcpdump_lo.pcap"
PORT = "45885"  # the port of the redis-server that tcpdump_lo.pcap was recorded from


def test_parquet_output_and_counters(tmp):
    out, stats = tmp / "t.parquet", tmp / "stats.json"
    proc = run_cli("parse.py", CAPTURE, "-o", out, "--port", PORT, "--stats-json", stats, check_rc=0)
    df = pd.read_parquet(out)
    assert list(df.columns) == ["ts_ns", "conn", "req", "op", "cmd", "key", "field", "value_size", "found",
                                "latency_ns", "client", "server", "error", "batch"]
    assert df["cmd"].astype(str).tolist() == ["HSET", "HSET", "HMGET", "HMGET", "HMGET", "HMGET"]
    assert df["found"].tolist()[2:] == [True, True, True, False]
    counters = json.loads(stats.read_text())
    assert counters["packets"] == 16 and counters["connections"] == 1 and counters["rows"] == 6
    assert "16 packets" in proc.stderr and "6 rows" in proc.stderr


def test_parquet_keys_and_fields_keep_their_dictionaries_times_are_plain(tmp):
    """The trace reader hashes each distinct key and field of a row group once, through their dictionaries;
    times, command indexes and latencies, nearly all distinct, are written plain (writers.py's `_PLAIN`)."""
    import pyarrow.parquet as pq

    out = tmp / "t.parquet"
    run_cli("parse.py", CAPTURE, "-o", out, "--port", PORT, check_rc=0)
    group = pq.ParquetFile(out).metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)}
    for name in ("key", "field", "cmd", "op"):
        assert "RLE_DICTIONARY" in encodings[name], (name, encodings[name])
    for name in ("ts_ns", "req", "latency_ns"):
        assert "RLE_DICTIONARY" not in encodings[name] and "PLAIN" in encodings[name], (name, encodings[name])


@pytest.mark.parametrize("suffix", [".txt", ".monitor", ".parquet"])
def test_every_output_simulates_the_same(tmp, suffix):
    out = tmp / f"t{suffix}"
    run_cli("parse.py", CAPTURE, "-o", out, "--port", PORT, check_rc=0)
    direct = run_cli("simulate.py", CAPTURE, "--port", PORT, "--lru", "1,2,10", "--json", check_rc=0)
    via = run_cli("simulate.py", out, "--lru", "1,2,10", "--json", check_rc=0)
    assert [r["hits"] for r in json.loads(via.stdout)["results"]] == [r["hits"] for r in json.loads(direct.stdout)["results"]]
    assert json.loads(direct.stdout)["trace"]["format"] == "pcap"


def test_oracle_general_export_runs_in_libcachesim(tmp):
    import libcachesim

    out = tmp / "t.oracleGeneral"
    run_cli("parse.py", CAPTURE, "-o", out, "--port", PORT, check_rc=0)
    assert out.stat().st_size == 24 * 4  # four reads
    reader = libcachesim.TraceReader(str(out), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
    miss_ratio, _ = libcachesim.LRU(cache_size=10).process_trace(reader)
    assert round((1 - miss_ratio) * 4) == 1


def test_anonymize_hides_keys_consistently(tmp):
    out = tmp / "t.parquet"
    run_cli("parse.py", CAPTURE, "-o", out, "--port", PORT, "--anonymize", check_rc=0)
    keys = pd.read_parquet(out)["key"]
    assert "st_12345" not in set(keys) and keys.nunique() == 1 and len(keys.iloc[0]) == 16


def test_monitor_log_input(tmp):
    log = tmp / "m.log"
    log.write_text('OK\n1700000000.000001 [0 10.0.0.1:5000] "HSET" "st_1" "11" "abc"\n'
                   '1700000000.000002 [0 10.0.0.2:5001] "HMGET" "st_1" "11" "22"\n'
                   '1700000000.000003 [0 10.0.0.1:5000] "PING"\n')
    out = tmp / "t.parquet"
    proc = run_cli("parse.py", log, "-o", out, check_rc=0)
    df = pd.read_parquet(out)
    assert df["op"].astype(str).tolist() == ["write", "read", "read"]
    assert df["value_size"].tolist()[0] == 3 and df["conn"].tolist() == [0, 1, 1]
    assert "PING 1" in proc.stderr


def test_parse_capture_api_matches_the_cli(tmp):
    df = cachescope.parse_capture(str(CAPTURE), ports=(int(PORT),))
    out = tmp / "t.parquet"
    run_cli("parse.py", CAPTURE, "-o", out, "--port", PORT, check_rc=0)
    assert df.drop(columns=["op", "cmd", "client", "server"]).equals(
        pd.read_parquet(out).drop(columns=["op", "cmd", "client", "server"]))


def test_parse_py_imports_neither_pandas_nor_the_simulator(tmp):
    """Both would more than double parse.py's start-up (pandas alone: 0.2-0.4 s, also when pyarrow's
    `pa.array` pulls it in on first use); a trace with rows goes through every conversion."""
    probe = ("import runpy, sys; sys.argv = ['parse.py', *sys.argv[1:]]\n"
             "try:\n    runpy.run_path('parse.py', run_name='__main__')\nexcept SystemExit as e:\n"
             "    assert not e.code, e.code\n"
             "print(sorted(m for m in sys.modules if m == 'pandas' or m.startswith('cachescope.simulate')))")
    proc = run_cli("-c", probe, CAPTURE, "-o", tmp / "t.parquet", "--port", PORT, "--no-progress", check_rc=0)
    assert proc.stdout.strip() == "[]", proc.stdout
    assert "6 rows" in proc.stderr


def _one_line_error(proc, *needles):
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_bad_inputs(tmp):
    garbage = tmp / "g.pcap"
    garbage.write_bytes(bytes(range(256)) * 4)
    _one_line_error(run_cli("parse.py", garbage, "-o", tmp / "o.parquet"), str(garbage))
    _one_line_error(run_cli("parse.py", CAPTURE, "-o", tmp / "o.xyz"), "--format")
    _one_line_error(run_cli("parse.py", CAPTURE, "-o", tmp / "o.parquet", "--port", "99999"), "99999")
    cut = tmp / "cut.pcap"
    cut.write_bytes(CAPTURE.read_bytes()[:500])  # tcpdump killed mid-write: parse what is there
    proc = run_cli("parse.py", cut, "-o", tmp / "o.parquet", "--port", PORT, check_rc=0)
    assert "cut record" in proc.stderr
    none = run_cli("simulate.py", CAPTURE, "--lru", "10", "--port", "6379")  # port 6379 sees nothing here
    _one_line_error(none, "no Redis commands on port(s) 6379")


def test_a_failed_parse_leaves_no_output(tmp):
    """A capture corrupt in the middle: one line, exit 2, and no half-written trace, nor an earlier one lost."""
    data = bytearray(CAPTURE.read_bytes())
    offset = 24  # past the pcap file header; walk to the sixth record (little-endian, as tcpdump wrote it)
    for _ in range(5):
        offset += 16 + int.from_bytes(data[offset + 8:offset + 12], "little")
    data[offset + 8:offset + 12] = b"\xff" * 4  # its captured length now claims 4 GiB
    bad = tmp / "bad.pcap"
    bad.write_bytes(bytes(data))
    out = tmp / "t.parquet"
    out.write_bytes(b"an earlier trace")
    proc = run_cli("parse.py", bad, "-o", out, "--port", PORT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert out.read_bytes() == b"an earlier trace"
    assert sorted(p.name for p in tmp.iterdir()) == ["bad.pcap", "t.parquet"]
