"""parse.py's `.oracleGeneral` output: the next accesses are exact however the records are chunked, and
memory holds the unique keys, not every read (it held 16 bytes per read until the end: 4.2 GiB)."""

import tracemalloc

import numpy as np
import pyarrow as pa

from cachescope import _native
from cachescope.parse import writers
from cachescope.parse.schema import SCHEMA


def _batch(keys, ts0=1_700_000_000 * 10**9):
    n = len(keys)
    return pa.RecordBatch.from_arrays([
        pa.array(ts0 + np.arange(n, dtype=np.int64) * 10**6, pa.int64()), pa.array(np.zeros(n, np.uint32)),
        pa.array(np.arange(n, dtype=np.uint64)),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int8)), pa.array(["read", "write", "delete"])),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int16)), pa.array(["GET"])),
        pa.array([f"k{k}" for k in keys], pa.large_string()), pa.nulls(n, pa.large_string()),
        pa.array(np.full(n, 10, np.int32)), pa.nulls(n, pa.bool_()), pa.nulls(n, pa.int64()),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["c"])),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["s"])),
        pa.nulls(n, pa.dictionary(pa.int16(), pa.string())),
        pa.array(np.arange(n, dtype=np.uint64)),
    ], schema=SCHEMA)


def test_next_access_is_exact_across_chunks(tmp, monkeypatch):
    rng = np.random.default_rng(7)
    keys = rng.zipf(1.3, 5000) % 300
    monkeypatch.setattr(writers._OracleGeneral, "CHUNK", 97, raising=False)
    oracle = writers._OracleGeneral()
    for part in np.array_split(keys, 13):
        oracle.add(_batch(part))
    out = tmp / "t.oracleGeneral"
    oracle.write(str(out))
    rec = np.fromfile(out, dtype=writers._OracleGeneral.DTYPE)
    assert len(rec) == len(keys)
    assert (rec["next"] == _native.next_access(np.ascontiguousarray(rec["id"])).view(np.int64)).all()
    assert (rec["next"] >= -1).all() and (rec["next"] != -1).any()


def test_memory_holds_keys_not_reads(tmp, monkeypatch):
    monkeypatch.setattr(writers._OracleGeneral, "CHUNK", 1 << 16, raising=False)
    batch = _batch(np.arange(1 << 16) % 1000)
    tracemalloc.start()
    try:
        oracle = writers._OracleGeneral()
        for _ in range(64):  # 4 Mi reads of 1,000 keys: 64 MiB of per-read arrays the old writer kept
            oracle.add(batch)
        oracle.write(str(tmp / "t.oracleGeneral"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp / "t.oracleGeneral").stat().st_size == 24 << 22
    assert peak < 24 << 20, peak
