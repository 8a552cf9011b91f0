"""Segments that no TCP stack would take, on crafted captures: an RST outside the receiver's window (a
middlebox's, a load balancer's, a forged one) must not end the connection, and a segment further from the
stream's next byte than any TCP window reaches is no data. Both are dropped and counted, in the summary on
stderr and in --stats-json; what the connection really carried comes out whole."""

import json

from conftest import run_cli
from crafted_capture import Conversation, Seg, ethernet_pcap, get, hmget, timed
from test_parse_crafted import check_stats, lookups, parse


def many_gets(n_batches=11, per_batch=10):
    return [[get(f"k{b}_{i}", b"v" * (i + 1)) if i % 3 else hmget(f"h{b}_{i}", {"f": b"x" * i, "g": None})
             for i in range(per_batch)] for b in range(n_batches)]


def after_batch(conv, segs, b):
    """Index in `segs` just after the last reply segment of batch `b`."""
    end = conv.rep_at[(b + 1) * len(conv.batches[b])] if b + 1 < len(conv.batches) else len(conv.stream[False])
    return max(i for i, s in enumerate(segs) if not s.client and s.payload and s.off < end) + 1


def cli_stats(tmp, data):
    cap, out, js = tmp / "w.pcap", tmp / "w.parquet", tmp / "w.json"
    cap.write_bytes(data)
    proc = run_cli("parse.py", cap, "-o", out, "--stats-json", js, "--no-progress", check_rc=0)
    return proc.stderr, json.loads(js.read_text())


def test_an_rst_outside_the_window_does_not_end_the_connection(tmp):
    conv = Conversation(many_gets())
    segs = conv.segments()
    at = after_batch(conv, segs, 0)
    client_next = conv.seq(True, len(b"".join(e.request for e in conv.batches[0])))
    # From the client's side, 10 MB beyond what it sent (the server offers 65535 bytes, unscaled); then a
    # stale one from the server's side, 100 kB before anything it sent.
    segs[at:at] = [Seg(True, (client_next + 10_000_000) % 2**32, 0, "R"),
                   Seg(False, (conv.seq(False, 0) - 100_000) % 2**32, 0, "R")]
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    commands, n = lookups(conv)
    assert commands == 110 and len(rows) == n
    assert rows == conv.expected_rows(captured)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, ignored_rsts=2,
                segments_after_close=1)  # the client's last ACK, after the FINs
    err, js = cli_stats(tmp, ethernet_pcap(conv, captured))
    assert "2 RSTs outside the window (ignored)" in err
    assert (js["ignored_rsts"], js["rows"]) == (2, n)


def test_segments_after_an_accepted_rst_are_counted_as_dropped(tmp):
    conv = Conversation(many_gets(n_batches=3))
    segs = conv.segments()
    at = after_batch(conv, segs, 0)
    sent = len(b"".join(e.request for e in conv.batches[0]))
    segs.insert(at, Seg(True, conv.seq(True, sent), 0, "R"))  # exactly the next byte: the client aborts
    after = segs[at + 1:]
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured, status={i: "lost" for i in range(10, 30)})
    assert stats["segments_after_close"] == len(after)
    assert stats["bytes_after_close"] == sum(len(s.payload) for s in after) > 0
    err, js = cli_stats(tmp, ethernet_pcap(conv, captured))
    dropped = sum(len(s.payload) for s in after)
    assert f"{len(after)} segments after their connection closed ({dropped:,} bytes)" in err
    assert js["segments_after_close"] == len(after)


def test_a_segment_beyond_any_window_gives_no_rows_and_no_gap(tmp):
    conv = Conversation(many_gets(n_batches=3))
    segs = conv.segments()
    # A forged command nearly 2^31 bytes ahead of the client's stream, while batch 1's first client segment
    # is late (a hole waits for it): the forged bytes must neither come out nor make the hole be given up.
    first = next(i for i, s in enumerate(segs) if s.client and s.payload and s.off == conv.req_at[10])
    late = segs.pop(first)
    forged = b"*3\r\n$3\r\nSET\r\n$6\r\nforged\r\n$1\r\nx\r\n"
    segs.insert(first, Seg(True, (late.seq + 2**31 - 100) % 2**32, late.ack, "PA", forged, late.off + 2**31 - 100))
    segs.insert(first + 2, late)
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert not any(r["key"] == "forged" for r in rows)
    assert rows == conv.expected_rows(captured)
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, out_of_order=1,
                out_of_window_segments=1, segments_after_close=1)
    assert stats["out_of_window_bytes"] == len(forged)
    err, js = cli_stats(tmp, ethernet_pcap(conv, captured))
    assert f"1 segments beyond any TCP window ({len(forged)} bytes)" in err and js["out_of_window_segments"] == 1
