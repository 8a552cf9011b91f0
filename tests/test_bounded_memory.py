"""Memory bounded whatever the input: simulate.py's capture batches, parse.py's MONITOR lines."""

from conftest import run_cli
from crafted_capture import Conversation, ethernet_pcap, timed
from test_bad_input import assert_one_line_error


def test_capture_rows_come_in_bounded_batches(tmp, monkeypatch):
    """simulate.py asked the parser for batches of 1 Mi rows, each holding its keys' bytes, one parsed ahead:
    huge MGETs of long keys held gigabytes for a 10-entry cache. It now asks for parse.py's batch size."""
    from cachescope.parse import capture_source
    from cachescope.trace.readers import open_trace
    from crafted_capture import hmget

    asked = []
    original = capture_source.CaptureRows.record_batches

    def spy(self, batch_rows=capture_source.BATCH_ROWS):
        asked.append(batch_rows)
        return original(self, batch_rows)

    monkeypatch.setattr(capture_source.CaptureRows, "record_batches", spy)
    conv = Conversation([[hmget("st_1", {"1": b"v", "2": None})]])
    path = tmp / "c.pcap"
    path.write_bytes(ethernet_pcap(conv, timed(conv.segments())))
    batches = list(open_trace(str(path)).batches())
    assert batches and asked and max(asked) <= capture_source.BATCH_ROWS


def test_parse_refuses_a_huge_monitor_line_without_reading_it_whole(tmp):
    path = tmp / "big.monitor"
    with open(path, "wb") as f:
        f.write(b'1700000000.000001 [0 1.2.3.4:5] "GET" "a"\n')
        f.write(b'1700000000.000002 [0 1.2.3.4:5] "GET" "' + b"x" * (65 << 20))
    proc = run_cli("parse.py", path, "-o", tmp / "o.parquet")
    assert_one_line_error(proc, str(path), "line 2", "longer than 64 MiB")
