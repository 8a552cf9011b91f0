"""One reader per format: parse.py, simulate.py and the Python API accept and refuse the same lines of every
text format (MONITOR, commands, keys), with the same message at the same line, make the same lookups,
writes and deletes of them, and report what reading an input (a capture or a text trace) found in the same
words."""

import json
import re

import pandas as pd
import pytest

import cachescope
from conftest import REPO, run_cli

CAPTURE = REPO / "tests" / "data" / "captures" / "tcpdump_lo.pcap"
PORT = "45885"
GOOD = '1700000000.000001 [0 1.2.3.4:5] "GET" "a"\n'

# A bad line, after a good one: what both commands must refuse it with.
BAD_LINES = {
    "quote_then_text": ('1700000000.000002 [0 1.2.3.4:5] "HMGET "st_1" "1', "closing quote must be followed by a space"),
    "unterminated": ('1700000000.000002 [0 1.2.3.4:5] "GET" "a', "unterminated quoted argument"),
    "trailing_backslash": ('1700000000.000002 [0 1.2.3.4:5] "GET" "a\\', "unterminated quoted argument"),
    "short_hex": ('1700000000.000002 [0 1.2.3.4:5] "GET" "\\x4"', "bad \\x escape"),
    "no_bracket": ('1700000000.000002 0 1.2.3.4:5 "GET" "a"', "not a MONITOR line"),
    "unclosed_bracket": ('1700000000.000002 [0 1.2.3.4:5 "GET" "a"', "not a MONITOR line"),
    "no_time": ('[0 1.2.3.4:5] "GET" "a"', "not a MONITOR line"),
    "bad_time": ('17000x0000.2 [0 1.2.3.4:5] "GET" "a"', "not a MONITOR line"),
    "time_too_late": ('99999999999.000001 [0 1.2.3.4:5] "GET" "a"', "past 2262-04-11"),
    "no_command": ("1700000000.000002 [0 1.2.3.4:5]", "monitor line without a command"),
    "unknown_command": ('1700000000.000002 [0 1.2.3.4:5] "FROBNICATE" "a"', "unknown command"),
    "too_few_args": ('1700000000.000002 [0 1.2.3.4:5] "HMGET" "st_1"', "HMGET needs at least 2 arguments"),
    "plain_command": ("GET b", "not a MONITOR line"),
    "nul": ('1700000000.000002 [0 1.2.3.4:5] "GET" "a\x00"', "binary data"),
    "too_many_args": ('1700000000.000002 [0 1.2.3.4:5] "GET" "a" "b"', "GET takes at most 1 argument, got 2"),
    "odd_pairs": ('1700000000.000002 [0 1.2.3.4:5] "HSET" "h" "f" "v" "g"', "expected a key then field value pairs"),
}

# The same for the `commands` format (after the good line `GET a`), and for `keys` (after `a`).
BAD_COMMAND_LINES = {
    "quote_then_text": ('HMGET "st_1"x 1', "closing quote must be followed by a space"),
    "unterminated": ('GET "a', "unterminated quoted argument"),
    "short_hex": ('GET "\\x4"', "bad \\x escape"),
    "unknown_command": ("FROBNICATE a", "unknown command"),
    "too_few_args": ("HMGET st_1", "HMGET needs at least 2 arguments"),
    "too_many_args": ("GET a b", "GET takes at most 1 argument, got 2"),
    "odd_pairs": ("MSET a 1 b", "expected key value pairs"),
    "monitor_line": ('1700000000.000002 [0 1.2.3.4:5] "GET" "a"', "unknown command"),
    "nul": ("GET a\x00", "binary data"),
}
BAD_KEY_LINES = {"nul": ("b\x00c", "binary data")}
GOOD_LINE = {"monitor": GOOD, "commands": "GET a\n", "keys": "a\n"}
BAD = {"monitor": BAD_LINES, "commands": BAD_COMMAND_LINES, "keys": BAD_KEY_LINES}
CASES = [(fmt, name) for fmt, cases in BAD.items() for name in cases]


def _error(proc, prog):
    """The one error line, without the command's name and simulate.py's --format hint."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    return re.sub(r" \(read as \w+; --format overrides\)$", "", lines[0][len(f"{prog}: error: "):])


@pytest.mark.parametrize("fmt,name", CASES)
def test_a_bad_line_of_any_text_format_is_refused_alike_by_parse_and_simulate(tmp, fmt, name):
    line, words = BAD[fmt][name]
    path = tmp / f"t.{fmt}"
    path.write_bytes((GOOD_LINE[fmt] + line + "\n").encode("utf-8"))
    parsed = _error(run_cli("parse.py", path, "-o", tmp / "o.parquet"), "parse.py")
    simulated = _error(run_cli("simulate.py", path, "--lru", "10"), "simulate.py")
    assert parsed == simulated
    assert parsed.startswith(f"{path}: line 2: ") and words in parsed, parsed
    with pytest.raises(cachescope.TraceFormatError) as api:
        cachescope.parse_capture(str(path))
    assert str(api.value) == parsed


@pytest.mark.parametrize("fmt", list(BAD))
def test_a_text_trace_without_commands_is_refused_alike(tmp, fmt):
    path = tmp / f"t.{fmt}"
    path.write_text("\n \n")
    parsed = _error(run_cli("parse.py", path, "-o", tmp / "o.parquet"), "parse.py")
    simulated = _error(run_cli("simulate.py", path, "--lru", "10"), "simulate.py")
    assert parsed == simulated == f"{path}: empty trace: no commands"


# Commands parse.py's own MONITOR table once counted as "other" while simulate.py counted them as writes
# (INCR, SETNX, GETDEL, HINCRBY, PERSIST), and every kind of key a command can carry.
MIXED_LOG = """OK
1700000000.000001 [0 1.2.3.4:5] "INCR" "a"
1700000000.000002 [0 1.2.3.4:6] "SETNX" "b" "xyz"
1700000000.000003 [1 1.2.3.4:5] "GETDEL" "c"
1700000000.000004 [0 lua] "HINCRBY" "h" "f" "1"
1700000000.000005 [0 1.2.3.4:5] "PERSIST" "a"
1700000000.000006 [0 1.2.3.4:5] "MGET" "a" "b" "c"
1700000000.000007 [0 1.2.3.4:5] "HMGET" "h" "f" "g"
1700000000.000008 [0 1.2.3.4:5] "HSET" "h" "f" "1" "g" "22"
1700000000.000009 [0 1.2.3.4:5] "MSET" "a" "1" "b" "2"
1700000000.000010 [0 1.2.3.4:5] "DEL" "a" "b"
1700000000.000011 [0 1.2.3.4:5] "HDEL" "h" "f"
1700000000.000012 [0 1.2.3.4:5] "SETEX" "a" "10" "vv"
1700000000.000013 [0 1.2.3.4:5] "EXPIRE" "b" "10" "NX"
1700000000.000014 [0 1.2.3.4:5] "HGETALL" "h"
1700000000.000015 [0 1.2.3.4:5] "GET" "a"
1700000000.000016 [0 1.2.3.4:5] "PING"
1700000000.000017 [0 1.2.3.4:5] "SELECT" "1"
1700000000.000018 [0 1.2.3.4:5] "EXISTS" "a"
"""
EXPECTED_OPS = {"read": 7, "write": 10, "delete": 4}


def test_one_monitor_log_gives_the_same_lookups_and_writes_to_every_reader(tmp):
    log = tmp / "m.monitor"
    log.write_text(MIXED_LOG)
    run_cli("parse.py", log, "-o", tmp / "o.parquet", check_rc=0)
    rows = pd.read_parquet(tmp / "o.parquet")
    assert rows["op"].astype(str).value_counts().to_dict() == EXPECTED_OPS
    assert rows.groupby("cmd", observed=True).size().to_dict()["INCR"] == 1
    api = cachescope.parse_capture(str(log))
    assert api.drop(columns=["op", "cmd", "client", "server", "error"]).equals(
        rows.drop(columns=["op", "cmd", "client", "server", "error"]))
    runs = {}
    for source in (log, tmp / "o.parquet"):
        out = json.loads(run_cli("simulate.py", source, "--lru", "2", "--writes", "invalidate", "--json",
                                 check_rc=0).stdout)
        runs[source.suffix] = out
        trace = out["trace"]
        assert (trace["lookups"], trace["writes"], trace["deletes"]) == tuple(EXPECTED_OPS.values())
    assert runs[".monitor"]["results"] == runs[".parquet"]["results"]
    assert runs[".monitor"]["trace"]["other_commands"] == 3


def _report(stderr: str, skip: str) -> list[str]:
    lines = stderr.splitlines()
    return [lines[0]] + [l for l in lines[1:] if l.startswith("  ") and skip not in l]


@pytest.mark.parametrize("fmt,text", [("monitor", MIXED_LOG), ("commands", "GET a\nPING\nHSET h f v\nPING\n"),
                                      ("keys", "a\nb\n")])
def test_simulate_reports_a_text_trace_as_parse_does(tmp, fmt, text):
    path = tmp / f"t.{fmt}"
    path.write_text(text)
    parsed = run_cli("parse.py", path, "-o", tmp / "o.parquet", check_rc=0)
    simulated = run_cli("simulate.py", path, "--lru", "10", check_rc=0)
    report = _report(parsed.stderr, "rows in")
    assert report[0].startswith(f"{path}: {fmt} trace, {len(text.splitlines())} lines")
    assert fmt == "keys" or any(l.startswith("  other commands: ") and "PING " in l for l in report), report
    for line in report:
        assert line in simulated.stderr.splitlines(), (line, simulated.stderr)


def test_monitor_lines_both_accept_give_the_same_keys(tmp):
    path = tmp / "m.monitor"
    path.write_text('OK\n1700000000.000001 [0 1.2.3.4:5] "GET" "a b"\n'
                    '1700000000.000002 [0 1.2.3.4:6] GET "\\x41\\n" \n'
                    '1700000000.000003 [0 1.2.3.4:5] "HMGET" st_1 "f\\"1"\n')
    run_cli("parse.py", path, "-o", tmp / "o.parquet", check_rc=0)
    df = pd.read_parquet(tmp / "o.parquet")
    assert df["key"].tolist() == ["a b", "A\n", "st_1"] and df["field"].tolist()[2] == 'f"1'
    run_cli("simulate.py", path, "--lru", "10", check_rc=0)


def test_simulate_reports_a_cut_capture_as_parse_does(tmp):
    cut = tmp / "cut.pcap"
    cut.write_bytes(CAPTURE.read_bytes()[:-7])  # tcpdump killed mid-write
    parsed = run_cli("parse.py", cut, "-o", tmp / "o.parquet", "--port", PORT, check_rc=0)
    simulated = run_cli("simulate.py", cut, "--lru", "10", "--port", PORT, check_rc=0)
    report = [l for l in parsed.stderr.splitlines() if l.startswith("  ") and "rows in" not in l]
    assert any("cut record" in l for l in report)
    for line in [parsed.stderr.splitlines()[0]] + report:
        assert line in simulated.stderr.splitlines(), (line, simulated.stderr)


def test_a_written_value_s_size_is_its_bytes_not_its_text(tmp):
    path = tmp / "m.monitor"
    path.write_text('1700000000.000001 [0 1.2.3.4:5] "SET" "k" "\\xe9\\x00z"\n'
                    '1700000000.000002 [0 1.2.3.4:5] "HSET" "h" "f" "\\xc3\\xa9"\n')
    run_cli("parse.py", path, "-o", tmp / "o.parquet", check_rc=0)
    assert pd.read_parquet(tmp / "o.parquet")["value_size"].tolist() == [3, 2]


def test_belady_with_an_allow_list_reads_a_keys_trace(tmp):
    """A keys trace's batches carry no `fields` (no lookup has a field): Belady's pass over the future used
    to ask for them. With an allow-list of features, no plain key is cacheable, for Belady as for LRU."""
    path = tmp / "t.keys"
    path.write_text("a\nb\na\na\nb\n")
    result = cachescope.simulate_trace(str(path), belady=[2], lru=[2], allow_list=["f1"])
    assert result.summary["hits"].tolist() == [0, 0]
    unrestricted = cachescope.simulate_trace(str(path), belady=[2], lru=[2])
    assert unrestricted.summary["hits"].tolist() == [3, 3]


def test_simulate_reports_each_merged_input_as_parse_does(tmp):
    """Several traces merged in time: each input reported in its own words, not one made-up capture line."""
    paths = []
    for k in range(2):
        path = tmp / f"h{k}.monitor"
        path.write_text(f'1700000000.00000{k} [0 10.0.0.{k}:5] "GET" "a"\n1700000001.0 [0 10.0.0.{k}:5] "PING"\n')
        paths.append(path)
    simulated = run_cli("simulate.py", *paths, "--lru", "10", check_rc=0).stderr.splitlines()
    assert not any("packets" in l for l in simulated), simulated
    for path in paths:
        parsed = run_cli("parse.py", path, "-o", tmp / "o.parquet", check_rc=0)
        for line in _report(parsed.stderr, "rows in"):
            assert line in simulated, (line, simulated)
