"""A capture holding only commands that touch no cached value says what it holds, not "no Redis commands"."""

from conftest import run_cli
from crafted_capture import Conversation, ethernet_pcap, other, timed
from test_bad_input import assert_one_line_error


def test_pings_only_are_named(tmp):
    conv = Conversation([[other("PING", reply=b"+PONG\r\n") for _ in range(5)] + [other("INFO", reply=b"$2\r\nok\r\n")]])
    path = tmp / "pings.pcap"
    path.write_bytes(ethernet_pcap(conv, timed(conv.segments())))
    proc = run_cli("simulate.py", path, "--lru", "10")
    assert_one_line_error(proc, str(path), "6 Redis commands", "PING x 5", "INFO x 1")
    assert "no Redis commands" not in proc.stderr

