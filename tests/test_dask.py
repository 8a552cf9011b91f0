"""Several captures parsed and sweeps simulated on Dask: a real scheduler and two workers started here on
loopback (`dask scheduler`, `dask worker`), and a LocalCluster (`--workers 2`), give the serial run's rows and
results; a capture that cannot be parsed is named while the others are written; a worker killed mid-task has
its task run again, and the answer is still the serial one; a fleet of independent pods split into tasks of
pod subsets gives the serial fleet; an address where no scheduler answers fails in one line."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from batched_trace import KEY_PATTERN, write_batched_trace
from conftest import REPO, run_cli
from fleet_captures import REDIS_PORT, SAMPLE, replicate, write_fleet


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_workers(address: str, n: int, timeout: float = 90) -> None:
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(n, timeout=timeout)


@contextmanager
def dask_cluster(workers: int, env: dict | None = None):
    """A `dask scheduler` and `workers` single-threaded `dask worker`s on loopback, as a user starts them,
    each with `env` (default: this process's); yields the scheduler's address once every worker is there."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {**(os.environ if env is None else env), "DASK_LOGGING__DISTRIBUTED": "error"}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--no-dashboard"], env=quiet,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for _ in range(workers):
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads",
                                       "1", "--host", "127.0.0.1", "--no-dashboard"], env=quiet,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        _wait_for_workers(address, workers)
        yield address
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="module")
def scheduler():
    """A `dask scheduler` and two single-threaded `dask worker`s on loopback, as a user starts them."""
    with dask_cluster(2) as address:
        yield address


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return write_fleet(tmp_path_factory.mktemp("fleet"))


def _parse(tmp, caps, out, *cluster, rc=0):
    return run_cli("parse.py", *caps, "-o", out, "--no-progress", "--port", "6379", *cluster,
                   "--stats-json", tmp / f"{abs(hash((str(out), cluster)))}.json", check_rc=rc)


def test_parse_on_a_real_cluster_and_a_local_one_gives_the_serial_rows(tmp, fleet, scheduler):
    caps = [fleet["host1"], fleet["host2"], fleet["host3"], fleet["redis"]]
    bad = tmp / "cut.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1")
    serial = _parse(tmp, [*caps, bad], tmp / "serial.parquet", "--workers", "0", rc=2)
    on_cluster = _parse(tmp, [*caps, bad], tmp / "cluster.parquet", "--scheduler", scheduler, rc=2)
    local = _parse(tmp, caps, tmp / "local.parquet", "--workers", "2")
    expected = pq.read_table(tmp / "serial.parquet")
    assert expected.num_rows > 100
    assert pq.read_table(tmp / "cluster.parquet").equals(expected)
    assert pq.read_table(tmp / "local.parquet").equals(expected)
    for proc in (serial, on_cluster):
        errors = [line for line in proc.stderr.splitlines() if "error" in line]
        assert len(errors) == 1 and str(bad) in errors[0], proc.stderr
        assert "Traceback" not in proc.stderr
    assert "clock offset" in local.stderr
    # The dataset on the cluster: the same parts as here.
    _parse(tmp, caps, f"{tmp}/ds_serial/", "--workers", "0")
    _parse(tmp, caps, f"{tmp}/ds_cluster/", "--scheduler", scheduler)
    names = sorted(p.relative_to(tmp / "ds_serial") for p in (tmp / "ds_serial").rglob("*.parquet"))
    assert len(names) == 4
    assert names == sorted(p.relative_to(tmp / "ds_cluster") for p in (tmp / "ds_cluster").rglob("*.parquet"))
    for n in names:
        assert pq.read_table(tmp / "ds_cluster" / n).equals(pq.read_table(tmp / "ds_serial" / n))
    assert not [p for p in (tmp / "ds_cluster").rglob(".*")]  # no partial part left


SWEEP = ["--lru", "8,32", "--fifo", "16", "--pods", "1,3", "--route", "random,entity", "--curve", "lru",
         "--json", "--no-progress"]


def test_sweep_on_a_real_cluster_and_a_local_one_gives_the_serial_results(tmp, fleet, scheduler):
    caps = [fleet["host1"], fleet["host2"], fleet["host3"]]
    _parse(tmp, caps, f"{tmp}/fleet/", "--workers", "0")
    trace = f"{tmp}/fleet/"
    serial = run_cli("simulate.py", trace, *SWEEP, "--timeline", tmp / "serial.csv", check_rc=0)
    cluster = run_cli("simulate.py", trace, *SWEEP, "--timeline", tmp / "cluster.csv", "--scheduler", scheduler,
                      check_rc=0)
    local = run_cli("simulate.py", trace, "--lru", "8,32", "--route", "client", "--json", "--no-progress",
                    "--workers", "2", check_rc=0)
    local_serial = run_cli("simulate.py", trace, "--lru", "8,32", "--route", "client", "--json", "--no-progress",
                           check_rc=0)
    doc = json.loads(serial.stdout)
    assert len(doc["results"]) == 9 and doc["curves"]  # 2 + 1 capacities, x1 once, x3 twice; the curve
    assert json.loads(cluster.stdout) == doc
    assert (tmp / "cluster.csv").read_text() == (tmp / "serial.csv").read_text()
    assert json.loads(local.stdout) == json.loads(local_serial.stdout)


def _kill_a_busy_worker(scheduler, proc, timeout=120):
    """Kills (SIGKILL) the process of a worker seen running a task while `proc` runs; returns its pid."""
    from distributed import Client

    with Client(scheduler, timeout="30s") as client:
        deadline = time.time() + timeout
        while proc.poll() is None and time.time() < deadline:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                return pid
            time.sleep(0.05)
    return None


def _background(*args):
    return subprocess.Popen([sys.executable, *map(str, args)],
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_worker_killed_mid_parse_loses_no_part(tmp, scheduler):
    """Four captures of the bundled sample written 6 times over; the worker parsing one is killed: its
    capture is parsed again elsewhere, and the dataset holds every part, as the serial run writes them."""
    sample = SAMPLE.read_bytes()
    caps = []
    for h in range(4):
        caps.append(tmp / f"host{h}.pcap")
        replicate(sample, 6, h, caps[-1])
    common = [*caps, "--port", REDIS_PORT, "--no-progress"]
    proc = _background("parse.py", *common, "-o", f"{tmp}/cluster/", "--scheduler", scheduler)
    killed = _kill_a_busy_worker(scheduler, proc)
    out, err = proc.communicate(timeout=300)
    assert killed is not None, "no task was seen running"
    assert proc.returncode == 0, err
    run_cli("parse.py", *common, "-o", f"{tmp}/serial/", "--workers", "0", check_rc=0)
    parts = sorted(p.relative_to(tmp / "serial") for p in (tmp / "serial").rglob("*.parquet"))
    assert len(parts) == 4
    assert parts == sorted(p.relative_to(tmp / "cluster") for p in (tmp / "cluster").rglob("*.parquet"))
    for part in parts:
        assert pq.read_table(tmp / "cluster" / part).equals(pq.read_table(tmp / "serial" / part))
    assert not list((tmp / "cluster").rglob(".*"))
    _wait_for_workers(scheduler, 2)


def test_a_worker_killed_mid_task_has_its_task_run_again(tmp, scheduler):
    """Four simulations over a trace long enough to catch them running; the test kills the worker process
    running one (its nanny starts another), and the answer is the serial one."""
    rng = np.random.default_rng(3)
    keys = (rng.zipf(1.2, 3_000_000) % 200_000).astype(str)
    trace = tmp / "keys.txt"
    trace.write_text("\n".join(keys) + "\n")
    sweep = ["--lru", "1000,5000,20000,80000", "--json", "--no-progress"]
    serial = run_cli("simulate.py", trace, *sweep, check_rc=0)
    proc = _background("simulate.py", trace, *sweep, "--scheduler", scheduler)
    killed = _kill_a_busy_worker(scheduler, proc)
    out, err = proc.communicate(timeout=300)
    assert killed is not None, "no task was seen running"
    assert proc.returncode == 0, err
    assert json.loads(out) == json.loads(serial.stdout)
    _wait_for_workers(scheduler, 2)  # the nanny's new worker joined, for the tests after


def test_fleets_split_by_pods_on_a_real_cluster_give_the_serial_fleets(tmp, scheduler, monkeypatch):
    """Sharded and client fleets run as tasks of pod subsets (two workers: each fleet in two parts), whose
    batches reach pods of both parts; the replicated fleet stays whole. Everything as the serial run: each
    pod's counters, the fleet's hits, commands served and round trips saved, the timeline with its spread."""
    import cachescope
    from cachescope.simulate.fleet_parts import merge_fleet_parts

    trace = write_batched_trace(tmp / "batched.parquet")
    sweep = ["--lru", "40,200", "--pods", "4", "--route", "entity,key-pattern,client,random", "--key-pattern",
             KEY_PATTERN, "--writes", "invalidate", "--window", "900", "--json", "--no-progress"]
    serial = run_cli("simulate.py", trace, *sweep, "--timeline", tmp / "serial.csv", check_rc=0)
    cluster = run_cli("simulate.py", trace, *sweep, "--timeline", tmp / "cluster.csv", "--scheduler", scheduler,
                      check_rc=0)
    doc = json.loads(serial.stdout)
    assert json.loads(cluster.stdout) == doc
    assert (tmp / "cluster.csv").read_text() == (tmp / "serial.csv").read_text()
    sharded = [r for r in doc["results"] if r["route"] in ("entity", "key-pattern")]
    assert len(sharded) == 4 and all(0 < r["round_trips_saved"] < sum(p["round_trips_saved"] for p in r["per_pod"])
                                     for r in sharded)
    assert "pod_hit_rate_median" in (tmp / "serial.csv").read_text().splitlines()[0]
    # The sweep did split them: the planned tasks, and a merge seen on the way.
    seen = []

    def spy(parts):
        seen.append(sorted(p["part"] for p in parts))
        return merge_fleet_parts(parts)

    monkeypatch.setattr("cachescope.simulate.sweep.merge_fleet_parts", spy)
    result = cachescope.simulate_trace(trace, lru=[40], pods=4, route="entity,client,random", scheduler=scheduler)
    assert seen == [[(0, 2), (1, 2)]] * 2
    serial = cachescope.simulate_trace(trace, lru=[40], pods=4, route="entity,client,random")
    pd.testing.assert_frame_equal(result.summary, serial.summary)
    pd.testing.assert_frame_equal(result.timeline, serial.timeline)


def _cli(*args):
    """A command with a generous timeout: a hang fails the test, a slow machine does not."""
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=120)


def _listener(backlog=1):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(backlog)
    return s, f"tcp://127.0.0.1:{s.getsockname()[1]}"


def test_an_address_where_no_scheduler_answers_is_one_line(tmp, fleet):
    """Refused (nothing listens), no answer (a listener whose queue is full drops new connections), something
    that accepts and says nothing, something that answers but is no scheduler (an HTTP server): one line
    naming the address and why, exit status 2. Dask alone retried a refused connection for 10 s, waited for a
    silent listener's greeting without end, and read an HTTP answer as a frame of 3 EiB (a MemoryError
    traceback)."""
    trace = write_batched_trace(tmp / "small.parquet", n=300)
    sweep = [trace, "--lru", "10", "--no-progress"]

    def one_line(proc, address, why):
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (proc.returncode, proc.stderr)
        assert address in lines[0] and why in lines[0], lines[0]

    refused, address = _listener()
    refused.close()
    one_line(_cli("simulate.py", *sweep, "--scheduler", address), address, "connection refused")
    full, address = _listener(backlog=0)
    waiting = socket.create_connection(full.getsockname())  # fills the queue: later connections get no answer
    try:
        one_line(_cli("simulate.py", *sweep, "--scheduler", address), address, "no answer within")
    finally:
        waiting.close()
        full.close()
    silent, address = _listener()  # the kernel accepts connections for it; it never says a word
    try:
        one_line(_cli("simulate.py", *sweep, "--scheduler", address), address, "said nothing within")
    finally:
        silent.close()
    http, address = _listener()

    def answer():
        conn, _ = http.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            time.sleep(1)

    threading.Thread(target=answer, daemon=True).start()
    try:
        one_line(_cli("parse.py", fleet["host1"], fleet["host2"], "-o", f"{tmp}/out/", "--scheduler", address),
                 address, "not as a Dask scheduler does")
    finally:
        http.close()


def test_a_sweep_on_a_cluster_reports_its_inputs_as_the_serial_run_does(tmp, fleet, scheduler):
    """What reading each capture found (the input section of the summary on stderr, and what the report
    reads), for one capture and for a merge of two."""
    import cachescope

    for trace in ([fleet["host1"]], [fleet["host1"], fleet["host2"]]):
        args = [*trace, "--lru", "8", "--pods", "2", "--route", "entity", "--port", "6379", "--no-progress"]
        serial = run_cli("simulate.py", *args, check_rc=0)
        cluster = run_cli("simulate.py", *args, "--scheduler", scheduler, check_rc=0)
        assert "packets" in serial.stderr and serial.stderr.count("packets") == len(trace)
        assert cluster.stderr == serial.stderr
        assert cluster.stdout == serial.stdout
        one = [str(t) for t in trace] if len(trace) > 1 else str(trace[0])
        here = cachescope.simulate_trace(one, lru=[8], ports=(6379,))
        there = cachescope.simulate_trace(one, lru=[8], ports=(6379,), scheduler=scheduler)
        assert there.input_reports == here.input_reports and len(here.input_reports) == len(trace)
        assert there.request == here.request and there.capture_stats == here.capture_stats
