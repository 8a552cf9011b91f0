"""A Parquet trace of pipelined multi-key reads from several client hosts, for fleets split by pods: each
batch (two MGETs of three keys on one connection) reaches several pods of a sharded fleet, hot keys make many
batches hit whole, and a few writes invalidate."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

KEY_PATTERN = r"^mer_(\d+):"


def write_batched_trace(path, n: int = 30_000, seed: int = 5) -> str:
    rng = np.random.default_rng(seed)
    merchants, stores = rng.zipf(1.6, n) % 30, rng.zipf(1.3, n) % 400
    keys = [f"mer_{m}:st_{s}" for m, s in zip(merchants, stores)]
    req = np.arange(n) // 3  # commands of three keys
    conn = req % 6
    ops = np.where(rng.random(n) < 0.03, "write", "read")
    pq.write_table(pa.table({
        "ts_ns": pa.array(1_700_000_000_000_000_000 + np.arange(n) * 1_000_000, pa.int64()),
        "conn": pa.array(conn, pa.uint32()),
        "req": pa.array(req, pa.uint64()),
        "op": ops,
        "key": keys,
        "client": [f"10.0.0.{c % 3}:{40000 + c}" for c in conn],  # three hosts, two connections each
        "batch": pa.array(req // 12, pa.uint64()),  # each connection's two commands in one pipeline
    }), path)
    return str(path)
