"""The capture parser end to end on crafted captures (`crafted_capture.py`): Redis conversations of pipelined
HMGET/HGET/GET/HSET built with scapy, damaged the ways real captures are (reordering, retransmissions,
overlaps, lost segments, snap lengths, a capture that starts mid-stream or ends mid-record), on each link
layer the parser reads. Each test says exactly which rows must come out (from what was built, never from a
parser) and which counters must move; every other anomaly counter must stay at zero."""

import json
import random
import struct
from dataclasses import replace

import pandas as pd
import pyarrow.parquet as pq
import pytest

import cachescope
from conftest import run_cli
from crafted_capture import (EACH, LINKTYPE_ETHERNET, LINKTYPE_SLL2, STEP, T0, Conversation, Exchange, ethernet,
                             ethernet_pcap, feature_store_batches, get, hget, hgetall, hmget, hset, other, pcap,
                             pcapng, sll2, timed, transaction)

COLUMNS = ["ts_ns", "conn", "req", "op", "cmd", "key", "field", "value_size", "found", "latency_ns", "client",
           "server", "error", "batch"]
# Counters of things that went wrong: each test names those it expects to move; the others must stay 0.
ANOMALIES = ["retransmissions", "out_of_order", "overlaps", "overlap_conflicts", "gaps", "gap_bytes", "resyncs",
             "skipped_bytes", "unknown_replies", "damaged_commands", "unpaired_replies", "contradictions",
             "mid_stream_connections", "truncated_tail", "snaplen_cut_bytes", "skipped_packets",
             "non_redis_segments", "unknown_commands", "malformed_commands", "reassembly_limit_hits",
             "invalid_requests", "invalid_replies", "port_reuses", "ignored_rsts", "out_of_window_segments",
             "out_of_window_acks", "oversized_commands", "oversized_replies",
             "elided_args", "elided_keys", "args_lost_in_gaps", "unconfirmed_commands", "rows_out_of_order"]


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
        rec.pop("batch")  # round trips have tests of their own (tests/integration/test_round_trips.py)
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
    of the batch before it keep their replies; those after it come out with their replies unknown, to the
    end of the connection: how many commands the hole held is unknown, and each has a reply that could be
    taken for a later command's (a client pipelining across a quiet moment would be paired one reply off).
    The server's replies come in one segment whose ACK proves the hole."""
    conv = Conversation(feature_store_batches())
    segs = conv.segments(mss_server=None)
    batch = in_batch(conv, 1)
    # The first segment with commands of the batch before it and after it: it holds none of the first or last.
    i = next(i for i in data_segments(segs, True, batch, conv)
             if batch[0] < overlapping(conv, segs[i], True)[0] and overlapping(conv, segs[i], True)[-1] < batch[-1])
    dropped = segs.pop(i)
    hit = overlapping(conv, dropped, True)
    status = {i: "lost" for i in hit} | {i: "unknown" for i in range(hit[-1] + 1, len(conv.exchanges))}
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured, status=status)
    commands, n = lookups(conv, status)
    unknown = len(conv.exchanges) - 1 - hit[-1]
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
    batch after stays unknown too: the client pipelines, and a quiet moment of a client that pipelines does
    not end the realignment its commands are held for (a pause inside a pipeline its server lags looks the
    same), whose replies are too few to tell an offset. No value size is guessed meanwhile."""
    conv = Conversation(feature_store_batches())
    segs = conv.segments()
    batch = in_batch(conv, 1)
    idx = data_segments(segs, False, batch, conv)
    dropped = segs.pop(idx[1])
    hit = overlapping(conv, dropped, False)
    later = [*in_batch(conv, 2), *in_batch(conv, 3)]
    status = {i: "unknown" for i in range(hit[0], batch[-1] + 1)} | {i: "unknown" for i in later}
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured, status=status)
    commands, n = lookups(conv, status)
    # The reply bytes after the hole are skipped until the next batch's quiet moment restarts the reply
    # parser; the replies of both batches after it are then read but answer nothing known.
    after = [j for j in data_segments(segs, False, batch, conv) if segs[j].off > dropped.off]
    skipped = conv.rep_at[batch[-1] + 1] - dropped.end
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, gaps=1,
                gap_bytes=len(dropped.payload), unknown_replies=len(status), resyncs=1, skipped_bytes=skipped,
                unpaired_replies=len(later), out_of_order=len(after))


def value(n: int) -> bytes:
    return bytes(ord("a") + i % 26 for i in range(n))


def test_snap_length_cuts(tmp):
    """tcpdump -s 118 keeps 64 bytes of TCP payload. A cut inside a reply's value loses nothing the trace
    needs (the value's length came in its header): the reply is known. A cut inside a command's value loses
    that value only (its length came in its header too): the command is kept, the size it wrote unknown, and
    pairing goes on."""
    write = replace(hset("st_2", {"2496559762": value(200)}), rows=[("write", "HSET", "st_2", "2496559762", None,
                                                                      None)])
    conv = Conversation([
        [hmget("st_1", {"2496559762": value(5), "1170383926": value(300)}), get("plain_1", value(100))],
        [write, hget("st_2", "111", value(4))],
        [hmget("st_3", {"1": value(7), "2": None}), get("plain_2", value(64))],
    ])
    captured = timed(conv.segments(mss_client=EACH, mss_server=EACH))
    rows, stats = parse(tmp, ethernet_pcap(conv, captured, snaplen=54 + 64))
    assert rows == conv.expected_rows(captured)
    cuts = [len(s.payload) - 64 for _, s in captured if len(s.payload) > 64]
    assert len(cuts) == 4
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n,
                snaplen_cut_bytes=sum(cuts), gaps=len(cuts), gap_bytes=sum(cuts), args_lost_in_gaps=1,
                elided_args=0)


def test_capture_starting_mid_stream(tmp):
    """No handshake: the capture begins in the middle of the first batch, inside a command. That command is
    lost; the commands after it are read on probation (they could be a value's text) until four of them
    followed one another, in the middle of batch 1, and their replies are unknown (the reply stream's frame
    boundaries are unknown too); batch 2's quiet start finds those boundaries, and from batch 3 on everything
    pairs."""
    conv = Conversation(feature_store_batches())
    segs = conv.segments()
    first = data_segments(segs, True, in_batch(conv, 0), conv)[1]
    start = segs[first].off
    segs = segs[first:]
    assert conv.req_at[0] < start < conv.req_at[1]
    unknown = [*in_batch(conv, 0)[1:], *in_batch(conv, 1), *in_batch(conv, 2)]
    assert len(in_batch(conv, 0)[1:]) + len(in_batch(conv, 1)) > 4
    status = {0: "lost"} | {i: "unknown" for i in unknown}
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured, status=status)
    commands, n = lookups(conv, status)
    skipped = (conv.req_at[1] - start) + conv.rep_at[in_batch(conv, 2)[0]]  # to the next command; batch 2's replies
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, mid_stream_connections=1,
                resyncs=2, skipped_bytes=skipped, unknown_replies=len(status) - 1,
                unpaired_replies=len(in_batch(conv, 2)))


def test_capture_file_cut_in_its_last_record(tmp):
    """tcpdump killed mid-write: the last record is cut. What came before is parsed; the replies the cut
    record held are unknown; the cut is reported, by parse.py too."""
    conv = Conversation(feature_store_batches())
    captured = timed(conv.segments(close=False))
    last = captured[-1][1]
    assert not last.client and last.payload
    data = ethernet_pcap(conv, captured)
    data = data[:len(data) - len(last.payload) // 2]
    status = {i: "unknown" for i in overlapping(conv, last, False)}
    rows, stats = parse(tmp, data)
    assert rows == conv.expected_rows(captured[:-1], status=status)
    commands, n = lookups(conv, status)
    check_stats(stats, packets=len(captured) - 1, connections=1, commands=commands, rows=n, truncated_tail=1,
                unknown_replies=len(status))
    proc = run_cli("parse.py", tmp / "c.pcap", "-o", tmp / "t.parquet", check_rc=0)
    assert "cut record" in proc.stderr and f"{n:,} rows" in proc.stderr


# ---- link layers and file formats ----


@pytest.mark.parametrize("link", ["vlan", "sll2", "ipv6", "ipv6-sll2"])
def test_link_layers(tmp, link):
    """The same conversation over 802.1Q Ethernet, Linux cooked v2 (nanosecond pcap), and IPv6, with
    sequence numbers that wrap around 2**32 mid-stream."""
    v6 = link.startswith("ipv6")
    conv = Conversation(feature_store_batches(),
                        client=("fd00::10", 52000) if v6 else ("192.168.7.10", 40123),
                        server=("fd00::6379", 6379) if v6 else ("192.168.7.20", 6379),
                        client_isn=2**32 - 200, server_isn=2**32 - 100)
    nano = link.endswith("sll2")
    captured = timed(conv.segments(), step=789 if nano else STEP)
    if nano:
        data = pcap([(ts, sll2(conv.ip_packet(s))) for ts, s in captured], linktype=LINKTYPE_SLL2, nano=True)
    else:
        data = pcap([(ts, ethernet(conv.ip_packet(s), vlan=None if v6 else 100)) for ts, s in captured])
    rows, stats = parse(tmp, data)
    assert rows == conv.expected_rows(captured)
    assert rows[0]["client"] == ("[fd00::10]:52000" if v6 else "192.168.7.10:40123")
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n)


def by_conn(rows: list[dict]) -> dict:
    """Rows per connection, `req` replaced by its rank within the connection (connections interleave, so
    their command numbers do)."""
    out = {}
    for r in rows:
        out.setdefault(r["conn"], []).append(r)
    for conn_rows in out.values():
        ranks = {req: i for i, req in enumerate(dict.fromkeys(r["req"] for r in conn_rows))}
        for r in conn_rows:
            r["req"] = ranks[r["req"]]
    return out


def test_pcapng_with_two_interfaces(tmp):
    """Two connections on two interfaces of one pcapng section: Ethernet with microsecond timestamps, Linux
    cooked v2 with nanosecond ones, packets interleaved."""
    a = Conversation(feature_store_batches(), client=("10.0.0.1", 51001))
    b = Conversation(feature_store_batches()[::-1], client=("10.9.0.1", 33333), server=("10.9.0.2", 6379),
                     client_isn=100, server_isn=200)
    ta = timed(a.segments(), step=100_000)
    tb = timed(b.segments(), t0=T0 + 50_123, step=100_000)
    packets = sorted([(ts, 0, ethernet(a.ip_packet(s))) for ts, s in ta] +
                     [(ts, 1, sll2(b.ip_packet(s))) for ts, s in tb])
    data = pcapng([(LINKTYPE_ETHERNET, 262144, 6), (LINKTYPE_SLL2, 262144, 9)], [(i, ts, f) for ts, i, f in packets])
    rows, stats = parse(tmp, data, "c.pcapng")
    assert len({r["req"] for r in rows if r["conn"] == 0} & {r["req"] for r in rows if r["conn"] == 1}) == 0
    assert by_conn(rows) == {0: by_conn(a.expected_rows(ta, conn=0))[0], 1: by_conn(b.expected_rows(tb, conn=1))[1]}
    (ca, na), (cb, nb) = lookups(a), lookups(b)
    check_stats(stats, packets=len(packets), connections=2, commands=ca + cb, rows=na + nb)


def one_line_error(proc, *needles):
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_garbage_files_are_one_clear_error(tmp):
    """Bytes that are no capture, and a pcap whose first record claims a gigabyte: parse.py says so in one
    line naming the file (exit 2); the Python API raises TraceFormatError."""
    garbage = tmp / "garbage.pcap"
    garbage.write_bytes(random.Random(7).randbytes(4096))
    one_line_error(run_cli("parse.py", garbage, "-o", tmp / "o.parquet"), str(garbage))
    with pytest.raises(cachescope.TraceFormatError, match="garbage.pcap"):
        cachescope.parse_capture(str(garbage))
    huge = tmp / "huge_record.pcap"
    huge.write_bytes(pcap([]) + struct.pack("<IIII", 1_700_000_000, 0, 1 << 30, 1 << 30) + b"\x00" * 64)
    one_line_error(run_cli("parse.py", huge, "-o", tmp / "o.parquet"), str(huge), "offset 24")
    assert not (tmp / "o.parquet").exists() or pq.read_table(tmp / "o.parquet").num_rows == 0


# ---- what is not Redis, and what must not leak ----


def test_http_on_the_redis_port(tmp):
    """An HTTP exchange on port 6379: its request line is a command Redis would refuse (GET with two
    arguments), `Host:` is where Redis closes such a connection; the response is no RESP. No row, and
    every byte accounted for as invalid or skipped."""
    request = b"GET / HTTP/1.1\r\nHost: cache:6379\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n"
    response = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
    conv = Conversation([[Exchange(("GET",), response, raw=request)]])
    captured = timed(conv.segments())
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == []
    first = lambda b: len(b.split(b"\r\n")[0]) + 2  # noqa: E731  (a line is read before it is judged)
    skipped = len(request) - first(request) - len(b"Host: cache:6379\r\n") + len(response) - first(response)
    check_stats(stats, packets=len(captured), connections=1, commands=1, rows=0, malformed_commands=1,
                invalid_requests=1, invalid_replies=1, unknown_replies=1, skipped_bytes=skipped)


PASSWORDS = ["s3cr3t-Pa55w0rd", "hello-auth-pw-9", "acl-user-pw-42"]


def test_credentials_never_reach_any_output(tmp):
    """AUTH, then HELLO 3 AUTH (the connection turns RESP3: nulls, a map for HGETALL), then AUTH with an ACL
    user, each credential split across segments. The rows are exact, and no password appears in the
    Parquet, commands or monitor trace, the stats JSON, or anything parse.py prints."""
    hello_reply = (b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$4\r\nrole\r\n$6\r\nmaster\r\n")
    conv = Conversation([
        [other("AUTH", PASSWORDS[0])],
        [other("HELLO", "3", "AUTH", "default", PASSWORDS[1], reply=hello_reply)],
        [hmget("st_1", {"2496559762": value(5), "42": None}, resp3=True), hget("st_1", "7", None, resp3=True),
         hgetall("st_2", {"2496559762": value(9), "1170383926": value(2)})],
        [other("AUTH", "feature-reader", PASSWORDS[2]), get("plain_1", value(11), resp3=True)],
    ])
    captured = timed(conv.segments(mss_client=11))
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured)
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, redacted_args=5)
    assert stats["other_commands"] == {"AUTH": 2, "HELLO": 1}
    outputs = []
    for out in ["t.parquet", "t.txt", "t.monitor"]:
        proc = run_cli("parse.py", tmp / "c.pcap", "-o", tmp / out, "--stats-json", tmp / "s.json", check_rc=0)
        outputs += [proc.stdout, proc.stderr, (tmp / out).read_bytes().decode("latin-1"),
                    (tmp / "s.json").read_text()]
    outputs.append(pq.read_table(tmp / "t.parquet").to_pandas().to_string())
    outputs.append(json.dumps(stats))
    assert "HMGET st_1 2496559762 42" in outputs[4 + 2]  # the commands trace was written
    for pw in PASSWORDS:
        assert not any(pw in text for text in outputs), pw


def test_multi_exec_with_hmget_inside(tmp):
    """Commands queued in a transaction get `+QUEUED`; their real replies are the elements of EXEC's."""
    conv = Conversation([
        [hmget("st_0", {"1": value(3)})],
        transaction(hmget("st_1", {"2496559762": value(8), "1170383926": None}), hset("st_1", {"5": value(2)}),
                    hget("st_1", "5", value(2))),
        [get("plain_1", value(19))],
    ])
    captured = timed(conv.segments())
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured)
    # The queued commands' latencies run to EXEC's reply, not to their +QUEUED.
    queued = [i for i, e in enumerate(conv.exchanges) if e.queued]
    assert len(queued) == 3 and {conv.rep_at[i] for i in queued} == {conv.rep_at[queued[-1] + 1]}
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n)
    assert stats["other_commands"] == {"MULTI": 1, "EXEC": 1}


@pytest.mark.parametrize("ending", ["fin", "none"])
def test_connection_close_and_port_reuse(tmp, ending):
    """Two connections on the same 4-tuple: the first closed by FIN both ways (or never closed: the client
    went away), then a SYN with a new ISN opens the second. Two connections, each with its own rows."""
    batches = feature_store_batches()
    first = Conversation(batches[:2])
    second = Conversation(batches[2:], client_isn=777_000, server_isn=888_000)
    s1 = first.segments(close=ending == "fin")
    t1 = timed(s1)
    t2 = timed(second.segments(), t0=T0 + len(s1) * STEP)
    data = pcap([(ts, ethernet(first.ip_packet(s))) for ts, s in t1] +
                [(ts, ethernet(second.ip_packet(s))) for ts, s in t2])
    rows, stats = parse(tmp, data)
    c1, n1 = lookups(first)
    c2, n2 = lookups(second)
    assert rows == first.expected_rows(t1, conn=0) + second.expected_rows(t2, conn=1, req0=c1)
    check_stats(stats, packets=len(t1) + len(t2), connections=2, commands=c1 + c2, rows=n1 + n2, port_reuses=1)
