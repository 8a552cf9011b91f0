"""`python bench/scale/make_dataset.py --lookups 1e9` writes a Parquet dataset of feature-store lookups under
bench/data/scale/: a folder of parts as `parse.py a.pcap b.pcap ... -o fleet/` writes them (one part per
service host, `host=H/date=D/hour=HH/H-redis.pcap.parquet`, the trace schema of DESIGN.md, the host in the
part's metadata, clients named `HOST:ip:port`), so that `simulate.py` reads it as a fleet capture's trace and
merges the hosts by time.

The traffic. Every host runs the same prediction service over `--duration` (15 min): its connections send
round trips of 1-4 pipelined commands, each command one of
  HMGET e_<id> <every field of the entity's feature view>   70%  (views of 6, 8, 10 or 12 fields: id mod 4)
  HGET  e_<id> <one field of that view>                     15%
  GET   emb_<id>                                            10%  (the entity's embedding)
  MGET  emb_<id> x 2..8 (each id drawn anew)                 5%
the entity drawn from a Zipf(`--alpha`) popularity over `--entities` ids (a bounded Pareto's inverse CDF,
floored: O(1) a draw, no table), its rank turned into an id by a fixed affine permutation, so that an id says
nothing about its popularity. Fields are the decimal xxHash32-like names of 40 features. Replies: 0.5% of the
entities do not exist (nil: `found` false, `value_size` null), values are 8 bytes a feature and 512 bytes an
embedding, and a command's latency is drawn once (10 us steps). Times are spread evenly over the duration
(the host's share of the lookups), so rows are in send order.

Generated in chunks (one Parquet row group each, ~1 M rows), so memory stays flat whatever `--lookups`; hosts
are independent streams (a numpy generator seeded with (seed, host)), written by `--jobs` processes. The same
options give the same files. Compact: keys and fields dictionary-encoded by the writer, times, commands and
round trips delta-encoded, zstd. The dataset's parameters, rows and bytes go to `_dataset.json` in it (a
name the dataset reader skips); an existing complete dataset with the same parameters is kept."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from cachescope.parse.schema import SCHEMA  # noqa: E402  the trace schema parse.py writes
from cachescope.trace.dataset_spec import PART_HOST_KEY  # noqa: E402

START_NS = 1_767_268_800 * 10**9  # 2026-01-01 12:00:00 UTC: 15 minutes stay in one hour's partition
COMMANDS = ["HMGET", "HGET", "GET", "MGET"]
MIX = np.cumsum([0.70, 0.15, 0.10, 0.05])
VIEW_SIZES = np.array([6, 8, 10, 12])
FEATURES = 40
CAPTURE_HOST = "redis1"  # the capture is taken on the Redis host: every service host is a client of it
CHUNK_ROWS = 1 << 20
MISSING_EVERY = 200  # ids divisible by it are entities that do not exist (0.5%)


def parse_count(text: str) -> int:
    value = float(text)
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text}")
    return int(value)


def options(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lookups", type=parse_count, default=10**7, help="lookups (rows) in all (default 1e7)")
    p.add_argument("--entities", type=parse_count, default=10**7, help="entity ids (default 1e7)")
    p.add_argument("--alpha", type=float, default=1.0, help="Zipf exponent of entity popularity (default 1.0)")
    p.add_argument("--hosts", type=int, default=8, help="service hosts, the clients (default 8)")
    p.add_argument("--conns", type=int, default=4, help="connections per service host (default 4)")
    p.add_argument("--parts", type=int, default=15, help="capture files, one part each (default 15: a minute each)")
    p.add_argument("--duration", type=float, default=900.0, help="seconds the traffic spans (default 900)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    p.add_argument("--out", help="the dataset's folder (default bench/data/scale/fs_n<lookups>_e<entities>_s<seed>)")
    a = p.parse_args(argv)
    if min(a.hosts, a.conns, a.parts, a.jobs) < 1 or a.duration <= 0 or a.alpha <= 0:
        p.error("--hosts, --conns, --parts, --jobs, --duration and --alpha must be positive")
    if a.lookups < a.parts:
        p.error("--lookups must be at least --parts")
    return a


def default_out(lookups: int, entities: int, seed: int) -> Path:
    return ROOT / "bench" / "data" / "scale" / f"fs_n{lookups:.0e}_e{entities:.0e}_s{seed}".replace("+", "")


def params(a) -> dict:
    return {k: getattr(a, k) for k in ("lookups", "entities", "alpha", "hosts", "conns", "parts", "duration", "seed")}


# ---- the traffic, vectorized over a chunk of commands --------------------------------------------------------
def zipf_ids(rng, n: int, entities: int, alpha: float) -> np.ndarray:
    """n entity ids: ranks from a bounded Pareto (the continuous Zipf) by inverse CDF, floored, then permuted
    by an affine map that is a bijection of [0, entities)."""
    u = rng.random(n)
    if abs(alpha - 1.0) < 1e-12:
        x = np.power(float(entities), u)
    else:
        top = float(entities) ** (1.0 - alpha)
        x = np.power((top - 1.0) * u + 1.0, 1.0 / (1.0 - alpha))
    rank = np.minimum(x.astype(np.int64) - 1, entities - 1)
    return (rank * _multiplier(entities) + 12_345) % entities


def _multiplier(entities: int) -> int:
    m = 2_654_435_761 % entities or 1
    while np.gcd(m, entities) != 1:
        m += 1
    return m


def feature_names(seed: int) -> list[str]:
    rng = np.random.default_rng([seed, 1_000_003])
    return [str(v) for v in rng.choice(2**32, FEATURES, replace=False)]


def view_fields(seed: int) -> np.ndarray:
    """The fields of each view (-1 past its size): views take their features from the catalog in turn."""
    rng = np.random.default_rng([seed, 1_000_004])
    table = np.full((len(VIEW_SIZES), VIEW_SIZES.max()), -1, np.int64)
    for v, size in enumerate(VIEW_SIZES):
        table[v, :size] = np.sort(rng.choice(FEATURES, size, replace=False))
    return table


class PartStream:
    """One capture file's commands and rows (the `part`-th of the capture's rotations), chunk after chunk."""

    def __init__(self, a, part: int):
        self.a, self.part = a, part
        self.rng = np.random.default_rng([a.seed, part])
        first, last = (a.lookups * part) // a.parts, (a.lookups * (part + 1)) // a.parts
        self.rows_total, self.rows_done = last - first, 0
        self.req = 0
        self.conns = a.hosts * a.conns
        self.batches = np.zeros(self.conns, np.int64)  # round trips sent so far on each connection
        self.views = view_fields(a.seed)
        self.start_ns = START_NS + int(part * a.duration * 1e9 / a.parts)
        self.ns_per_row = a.duration * 1e9 / a.lookups
        self.clients = [f"{CAPTURE_HOST}:10.0.{h}.{10 + c}:{40000 + c}" for h in range(a.hosts) for c in range(a.conns)]

    def chunk(self) -> pa.RecordBatch | None:
        left = self.rows_total - self.rows_done
        if left <= 0:
            return None
        a, rng = self.a, self.rng
        # Commands for about CHUNK_ROWS rows (6.8 rows a command on average), cut to the rows left.
        n = max(16, int(min(CHUNK_ROWS, left) / 6.5))
        kind = np.searchsorted(MIX, rng.random(n) * MIX[-1], side="right").astype(np.int64)
        kind = np.minimum(kind, 3)
        entity = zipf_ids(rng, n, a.entities, a.alpha)
        view = entity % len(VIEW_SIZES)
        sizes = np.ones(n, np.int64)
        sizes[kind == 0] = VIEW_SIZES[view[kind == 0]]
        mget = kind == 3
        sizes[mget] = rng.integers(2, 9, int(mget.sum()))
        ends = np.cumsum(sizes)
        if ends[-1] > left:  # the last command keeps only the rows left (at least one)
            n = int(np.searchsorted(ends, left, side="left")) + 1
            kind, entity, view, sizes = kind[:n], entity[:n], view[:n], sizes[:n]
            sizes[-1] -= int(ends[n - 1] - left)
            ends = np.cumsum(sizes)
        rows = int(ends[-1])
        starts = ends - sizes
        offset = np.arange(rows) - np.repeat(starts, sizes)  # each row's place in its command

        # Round trips: 1-4 consecutive commands, each on one of the service's connections.
        trip_sizes = rng.integers(1, 5, n)
        trip_of_cmd = np.repeat(np.arange(n), trip_sizes)[:n]
        trips = int(trip_of_cmd[-1]) + 1
        trip_conn = rng.integers(0, self.conns, trips)
        trip_batch = self._batch_ordinals(trip_conn)
        conn_of_cmd, batch_of_cmd = trip_conn[trip_of_cmd], trip_batch[trip_of_cmd]

        # Keys: the command's entity hash or embedding, or for an MGET one embedding per row, drawn anew.
        # Their text is made once per command (and per MGET row), then taken for each row.
        mget_rows = np.flatnonzero(np.repeat(kind == 3, sizes))
        mget_ids = zipf_ids(rng, len(mget_rows), a.entities, a.alpha)
        text_ids = np.concatenate([entity, mget_ids])
        text_hash = np.concatenate([kind <= 1, np.zeros(len(mget_ids), bool)])
        texts = pc.binary_join_element_wise(pc.if_else(pa.array(text_hash), "e_", "emb_"),
                                            pc.cast(pa.array(text_ids), pa.string()), "")
        key_of_row = np.repeat(np.arange(n), sizes)
        key_of_row[mget_rows] = n + np.arange(len(mget_rows))
        key = texts.cast(pa.large_string()).take(pa.array(key_of_row))
        row_id = text_ids[key_of_row]
        # Fields from a flat table: HMGET row j reads its view's field j, HGET the one it picked, a plain key
        # a slot of nulls (-1). A command's rows read consecutive slots from its base.
        width = VIEW_SIZES.max()
        flat = np.concatenate([self.views.ravel(), np.full(width, -1)])
        base = view * width
        hget = kind == 1
        base[hget] += rng.integers(0, 1 << 30, int(hget.sum())) % VIEW_SIZES[view[hget]]
        base[kind >= 2] = flat.size - width
        field_index = flat[np.repeat(base, sizes) + offset]
        field = pa.array(feature_names(a.seed), pa.large_string()).take(
            pa.array(field_index, mask=field_index < 0))
        # Replies: nil for entities that do not exist; a latency per command in 10 us steps.
        found = row_id % MISSING_EVERY != 0
        row_kind = np.repeat(kind.astype(np.int16), sizes)
        value_size = np.array([8, 8, 512, 512], np.int32)[row_kind]
        latency = (np.minimum(rng.lognormal(np.log(25), 0.6, n), 2000).astype(np.int64) + 1) * 10_000

        ts = self.start_ns + ((self.rows_done + starts) * self.ns_per_row).astype(np.int64)
        self.rows_done += rows
        req = self.req + np.arange(n, dtype=np.uint64)
        self.req += n
        conn = np.repeat(conn_of_cmd, sizes)
        columns = {
            "ts_ns": pa.array(np.repeat(ts, sizes)),
            "conn": pa.array(conn.astype(np.uint32)),
            "req": pa.array(np.repeat(req, sizes)),
            "op": pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int8)), ["read", "write", "delete"]),
            "cmd": pa.DictionaryArray.from_arrays(pa.array(row_kind), COMMANDS),
            "key": key,
            "field": field,
            "value_size": pa.array(value_size, mask=~found),
            "found": pa.array(found),
            "latency_ns": pa.array(np.repeat(latency, sizes)),
            "client": pa.DictionaryArray.from_arrays(pa.array(conn.astype(np.int32)), self.clients),
            "server": pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int32)), ["10.1.0.1:6379"]),
            "error": pa.DictionaryArray.from_arrays(pa.nulls(rows, pa.int16()), pa.array([], pa.string())),
            "batch": pa.array(np.repeat(batch_of_cmd.astype(np.uint64), sizes)),
        }
        return pa.RecordBatch.from_arrays([columns[f.name] for f in SCHEMA], schema=SCHEMA)

    def _batch_ordinals(self, trip_conn: np.ndarray) -> np.ndarray:
        """Each round trip's ordinal among its connection's, continuing from the previous chunks."""
        order = np.argsort(trip_conn, kind="stable")
        sorted_conn = trip_conn[order]
        group_start = np.searchsorted(sorted_conn, np.arange(self.conns))
        ordinal = np.empty(len(trip_conn), np.int64)
        ordinal[order] = np.arange(len(trip_conn)) - group_start[sorted_conn]
        ordinal += self.batches[trip_conn]
        self.batches += np.bincount(trip_conn, minlength=self.conns)
        return ordinal


# ---- writing ------------------------------------------------------------------------------------------------
def part_path(out: Path, part: int) -> Path:
    """Where parse.py puts the part of capture `redis1-<part>.pcap`: under its host and hour (Hive style)."""
    return out / f"host={CAPTURE_HOST}" / "date=2026-01-01" / "hour=12" / f"{CAPTURE_HOST}-{part:04d}.pcap.parquet"


def write_part(a, out: Path, part: int) -> dict:
    """Writes one part (beside its name, renamed once complete); returns its rows, commands and bytes."""
    final = part_path(out, part)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.parent / f".{final.name}.partial"
    stream = PartStream(a, part)
    schema = SCHEMA.with_metadata({PART_HOST_KEY: CAPTURE_HOST.encode()})
    delta = ["ts_ns", "req", "batch"]  # sorted or nearly: deltas of a few bits, where a dictionary would not fit
    writer = pq.ParquetWriter(
        partial, schema, compression="zstd", write_statistics=["ts_ns", "req", "conn"],
        use_dictionary=[n for n in SCHEMA.names if n not in delta],
        column_encoding={n: "DELTA_BINARY_PACKED" for n in delta},
        dictionary_pagesize_limit=16 << 20)  # a row group's distinct keys fit in its dictionary
    rows = 0
    while (rb := stream.chunk()) is not None:
        writer.write_batch(rb, row_group_size=rb.num_rows)
        rows += rb.num_rows
    writer.close()
    os.replace(partial, final)
    return {"part": part, "rows": rows, "commands": stream.req, "bytes": final.stat().st_size}


def _children_cpu() -> float:
    """User and system seconds of the worker processes that have ended (the pool's, once it is shut down)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv=None) -> int:
    a = options(argv)
    out = Path(a.out) if a.out else default_out(a.lookups, a.entities, a.seed)
    manifest = out / "_dataset.json"
    if manifest.exists() and json.loads(manifest.read_text()).get("params") == params(a):
        print(f"{out}: already generated ({manifest.name})")
        return 0
    partials = list(out.glob("**/.*.partial")) if out.exists() else []
    if partials and time.time() - max(f.stat().st_mtime for f in partials) < 120:
        print(f"{out}: being written by another process (its parts grew in the last 2 minutes)", file=sys.stderr)
        return 2
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    t = time.perf_counter()
    cpu = _children_cpu()
    with ProcessPoolExecutor(max_workers=min(a.jobs, a.parts)) as pool:
        parts = list(pool.map(write_part, [a] * a.parts, [out] * a.parts, range(a.parts)))
    seconds, cpu_s = time.perf_counter() - t, _children_cpu() - cpu
    rows = sum(p["rows"] for p in parts)
    size = sum(p["bytes"] for p in parts)
    summary = {"params": params(a), "rows": rows, "commands": sum(p["commands"] for p in parts), "bytes": size,
               "bytes_per_row": size / rows, "seconds": seconds, "rows_per_s": rows / seconds, "cpu_s": cpu_s,
               "parts": parts}
    manifest.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{out}: {rows:,} lookups, {summary['commands']:,} commands, {a.parts} parts, "
          f"{size / 2**20:,.1f} MiB ({size / rows:.2f} bytes a lookup), in {seconds:.1f} s "
          f"({rows / seconds / 1e6:.2f} M rows/s; {cpu_s:.0f} CPU s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
