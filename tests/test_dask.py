"""Several captures parsed and sweeps simulated on Dask: a real scheduler and two workers started here on
loopback (`dask scheduler`, `dask worker`), and a LocalCluster (`--workers 2`), give the serial run's rows and
results; a capture that cannot be parsed is named while the others are written; a worker killed mid-task has
its task run again, and the answer is still the serial one."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from fleet_captures import REDIS_PORT, SAMPLE, replicate, write_fleet


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_workers(address: str, n: int, timeout: float = 90) -> None:
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(n, timeout=timeout)


@pytest.fixture(scope="module")
def scheduler():
    """A `dask scheduler` and two single-threaded `dask worker`s on loopback, as a user starts them."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "error"}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--no-dashboard"], env=quiet,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for _ in range(2):
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads",
                                       "1", "--host", "127.0.0.1", "--no-dashboard"], env=quiet,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        _wait_for_workers(address, 2)
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
