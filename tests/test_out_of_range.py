"""Numbers and times out of range, conflicting flags and undecodable side files: one line naming what is
wrong, exit status 2, never a traceback, never a silently wrapped time."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from test_bad_input import assert_one_line_error

LINE = '1700000000.{:06d} [0 1.2.3.4:5] "HMGET" "st_1" "11"\n'


@pytest.fixture
def trace(tmp):
    path = tmp / "t.monitor"
    path.write_text("".join(LINE.format(i) for i in range(3)))
    return path


@pytest.mark.parametrize("flags,needle", [
    (["--window", "100000000000000000000000"], "window"),
    (["--ttl", "99999999999999999999d"], "too long"),
    (["--restart-every", "99999999999999999999d"], "too long"),
    (["--restart-every", "1ns"], "shorter than a second"),
    (["--restart-at", "99999999999"], "2262"),
    (["--restart-at", "1000-01-01"], "1677"),
    (["--restart-at", "9999-12-31T00:00:00"], "2262"),
    (["--plot", "hits.xyz"], "hits.xyz"),
    (["--invalidate-on-write", "--update-on-write"], "not allowed with"),
    (["--writes", "update", "--invalidate-on-write"], "not allowed with"),
])
def test_simulate_refuses(trace, flags, needle):
    assert_one_line_error(run_cli("simulate.py", trace, "--lru", "10", *flags), needle)


def test_unknown_plot_extension_is_refused_before_the_simulation(tmp, trace):
    proc = run_cli("simulate.py", trace, "--lru", "10", "--plot", tmp / "p.xyz", "--timeline", tmp / "t.csv")
    assert_one_line_error(proc, "p.xyz")
    assert not (tmp / "t.csv").exists()


def test_refresh_schedule_times_and_bytes(tmp, trace):
    late = tmp / "late.csv"
    late.write_text("feature,time\n11,1700000000\n11,99999999999\n")
    assert_one_line_error(run_cli("simulate.py", trace, "--lru", "10", "--refresh-schedule", late),
                          str(late), "line 3", "2262")
    latin = tmp / "latin.csv"
    latin.write_bytes(b"feature,time\ncaf\xe9,1700000000\n")
    assert_one_line_error(run_cli("simulate.py", trace, "--lru", "10", "--refresh-schedule", latin),
                          str(latin), "UTF-8")
    nul = tmp / "nul.csv"
    nul.write_bytes(b"feature,time\n11,17\x0000\n")
    assert_one_line_error(run_cli("simulate.py", trace, "--lru", "10", "--refresh-schedule", nul), str(nul))


def test_monitor_times_past_2262(tmp):
    path = tmp / "late.monitor"
    path.write_text(LINE.format(1) + '99999999999.000001 [0 1.2.3.4:5] "HMGET" "st_1" "11"\n')
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10"), str(path), "line 2", "2262")
    assert_one_line_error(run_cli("parse.py", path, "-o", tmp / "o.parquet"), str(path), "line 2", "2262")
    assert not (tmp / "o.parquet").exists()


def test_parquet_req_of_strings(tmp):
    path = tmp / "t.parquet"
    pq.write_table(pa.table({"op": ["read", "read"], "key": ["a", "b"], "req": ["x", "y"]}), path)
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10"), str(path), "req")


def test_corrupt_parquet_pages(tmp):
    path = tmp / "t.parquet"
    pq.write_table(pa.table({"op": ["read"] * 5000, "key": [f"key{i}" for i in range(5000)]}), path,
                   compression="zstd")
    data = bytearray(path.read_bytes())
    for i in range(200, 2000):  # the column chunks' pages, not the footer
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10"), str(path))


def test_timeline_windows_are_bounded(tmp, monkeypatch):
    path = tmp / "k.keys"
    path.write_text("".join(f"k{i % 50}\n" for i in range(300_000)))
    proc = run_cli("-c", "import sys, runpy; import cachescope.simulate.engine as e; e.MAX_WINDOWS = 1000; "
                         "sys.argv = ['simulate.py', *sys.argv[1:]]; runpy.run_path('simulate.py', run_name='__main__')",
                   path, "--lru", "10", "--window", "1")
    assert_one_line_error(proc, str(path), "--window", "1,000 timeline points")


def test_restarts_in_a_long_gap_do_not_hang(tmp):
    """Two lookups 30 days apart under --restart-every 1s: 2.6 M restarts of an empty cache took minutes and
    gigabytes; they are one restart now."""
    import json
    import subprocess
    import sys

    from conftest import REPO

    path = tmp / "gap.monitor"
    path.write_text('1700000000.1 [0 1.2.3.4:5] "GET" "a"\n1702592000.1 [0 1.2.3.4:5] "GET" "a"\n')
    proc = subprocess.run([sys.executable, "simulate.py", path, "--lru", "10", "--restart-every", "1s", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["restarts"] == 1


def test_a_parquet_error_names_the_files_row_after_dropped_rows(tmp):
    """Rows that are no events (a command that is no lookup, write or delete, here `exists`) are dropped
    before the columns are read: a bad value after them is still named by its row in the file."""
    path = tmp / "t.parquet"
    pq.write_table(pa.table({"op": ["exists", "exists", "read", "read"], "key": ["a", "b", "c", "d"],
                             "value_size": [1, 1, 1, -5]}), path)
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10"), str(path), "row 3:", "value_size -5")


@pytest.mark.parametrize("column,needle", [("ts_ns", "2262"), ("value_size", "value_size 9223372036854775813")])
def test_parquet_unsigned_values_past_int64_are_refused_not_wrapped(tmp, column, needle):
    """A uint64 past 2^63 read as a signed number would wrap to a negative time or size."""
    path = tmp / "t.parquet"
    values = pa.array([1, 2**63 + 5], pa.uint64())
    pq.write_table(pa.table({"op": ["read", "read"], "key": ["a", "b"], column: values}), path)
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10"), str(path), needle)
