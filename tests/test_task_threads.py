"""A task on a Dask worker takes the threads its worker was given, no more: a real scheduler and a worker
started with one thread (`dask worker --nthreads 1`), as a user starts them, run a sweep of several
simulations over a keys trace, a Parquet trace, an oracleGeneral trace (plain and zstd) and a capture. Measured in the worker, the task takes about one core (its
process's CPU time over its wall time) and its own thread does the work (the process's CPU time over the
task thread's), where the same sweep run here, outside any worker, has other threads do most of it (the
simulations on threads of their own, the trace read beside them). The results are the same.

The serial path is judged by CPU times alone: its wall time says how many cores it took only on an idle
machine, and the cores of this one are shared with other work."""

import os
import resource
import struct
import subprocess
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cachescope import _native
from cachescope.simulate.engine import simulate_trace

# Several simulations, so that the serial path has jobs for every core (each run on a thread of its own).
SWEEP = {"lru": "2e3,2e4,2e5", "wtinylfu": "2e4,2e5", "s3fifo": "2e4", "fifo": "2e4"}
LOOKUPS = 1_500_000
# The worker's process does a little besides the task (heartbeats, its event loop, its profiler): a task on
# one thread is under this, both in cores and in its process's CPU time over its own thread's.
ONE_CORE = 1.2
# The serial path runs each of the sweep's 8 simulations on a thread of its own: the thread that called
# takes at most its share of them.
MOSTLY_OTHERS = 2.0


def _cpu_s() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _threads_cpu_s() -> dict:
    """CPU seconds of each thread of this process now, by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def measured_sweep(path: str) -> dict:
    """The sweep over `path` in this process: its hit counts, the cores it took (the process's CPU time over
    wall time), and the CPU time of the thread that ran it with the threads it started, over its own. The
    threads that were there before (a Dask worker's event loop, its profiler: their time follows the wall
    clock, which other work on this machine stretches) are left out."""
    before, me = _threads_cpu_s(), threading.get_native_id()
    cpu, own, wall = _cpu_s(), time.thread_time(), time.perf_counter()
    result = simulate_trace(path, **SWEEP)
    cpu, own, wall = _cpu_s() - cpu, time.thread_time() - own, time.perf_counter() - wall
    after = _threads_cpu_s()
    others_before = sum(after[t] - before[t] for t in before if t != me and t in after)
    return {"hits": [(r["policy"], r["capacity"], r["hits"]) for r in result.summary_records()],
            "cores": cpu / wall, "all_threads_over_own": (cpu - others_before) / max(own, 1e-6)}


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """A keys trace and a Parquet trace of the same Zipf-distributed lookups."""
    d = tmp_path_factory.mktemp("threads")
    rng = np.random.default_rng(7)
    keys = rng.zipf(1.1, LOOKUPS) % 400_000
    keys_path = d / "lookups.keys"
    keys_path.write_text("\n".join(map(str, keys.tolist())) + "\n")
    names = pa.DictionaryArray.from_arrays(keys.astype(np.int32), pa.array([f"user:{k}" for k in range(400_000)]))
    table = pa.table({"op": pa.DictionaryArray.from_arrays(np.zeros(LOOKUPS, np.int32), pa.array(["read"])),
                      "key": names,
                      "req": pa.array(np.arange(LOOKUPS, dtype=np.uint64))})
    parquet_path = d / "lookups.parquet"
    pq.write_table(table, parquet_path, row_group_size=1 << 17)
    # libCacheSim's oracleGeneral records (time, id, size, next use), plain and zstd-compressed.
    records = np.zeros(LOOKUPS, dtype=[("ts", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    records["ts"], records["id"], records["size"], records["next"] = np.arange(LOOKUPS) // 1000, keys, 100, -1
    oracle_path = d / "lookups.oracleGeneral"
    oracle_path.write_bytes(records.tobytes())
    subprocess.run(["zstd", "-q", "-f", str(oracle_path), "-o", str(oracle_path) + ".zst"], check=True)
    pcap_path = d / "lookups.pcap"
    pcap_path.write_bytes(_capture_of_gets(keys[:CAPTURE_LOOKUPS]))
    return {"keys": str(keys_path), "parquet": str(parquet_path), "oracleGeneral": str(oracle_path),
            "oracleGeneral.zst": str(oracle_path) + ".zst", "pcap": str(pcap_path)}


CAPTURE_LOOKUPS = 500_000


def _capture_of_gets(keys, connections: int = 8, pipeline: int = 100) -> bytes:
    """A pcap of `connections` connections to port 6379 taking turns, each pipelining `pipeline` GETs of the
    next keys, then their replies (one segment each way, 1 us apart): Ethernet, IPv4 and TCP headers packed
    here, checksums zero (the parser does not check them)."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)]
    server, t = (bytes([10, 0, 0, 1]), 6379), 1_700_000_000 * 10**9
    seq = {}  # the next sequence number of each direction of each connection, by (source, destination)

    def segment(src, dst, payload, flags):
        nonlocal t
        t += 1000
        tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq.get((src, dst), 1000) & 0xFFFFFFFF,
                          seq.get((dst, src), 1000) & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 1, 0x4000, 64, 6, 0, src[0], dst[0])
        frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp + payload
        out.append(struct.pack("<IIII", *divmod(t, 10**9), len(frame), len(frame)) + frame)
        seq[src, dst] = seq.get((src, dst), 1000) + len(payload) + (flags & 0x02 != 0)

    clients = [(bytes([10, 1, 0, c]), 40000 + c) for c in range(connections)]
    for c in clients:  # handshakes: SYN, SYN-ACK, ACK
        segment(c, server, b"", 0x02)
        segment(server, c, b"", 0x12)
        segment(c, server, b"", 0x10)
    for i, at in enumerate(range(0, len(keys), pipeline)):
        c, batch = clients[i % connections], keys[at:at + pipeline]
        segment(c, server, b"".join(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(k), k)
                                    for k in (b"user:%d" % k for k in batch.tolist())), 0x18)
        segment(server, c, b"$10\r\nvalue-0123\r\n" * len(batch), 0x18)
    return b"".join(out)


@pytest.fixture(scope="module")
def one_thread_worker():
    """A `dask scheduler` and one `dask worker --nthreads 1` on loopback; a client of them."""
    from distributed import Client

    from test_dask import dask_cluster

    # The worker imports this module to run `measured_sweep`, and cachescope from the same place as here.
    tests = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([tests, os.path.dirname(tests), os.environ.get("PYTHONPATH", "")])
    with dask_cluster(1, env={**os.environ, "PYTHONPATH": path}) as address:
        with Client(address, timeout="30s") as client:
            yield client


@pytest.mark.parametrize("fmt", ["keys", "parquet", "oracleGeneral", "oracleGeneral.zst", "pcap"])
def test_a_task_on_a_one_thread_worker_takes_one_core_and_the_serial_path_more(traces, one_thread_worker, fmt):
    path = traces[fmt]
    on_worker = one_thread_worker.submit(measured_sweep, path, pure=False).result()
    here = measured_sweep(path)
    assert on_worker["hits"] == here["hits"]
    assert on_worker["cores"] < ONE_CORE, f"the task took {on_worker['cores']:.2f} cores on a 1-thread worker"
    assert on_worker["all_threads_over_own"] < ONE_CORE, \
        f"threads other than the task's took {on_worker['all_threads_over_own'] - 1:.0%} of its thread's CPU time"
    assert here["all_threads_over_own"] > MOSTLY_OTHERS, \
        f"the serial path's own thread did {1 / here['all_threads_over_own']:.0%} of the work: no threads beside it?"


def read_all(path: str, threads: int | None) -> tuple[int, float]:
    """Every batch of an object trace's reader given `threads`: the keys read, and the CPU time of this
    process over that of the thread that read (1.0: nothing ran on another thread)."""
    cpu, own, n = _cpu_s(), time.thread_time(), 0
    reader = _native.ObjectReader(path, "oracleGeneral", threads=threads)
    while (batch := reader.next_batch(1 << 18)) is not None:
        n += len(batch["keys"])
    return n, (_cpu_s() - cpu) / max(time.thread_time() - own, 1e-6)


@pytest.mark.parametrize("fmt", ["oracleGeneral", "oracleGeneral.zst"])
def test_an_object_trace_read_under_a_one_thread_limit_is_read_on_the_callers_thread_alone(traces, fmt):
    # Reading is all there is here (ids hashed, a compressed file decoded), so threads beside the caller's
    # show plainly: without a limit they take a good part of it, under a limit of 1 none.
    read, alone = read_all(traces[fmt], 1)
    _, unlimited = read_all(traces[fmt], None)
    assert read == LOOKUPS
    assert alone < 1.1, f"threads beside the caller's took {alone - 1:.0%} of its CPU time under a limit of 1"
    assert unlimited > 1.2, f"without a limit, threads beside the caller's took only {unlimited - 1:.0%}"
