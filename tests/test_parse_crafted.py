"""The capture parser end to end on crafted captures (`crafted_capture.py`): Redis conversations of pipelined
HMGET/HGET/GET/HSET built with scapy, damaged the ways real captures are (reordering, retransmissions,
overlaps, lost segments, snap lengths, a capture that starts mid-stream or ends mid-record), on each link
layer the parser reads. Each test says exactly which rows must come out (from what was built, never from a
parser) and which counters must move; every other anomaly counter must stay at zero."""

import json
from dataclasses import replace

import pandas as pd
import pyarrow.parquet as pq
import pytest

import cachescope
from conftest import run_cli
from crafted_capture import (EACH, LINKTYPE_ETHERNET, LINKTYPE_SLL2, Conversation, bulk, ethernet, ethernet_pcap,
                             feature_store_batches, get, hget, hgetall, hmget, hset, other, pcap, pcapng,
                             sll2, timed, transaction)

COLUMNS = ["ts_ns", "conn", "req", "op", "cmd", "key", "field", "value_size", "found", "latency_ns", "client",
           "server"]
# Counters of things that went wrong: each test names those it expects to move; the others must stay 0.
ANOMALIES = ["retransmissions", "out_of_order", "overlaps", "overlap_conflicts", "gaps", "gap_bytes", "resyncs",
             "skipped_bytes", "unknown_replies", "damaged_commands", "unpaired_replies", "contradictions",
             "mid_stream_connections", "truncated_tail", "snaplen_cut_bytes", "skipped_packets",
             "non_redis_segments", "unknown_commands", "malformed_commands", "reassembly_limit_hits",
             "invalid_requests", "invalid_replies", "port_reuses"]


def parse(tmp, data: bytes, name="c.pcap"):
    path = tmp / name
    path.write_bytes(data)
    df = cachescope.parse_capture(str(path))
    return rows_of(df), df.attrs["stats"]


def rows_of(df: pd.DataFrame) -> list[dict]:
    """The rows as plain Python values, nulls as None."""
    assert list(df.columns) == COLUMNS
    out = []
    for rec in df.astype(object).to_dict("records"):
        out.append({k: (None if v is None or (isinstance(v, float) and v != v) else
                        int(v) if k in ("ts_ns", "conn", "req", "value_size", "latency_ns") else
                        bool(v) if k == "found" else str(v)) for k, v in rec.items()})
    return out


def check_stats(stats: dict, **want):
    expected = {k: 0 for k in ANOMALIES}
    expected.update(want)
    assert {k: stats[k] for k in expected} == expected


def lookups(conv: Conversation, status=None) -> tuple[int, int]:
    """(commands, rows) a conversation must give."""
    status = status or {}
    commands = sum(1 for i in range(len(conv.exchanges)) if status.get(i) != "lost")
    rows = sum(len(e.rows) for i, e in enumerate(conv.exchanges) if status.get(i) != "lost")
    return commands, rows


def in_batch(conv: Conversation, b: int) -> range:
    start = sum(len(x) for x in conv.batches[:b])
    return range(start, start + len(conv.batches[b]))


def data_segments(segs, client: bool, batch_range, conv):
    """Indices in `segs` of the data segments of one direction whose bytes belong to the given exchanges."""
    at = conv.req_at if client else conv.rep_at
    lo = at[batch_range[0]]
    hi = at[batch_range[-1] + 1] if batch_range[-1] + 1 < len(at) else len(conv.stream[client])
    return [i for i, s in enumerate(segs) if s.client == client and s.payload and lo <= s.off < hi]


# ---- a clean capture, and the ways TCP delivers the same bytes differently ----


def test_in_order_baseline(tmp):
    conv = Conversation(feature_store_batches())
    captured = timed(conv.segments())
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured)
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n)
    assert stats["other_commands"] == {}


def test_reordered_segments(tmp):
    conv = Conversation(feature_store_batches())
    segs = conv.segments()
    swaps = 0
    for b in range(len(conv.batches)):
        for client in (True, False):
            idx = data_segments(segs, client, in_batch(conv, b), conv)
            if len(idx) >= 2:  # the second data segment of the batch overtakes the first
                segs[idx[0]], segs[idx[1]] = segs[idx[1]], segs[idx[0]]
                swaps += 1
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured)
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, out_of_order=swaps)
    assert swaps >= 6


def test_duplicated_segments(tmp):
    conv = Conversation(feature_store_batches())
    segs = conv.segments()
    data = [i for i, s in enumerate(segs) if s.payload]
    picks = data[1::4]
    for k, i in enumerate(sorted(picks, reverse=True)):
        segs.insert(i + 1 + k % 3, segs[i])  # resent right away or a few segments later
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured)
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n,
                retransmissions=len(picks))


def test_overlapping_segments(tmp):
    """Partial retransmissions: one repeats the end of a delivered segment and brings new bytes; one repeats
    part of a segment still held beyond a hole; one disagrees with the bytes seen first (which win)."""
    conv = Conversation(feature_store_batches())
    segs = conv.segments()
    req = data_segments(segs, True, in_batch(conv, 1), conv)
    rep = data_segments(segs, False, in_batch(conv, 3), conv)
    # Batch 2's second client segment resent from the middle of the first, before the third.
    a, b = segs[req[0]], segs[req[1]]
    segs[req[1]] = conv.piece(a.off + len(a.payload) // 2, b.end, like=b)
    # Batch 4's replies: the third segment arrives first, then one spanning the second and half the third,
    # then the second; and a copy of the first whose repeated bytes were altered.
    r1, r2, r3 = (segs[i] for i in rep[:3])
    spanning = conv.piece(r2.off, r3.off + len(r3.payload) // 2, like=r2)
    altered = replace(r1, payload=r1.payload[:-3] + b"XYZ")
    segs[rep[0]:rep[2] + 1] = [r1, r3, spanning, r2, altered]
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured)
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, overlaps=2,
                out_of_order=1, retransmissions=2, overlap_conflicts=1)



# ---- losses: reported, never invented ----


def overlapping(conv: Conversation, seg, client: bool) -> list[int]:
    """Exchanges whose command (client) or reply (server) has bytes in `seg`."""
    at = conv.req_at if client else conv.rep_at
    stream_len = len(conv.stream[client])
    out = []
    for i in range(len(conv.exchanges)):
        end = next((at[j] for j in range(i + 1, len(at)) if at[j] > at[i]), stream_len)
        if at[i] < seg.end and seg.off < end:
            out.append(i)
    return out


def test_lost_request_segment(tmp):
    """A client segment in the middle of a pipelined batch is missing. The commands it held are lost; those
    of the batch before it keep their replies; those after it in the batch come out with their replies
    unknown (which reply is theirs cannot be known); from the next batch on, pairing is back. The server's
    replies come in one segment whose ACK proves the hole."""
    conv = Conversation(feature_store_batches())
    segs = conv.segments(mss_server=None)
    batch = in_batch(conv, 1)
    # The first segment with commands of the batch before it and after it: it holds none of the first or last.
    i = next(i for i in data_segments(segs, True, batch, conv)
             if batch[0] < overlapping(conv, segs[i], True)[0] and overlapping(conv, segs[i], True)[-1] < batch[-1])
    dropped = segs.pop(i)
    hit = overlapping(conv, dropped, True)
    status = {i: "lost" for i in hit} | {i: "unknown" for i in range(hit[-1] + 1, batch[-1] + 1)}
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured, status=status)
    commands, n = lookups(conv, status)
    unknown = batch[-1] - hit[-1]
    # Resynchronizing skips the rest of the command cut by the hole; the replies of the lost commands and of
    # those whose pairing is unknown answer nothing.
    skipped = conv.req_at[hit[-1] + 1] - dropped.end
    # The client segments after the hole wait for the server's ACK to prove it.
    held = len([j for j in data_segments(segs, True, batch, conv) if segs[j].off > dropped.off])
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, gaps=1,
                gap_bytes=len(dropped.payload), damaged_commands=1, resyncs=1, skipped_bytes=skipped,
                unknown_replies=unknown, unpaired_replies=len(hit) + unknown, out_of_order=held)


def test_lost_reply_segment(tmp):
    """A server segment is missing: the replies it held and those after it in the batch are unknown, and so
    is the next batch, whose first quiet moment only finds the reply stream's frame boundaries again; the
    batch after pairs again. No value size is guessed meanwhile."""
    conv = Conversation(feature_store_batches())
    segs = conv.segments()
    batch = in_batch(conv, 1)
    idx = data_segments(segs, False, batch, conv)
    dropped = segs.pop(idx[1])
    hit = overlapping(conv, dropped, False)
    status = {i: "unknown" for i in range(hit[0], batch[-1] + 1)} | {i: "unknown" for i in in_batch(conv, 2)}
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured, status=status)
    commands, n = lookups(conv, status)
    # The reply bytes after the hole are skipped until the next batch's quiet moment restarts the reply
    # parser; that batch's replies are then read but answer nothing known.
    after = [j for j in data_segments(segs, False, batch, conv) if segs[j].off > dropped.off]
    skipped = conv.rep_at[batch[-1] + 1] - dropped.end
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, gaps=1,
                gap_bytes=len(dropped.payload), unknown_replies=len(status), resyncs=1, skipped_bytes=skipped,
                unpaired_replies=len(in_batch(conv, 2)), out_of_order=len(after))


def value(n: int) -> bytes:
    return bytes(ord("a") + i % 26 for i in range(n))


def test_snap_length_cuts(tmp):
    """tcpdump -s 118 keeps 64 bytes of TCP payload. A cut inside a reply's value loses nothing the trace
    needs (the value's length came in its header): the reply is known. A cut inside a command's value loses
    the command (its arguments are not all there); the next command of that batch has its reply unknown;
    the batch after pairs again."""
    conv = Conversation([
        [hmget("st_1", {"2496559762": value(5), "1170383926": value(300)}), get("plain_1", value(100))],
        [hset("st_2", {"2496559762": value(200)}), hget("st_2", "111", value(4))],
        [hmget("st_3", {"1": value(7), "2": None}), get("plain_2", value(64))],
    ])
    captured = timed(conv.segments(mss_client=EACH, mss_server=EACH))
    rows, stats = parse(tmp, ethernet_pcap(conv, captured, snaplen=54 + 64))
    status = {2: "lost", 3: "unknown"}
    assert rows == conv.expected_rows(captured, status=status)
    cuts = [len(s.payload) - 64 for _, s in captured if len(s.payload) > 64]
    assert len(cuts) == 4
    commands, n = lookups(conv, status)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n,
                snaplen_cut_bytes=sum(cuts), gaps=len(cuts), gap_bytes=sum(cuts), damaged_commands=1, resyncs=1,
                unknown_replies=1, unpaired_replies=2)
