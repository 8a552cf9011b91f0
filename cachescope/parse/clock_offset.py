"""The clock offset between two captures that saw the same TCP connection (one on a service host and one on
the Redis host, say): the difference of the times both gave the same commands.

A trace row does not carry TCP sequence numbers, so a connection is recognised by its 4-tuple (client and
server `ip:port`) and the same commands (name and key) in the same order: each capture keeps the first
`COMMANDS` commands of up to `CONNECTIONS` connections (bounded, whatever the capture's size), and two
captures' lists of one 4-tuple are aligned where their commands agree. The offset is the median over the
commands both saw; it includes the one-way network delay between the two hosts (a few hundred microseconds
on one network), which no capture can tell from the clocks' difference."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa

from cachescope import _native

COMMANDS = 8
CONNECTIONS = 50_000
# Commands two lists must agree on, in a row, to be taken as one connection seen twice.
MIN_AGREEING = 3


class ConnectionSignatures:
    """Fed the capture's record batches in order; `signatures` maps (client, server) to [(ts_ns, command
    hash), ...], its first commands."""

    def __init__(self):
        self.signatures: dict[tuple[str, str], list[tuple[int, int]]] = {}
        self._last: tuple[int, int] | None = None  # (conn, req) of the last row seen

    def add(self, rb: pa.RecordBatch) -> None:
        if rb.num_rows == 0:
            return
        conn = rb.column("conn").to_numpy(zero_copy_only=False).astype(np.int64)
        req = rb.column("req").to_numpy(zero_copy_only=False).astype(np.uint64)
        first = np.ones(len(req), dtype=bool)
        first[1:] = (req[1:] != req[:-1]) | (conn[1:] != conn[:-1])
        if self._last is not None:
            first[0] = (int(conn[0]), int(req[0])) != self._last
        self._last = (int(conn[-1]), int(req[-1]))
        rows = np.flatnonzero(first)
        if not len(rows):
            return
        ts = rb.column("ts_ns").to_numpy(zero_copy_only=False)[rows]
        key = rb.column("key").take(pa.array(rows)).cast(pa.large_string())
        _, offsets, data = key.buffers()
        offsets = np.frombuffer(offsets, np.int64)[key.offset:key.offset + len(key) + 1]
        data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
        keys = _native.hash_string_column(np.ascontiguousarray(offsets), data)
        cmd = rb.column("cmd").take(pa.array(rows))
        cmd_names = [zlib.crc32(n.encode()) for n in cmd.dictionary.to_pylist()]
        cmd_hash = np.array(cmd_names, np.uint64)[cmd.indices.to_numpy(zero_copy_only=False)]
        client = rb.column("client").take(pa.array(rows)).to_pylist()
        server = rb.column("server").take(pa.array(rows)).to_pylist()
        sigs = keys ^ (cmd_hash << np.uint64(32))
        for i in range(len(rows)):
            tup = (client[i], server[i])
            got = self.signatures.get(tup)
            if got is None:
                if len(self.signatures) >= CONNECTIONS:
                    continue
                got = self.signatures[tup] = []
            if len(got) < COMMANDS:
                got.append((int(ts[i]), int(sigs[i])))


def offsets(signatures: dict[str, dict]) -> list[dict]:
    """For each pair of captures (by name) that saw the same connections: `{"captures": [a, b], "offset_ns"
    (b's clock minus a's, median), "connections", "commands"}`. The signatures are taken from the rows as
    parsed (before parse.py names each client by its host)."""
    names = sorted(signatures)
    keyed = signatures
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            diffs, conns = [], 0
            for tup in keyed[a].keys() & keyed[b].keys():
                d = _aligned(keyed[a][tup], keyed[b][tup])
                if d:
                    diffs += d
                    conns += 1
            if conns:
                out.append({"captures": [a, b], "offset_ns": int(np.median(diffs)), "connections": conns,
                            "commands": len(diffs)})
    return out


def _aligned(a: list, b: list) -> list[int]:
    """The time differences (b - a) of the commands of one connection seen by both, when the two lists agree
    on at least MIN_AGREEING commands in a row at some shift (one capture may have begun mid-connection)."""
    sa, sb = [s for _, s in a], [s for _, s in b]
    for shift in range(-(len(sa) - 1), len(sb)):
        pairs = [(i, i + shift) for i in range(len(sa)) if 0 <= i + shift < len(sb)]
        need = min(MIN_AGREEING, len(sa), len(sb))
        if len(pairs) >= need and all(sa[i] == sb[j] for i, j in pairs):
            return [b[j][0] - a[i][0] for i, j in pairs]
    return []
