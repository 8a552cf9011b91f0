"""The summary names the commands behind each error code, and what the known harmless ones are: every redis-py
connection to a Redis older than 7.2 gets `ERR` for the `CLIENT SETINFO` of its handshake, which used to read
as a bare `ERR 2` beside real failures."""

from __future__ import annotations

from conftest import run_cli
from crafted_capture import Conversation, answered_with_error, ethernet_pcap, get, other, timed

SETINFO_REFUSED = b"-ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def test_error_codes_name_their_commands_and_the_harmless_ones(tmp):
    conv = Conversation([
        [other("CLIENT", "SETINFO", "LIB-NAME", "redis-py", reply=SETINFO_REFUSED),
         other("CLIENT", "SETINFO", "LIB-VER", "5.0.1", reply=SETINFO_REFUSED)],
        [answered_with_error(get("h", b"x"), WRONGTYPE)],
        [answered_with_error(other("SET", "k"), b"-ERR wrong number of arguments for 'set' command\r\n")],
        [get("k", b"v")],
    ])
    path = tmp / "errors.pcap"
    path.write_bytes(ethernet_pcap(conv, timed(conv.segments())))
    stats = tmp / "stats.json"
    parsed = run_cli("parse.py", path, "-o", tmp / "t.parquet", "--stats-json", stats, check_rc=0)
    line = next(l for l in parsed.stderr.splitlines() if "answered with an error" in l)
    assert line.endswith(": ERR 3 (CLIENT SETINFO 2, which Redis < 7.2 refuses: harmless; SET 1), "
                         "WRONGTYPE 1 (GET)"), line
    import json

    assert json.loads(stats.read_text())["error_commands"] == {"ERR CLIENT SETINFO": 2, "ERR SET": 1,
                                                               "WRONGTYPE GET": 1}
    # simulate.py on the capture reports it in the same words.
    simulated = run_cli("simulate.py", path, "--lru", "3", "--no-progress", check_rc=0)
    assert line.strip() in simulated.stderr
