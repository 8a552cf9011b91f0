"""Bad input gets one clear line on stderr naming the file (and line), exit status 2, never a traceback."""

import struct

import pytest

from conftest import run_cli


def assert_one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert proc.stdout == ""


def simulate(path, *extra):
    return run_cli("simulate.py", path, "--lru", "100", *extra)


CASES = {
    # name: (file content, what the error line must say)
    "binary": (bytes(range(256)) * 20, ["binary"]),
    "not_a_command": (b"HMGET st_1 1 2\nthis is not redis\n", ["line 2", "unknown command"]),
    "unknown_command": (b"GET a\nGET b\nFROBNICATE st_1 2\n", ["line 3", "FROBNICATE"]),
    "missing_args": (b"HMGET st_1 1\nHMGET st_2\n", ["line 2", "HMGET needs at least 2 arguments"]),
    "empty": (b"", ["empty trace"]),
    "blank_lines": (b"\n\n  \n", ["empty trace"]),
    "nul_later": (b"GET a\n" * 20_000 + b"GET \x00b\n", ["line 20001", "binary"]),
    "pcap": (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"\x00" * 40, ["no Redis commands"]),
    "fake_parquet": (b"PAR1 this is not really parquet", ["Parquet"]),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_trace_files(tmp, name):
    content, needles = CASES[name]
    path = tmp / f"{name}.txt"
    path.write_bytes(content)
    assert_one_line_error(simulate(path), str(path), *needles)


def test_bad_monitor_lines(tmp):
    path = tmp / "m.monitor"
    path.write_text('1700000000.1 [0 1.2.3.4:5] "GET" "a"\n1700000000.2 [0 1.2.3.4:5] "GET" "unterminated\n')
    assert_one_line_error(simulate(path), str(path), "line 2", "unterminated")
    path.write_text('1700000000.1 [0 1.2.3.4:5] "GET" "a"\nGET b\n')
    assert_one_line_error(simulate(path), "line 2", "not a MONITOR line")


def test_forced_format_that_does_not_fit(tmp):
    path = tmp / "t.txt"
    path.write_text("HMGET st_1 1 2\n")
    assert_one_line_error(simulate(path, "--format", "monitor"), "line 1", "--format")


def test_missing_file_and_directory(tmp):
    assert_one_line_error(simulate(tmp / "nope.txt"), "nope.txt", "no such file")
    assert_one_line_error(simulate(tmp), "is a directory")


def test_huge_line_is_refused_without_reading_it_whole(tmp):
    path = tmp / "big.txt"
    with open(path, "wb") as f:
        f.write(b"GET a\n")
        f.write(b"x" * (65 << 20))
    assert_one_line_error(simulate(path, "--format", "keys"), "line 2", "longer than")


@pytest.mark.parametrize("capacity,needle", [
    ("0", "at least 1"), ("-5", "not a number"), ("abc", "not a number"), ("1.5", "whole number"),
    ("1e30", "maximum"), ("64MiB", "need value sizes"), ("10,,20", "empty item"), ("5 parsecs", "not a number"),
])
def test_bad_capacities(tmp, capacity, needle):
    path = tmp / "t.txt"
    path.write_text("GET a\n")
    proc = run_cli("simulate.py", path, "--lru", capacity)
    assert_one_line_error(proc, needle)


def test_usage_errors(tmp):
    path = tmp / "t.txt"
    path.write_text("GET a\n")
    assert_one_line_error(run_cli("simulate.py", path), "no policy")
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10", "--window", "0"), "window")
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10", "--format", "xml"), "invalid choice")
    assert_one_line_error(run_cli("simulate.py"), "required")


def test_bad_feature_store_options(tmp):
    path = tmp / "t.monitor"
    path.write_text('1700000000.1 [0 1.2.3.4:5] "HMGET" "st_1" "11"\n')
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10", "--ttl", "soon"), "duration 'soon'")
    schedule = tmp / "s.csv"
    schedule.write_text("feature,time\n11,1700000000\n12,yesterday\n")
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10", "--refresh-schedule", schedule),
                          str(schedule), "line 3", "yesterday")
    plain = tmp / "t.txt"
    plain.write_text("HMGET st_1 11\n")
    assert_one_line_error(run_cli("simulate.py", plain, "--lru", "10", "--restart-every", "1h"), "timestamps")
    assert_one_line_error(run_cli("simulate.py", path, "--lru", "10", "--allow-list", tmp / "none.txt"),
                          "none.txt")


def test_parquet_without_a_key_column(tmp):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp / "t.parquet"
    pq.write_table(pa.table({"op": ["read"], "entity": ["st_1"]}), path)
    assert_one_line_error(simulate(path), str(path), "no 'key' column")
