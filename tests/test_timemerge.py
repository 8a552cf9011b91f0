"""The merge of several traces' record batches by time (cachescope/trace/timemerge.py): the same rows whatever
the batches' cuts, each stream's rows in their order, conn and req unique, and streams opened only when the
merge reaches them."""

import numpy as np
import pyarrow as pa

from cachescope.parse.schema import SCHEMA, record_batch
from cachescope.trace.timemerge import Stream, merge_streams


def _rows(rng, n, stream):
    """A stream's rows: times with many ties (within and across streams), commands of 1-3 rows."""
    ts = np.sort(rng.integers(0, n // 2, n)).astype(np.int64)
    req, r = np.zeros(n, np.uint64), 0
    i = 0
    while i < n:
        k = int(rng.integers(1, 4))
        req[i:i + k] = r
        ts[i:i + k] = ts[i]
        r, i = r + 1, i + k
    ts = np.maximum.accumulate(ts)
    conn = (req % 3).astype(np.uint32)
    keys = [f"s{stream}k{j}" for j in range(n)]
    return ts, conn, req, keys


def _batch(ts, conn, req, keys):
    enc = [k.encode() for k in keys]
    offsets = np.zeros(len(enc) + 1, np.int64)
    offsets[1:] = np.cumsum([len(e) for e in enc])
    n = len(ts)
    cols = {"ts_ns": ts, "conn": conn, "req": req, "op": np.zeros(n, np.uint8), "cmd": np.zeros(n, np.uint16),
            "key_offsets": offsets, "key_data": np.frombuffer(b"".join(enc), np.uint8),
            "field_offsets": np.zeros(n + 1, np.int64), "field_data": np.zeros(0, np.uint8),
            "field_valid": np.zeros(n, bool), "value_size": np.full(n, -1, np.int32),
            "found": np.full(n, -1, np.int8), "latency_ns": np.full(n, -1, np.int64),
            "error": np.full(n, -1, np.int16), "error_names": [], "batch": req}
    return record_batch(cols, ["GET"], conns=[(f"10.0.0.{c}:1", "10.0.0.9:6379") for c in range(3)])


def _stream(name, data, cut_rng, start=None, opened=None, live=None):
    ts, conn, req, keys = data

    def read():
        if opened is not None:
            opened.append(name)
            live["now"] += 1
            live["most"] = max(live["most"], live["now"])
        try:
            i = 0
            while i < len(ts):
                j = i + int(cut_rng.integers(1, 40))
                yield _batch(ts[i:j], conn[i:j], req[i:j], keys[i:j])
                i = j
        finally:
            if live is not None:
                live["now"] -= 1
    return Stream(name, read, start)


def _merged(streams):
    return pa.Table.from_batches(list(merge_streams(streams)), schema=SCHEMA).to_pandas()


def test_merge_does_not_depend_on_the_cuts_and_keeps_commands_whole():
    rng = np.random.default_rng(5)
    data = [_rows(rng, 300, k) for k in range(4)]
    first = _merged([_stream(f"s{k}", d, np.random.default_rng(1)) for k, d in enumerate(data)])
    second = _merged([_stream(f"s{k}", d, np.random.default_rng(99), start=int(d[0][0]))
                      for k, d in enumerate(data)])
    assert first.equals(second)
    assert len(first) == 1200 and (np.diff(first["ts_ns"].to_numpy()) >= 0).all()
    # Each stream's rows in their own order; ties between streams by stream.
    stream = first["key"].str.extract(r"s(\d+)k(\d+)").astype(int)
    for k in range(4):
        assert (np.diff(stream[stream[0] == k][1].to_numpy()) > 0).all()
    tie = first["ts_ns"].to_numpy()
    assert (np.diff(stream[0].to_numpy())[np.diff(tie) == 0] >= 0).all()
    # req: one per command of every stream, its rows together; conn: one per connection of every stream.
    assert first["req"].nunique() == sum(len(np.unique(d[2])) for d in data)
    assert (np.diff(first["req"].to_numpy()) >= 0).all()
    assert first["conn"].nunique() == 4 * 3


def test_streams_are_opened_when_the_merge_reaches_them():
    rng = np.random.default_rng(2)
    opened, live = [], {"now": 0, "most": 0}
    streams = []
    for k in range(20):  # consecutive in time, like one host's rotated captures
        ts, conn, req, keys = _rows(rng, 50, k)
        ts = ts + k * 1000
        streams.append(_stream(f"s{k:02}", (ts, conn, req, keys), np.random.default_rng(k), start=int(ts[0]),
                               opened=opened, live=live))
    got = sum(rb.num_rows for rb in merge_streams(streams))
    assert got == 1000
    assert opened == [f"s{k:02}" for k in range(20)]
    # One after another: a stream is opened when the merge reaches its start, and let go once it ends.
    assert live["most"] <= 2 and live["now"] == 0
