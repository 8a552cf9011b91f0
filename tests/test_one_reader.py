"""One reader per format: parse.py and simulate.py accept and refuse the same MONITOR lines, with the same
message at the same line, and report what parsing a capture found in the same words."""

import re

import pandas as pd
import pytest

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
}


def _error(proc, prog):
    """The one error line, without the command's name and simulate.py's --format hint."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    return re.sub(r" \(read as monitor; --format overrides\)$", "", lines[0][len(f"{prog}: error: "):])


@pytest.mark.parametrize("name", BAD_LINES)
def test_a_bad_monitor_line_is_refused_alike_by_parse_and_simulate(tmp, name):
    line, words = BAD_LINES[name]
    path = tmp / "m.monitor"
    path.write_bytes((GOOD + line + "\n").encode("utf-8"))
    parsed = _error(run_cli("parse.py", path, "-o", tmp / "o.parquet"), "parse.py")
    simulated = _error(run_cli("simulate.py", path, "--lru", "10", "--format", "monitor"), "simulate.py")
    assert parsed == simulated
    assert parsed.startswith(f"{path}: line 2: ") and words in parsed, parsed


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
