"""A plain, slow reference for `cachescope.parse_capture`, written only to check the comparison tests.

The comparison tests are written before the real parser exists; running them against this reference proves
that they pass on a correct trace (and so that a failure later is the parser's, not the tests'). It handles
only clean captures like the harness's: no loss, no reordering beyond what sorting by sequence number undoes,
no sequence wrap, whole connections from SYN to FIN. Nothing of cachescope is used: dpkt reads the packets.

Per connection and direction the payloads are put in sequence order (a retransmission's duplicate bytes are
dropped), parsed as RESP, and requests are paired with replies in order (Redis answers in order, pipelined or
not); inside MULTI the replies are QUEUED and the real ones come in EXEC's array.
"""

from __future__ import annotations

import bisect
import itertools

import pandas as pd

from .pcapread import by_client, read_segments

READS = {"HMGET", "HGET", "GET", "MGET", "HGETALL"}
WRITES = {"HSET": "write", "SET": "write", "EXPIRE": "write", "HDEL": "delete", "DEL": "delete"}


def parse_capture(path, ports=(6379,), granularity="field") -> pd.DataFrame:
    rows = []
    segments = read_segments(path, with_payload=True)
    for port in ports:
        flows = sorted(by_client(segments, port).items(), key=lambda kv: kv[1]["to_server"][0].ts)
        for client, flow in flows:
            server = flow["to_server"][0].dst
            rows.extend(_connection_rows(client, server, flow))
    df = pd.DataFrame(rows, columns=["ts_ns", "client", "server", "cmd", "op", "key", "field", "value_size",
                                     "found", "latency_ns", "n"])
    conns = {c: i for i, c in enumerate(dict.fromkeys(df["client"]))}
    df.insert(1, "conn", df["client"].map(conns).astype("uint32"))
    # Commands are numbered across connections by time, but each connection's in the order it sent them: the
    # capture may see a pipelined command's first segment a few microseconds before the previous command's
    # (segments of one write reordered on their way to the capture), so a connection's times are taken as
    # their running maximum for the ordering.
    order = df.drop_duplicates(["conn", "n"]).sort_values(["conn", "n"])
    order = order.assign(sent=order.groupby("conn")["ts_ns"].cummax()).sort_values(["sent", "conn", "n"])
    req = {(c, n): i for i, (c, n) in enumerate(zip(order["conn"], order["n"]))}
    df.insert(2, "req", [req[(c, n)] for c, n in zip(df["conn"], df["n"])])
    return df.drop(columns="n").sort_values(["req"], kind="stable").reset_index(drop=True)


def _connection_rows(client, server, flow):
    requests = _messages(flow["to_server"])
    replies = _messages(flow["to_client"])
    paired = _pair(requests, replies)
    rows = []
    for n, ((ts, args), (reply_ts, reply)) in enumerate(paired):
        for key, field, size, found, op in _lookups(args, reply):
            rows.append([ts, client, server, args[0].decode().upper(), op, key, field, size, found,
                         reply_ts - ts, n])
    return rows


def _messages(segments):
    """[(ts_ns of the first byte, value)] of one direction's byte stream."""
    data, offsets, times = bytearray(), [], []
    seen_seq = set()
    for s in sorted((s for s in segments if s.payload), key=lambda s: s.seq):
        if s.seq in seen_seq:
            continue
        seen_seq.add(s.seq)
        offsets.append(len(data))
        times.append(int(round(s.ts * 1e9)))
        data += s.data
    out, pos = [], 0
    while pos < len(data):
        value, end = _resp(data, pos)
        out.append((times[bisect.bisect_right(offsets, pos) - 1], value))
        pos = end
    return out


def _pair(requests, replies):
    """Requests with their replies; inside MULTI/EXEC each queued command gets its element of EXEC's reply."""
    if len(requests) != len(replies):
        raise ValueError(f"{len(requests)} requests but {len(replies)} replies")
    out, queued = [], None
    for (ts, args), (rts, reply) in zip(requests, replies):
        name = args[0].upper()
        if name == b"MULTI":
            queued = []
        elif name == b"EXEC" and queued is not None:
            for i, (qts, qargs) in zip(itertools.count(), queued):
                out.append(((qts, qargs), (rts, reply[i])))
            queued = None
            continue
        elif queued is not None:
            queued.append((ts, args))
            continue
        out.append(((ts, args), (rts, reply)))
    return out


def _lookups(args, reply):
    cmd = args[0].decode().upper()
    a = [x.decode("latin-1") for x in args[1:]]
    size = (lambda v: None if v is None else len(v))
    if cmd in ("HMGET", "MGET"):
        keys = [(a[0], f) for f in a[1:]] if cmd == "HMGET" else [(k, None) for k in a]
        return [(k, f, size(v), v is not None, "read") for (k, f), v in zip(keys, reply)]
    if cmd in ("HGET", "GET"):
        return [(a[0], a[1] if cmd == "HGET" else None, size(reply), reply is not None, "read")]
    if cmd == "HGETALL":
        pairs = list(reply.items()) if isinstance(reply, dict) else list(zip(reply[0::2], reply[1::2]))
        if not pairs:
            return [(a[0], None, None, False, "read")]
        return [(a[0], f.decode("latin-1"), len(v), True, "read") for f, v in pairs]
    if cmd == "HSET":
        return [(a[0], f, len(v), None, "write") for f, v in zip(a[1::2], args[3::2])]
    if cmd == "SET":
        return [(a[0], None, len(args[2]), None, "write")]
    if cmd in ("HDEL", "DEL", "EXPIRE"):
        keys = [(a[0], f) for f in a[1:]] if cmd == "HDEL" else [(k, None) for k in (a if cmd == "DEL" else a[:1])]
        return [(k, f, None, None, WRITES[cmd]) for k, f in keys]
    return []


def _resp(buf, pos):
    """(value, position after it) of the RESP2/RESP3 value at `pos`."""
    kind, end = buf[pos:pos + 1], buf.index(b"\r\n", pos)
    line = bytes(buf[pos + 1:end])
    pos = end + 2
    if kind in (b"$", b"=", b"!"):
        n = int(line)
        if n < 0:
            return None, pos
        return bytes(buf[pos:pos + n]), pos + n + 2
    if kind in (b"*", b"~", b">", b"%", b"|"):
        n = int(line)
        if n < 0:
            return None, pos
        items = []
        for _ in range(n * (2 if kind in (b"%", b"|") else 1)):
            item, pos = _resp(buf, pos)
            items.append(item)
        if kind == b"|":  # attributes precede the real value
            return _resp(buf, pos)
        return (dict(zip(items[::2], items[1::2])) if kind == b"%" else items), pos
    if kind == b"_":
        return None, pos
    if kind == b"-":
        return RuntimeError(line.decode("latin-1")), pos
    return line, pos  # + : , # ( as their text
