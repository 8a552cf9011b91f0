"""Inputs as users have them, with real parts: a rotated capture compressed as tcpdump -z leaves it (and as
capture.py --compress does), read as it is, gives the rows and the simulation of the plain files, byte for
byte; and a live `tcpdump -w - | simulate.py -` pipe, stopped with SIGINT, answers for every lookup the
client sent before the stop, in bounded memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import pyarrow.parquet as pq
import redis

from . import traffic
from .servers import Process, Tcpdump
from .test_capture_cli import finish, start_capture

REPO = Path(__file__).resolve().parents[2]
DECOMPRESS = {".gz": ["gzip", "-dc"], ".zst": ["zstd", "-dcq"]}


def run(*args, **kw):
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=REPO, capture_output=True, timeout=300, **kw)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc


def plain_copies(files, folder):
    """Each file decompressed into `folder` (a plain one copied), in the same order."""
    folder.mkdir()
    out = []
    for f in files:
        dst = folder / f.name.rsplit(".", 1)[0] if f.suffix in DECOMPRESS else folder / f.name
        with open(dst, "wb") as o:
            if f.suffix in DECOMPRESS:
                subprocess.run([*DECOMPRESS[f.suffix], str(f)], stdout=o, check=True)
            else:
                o.write(f.read_bytes())
        out.append(dst)
    return out


def assert_same_answers(compressed, plain, port, tmp_path):
    """Rows (the .txt trace, byte for byte; the Parquet tables) and the simulation of all files merged (those
    with commands: a rotation can leave a file of ACKs only, which a simulation refuses)."""
    with_rows = []
    for i, (c, p) in enumerate(zip(compressed, plain)):
        a, b = tmp_path / f"c{i}.txt", tmp_path / f"p{i}.txt"
        run("parse.py", c, "-o", a, "--port", port, "--no-progress")
        run("parse.py", p, "-o", b, "--port", port, "--no-progress")
        assert a.read_bytes() == b.read_bytes(), c
        if a.stat().st_size:
            with_rows.append(i)
        pa_, pb = tmp_path / f"c{i}.parquet", tmp_path / f"p{i}.parquet"
        run("parse.py", c, "-o", pa_, "--port", port, "--no-progress")
        run("parse.py", p, "-o", pb, "--port", port, "--no-progress")
        import pyarrow.parquet as pq

        assert pq.read_table(pa_).equals(pq.read_table(pb)), c
    sims = []
    assert len(with_rows) >= 2
    for files in (compressed, plain):
        out = run("simulate.py", *[files[i] for i in with_rows], "--port", port, "--lru", "100,10000", "--s3fifo", "1000", "--json",
                  "--no-progress")
        doc = json.loads(out.stdout)
        doc["trace"].pop("path", None)
        sims.append(doc)
    assert sims[0] == sims[1]
    assert sims[0]["trace"]["lookups"] > 1_000


@pytest.mark.slow  # ~15 s; test_compressed_inputs.py and test_capture_compress.py test compression on every run
def test_a_capture_rotated_and_gzipped_by_tcpdump_reads_as_the_plain_files(redis_server, tmp_path):
    out = tmp_path / "rot.pcap"
    dump = Process(["tcpdump", "-i", "lo", "-w", str(out), "-s", "0", "-B", "65536", "-U", "--immediate-mode",
                    "-Z", "root", "-C", "1", "-z", "gzip", "port", str(redis_server.port)], "stderr")
    assert dump.wait_for("listening on", 15), dump.output()
    traffic.drive(redis_server.host, redis_server.port, seed=7, scale=0.5)  # several MB: several files
    time.sleep(1.0)
    dump.stop(signal.SIGINT)
    # tcpdump gzips each file it rotates away from (not the last): wait for every gzip to finish.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        files = sorted(tmp_path.glob("rot.pcap*"), key=lambda f: int(f.name[8:].split(".")[0] or 0))
        if all(f.suffix == ".gz" for f in files[:-1]) and len(files) >= 3:
            break
        time.sleep(0.2)
    assert len(files) >= 3 and all(f.suffix == ".gz" for f in files[:-1]), [f.name for f in files]
    assert_same_answers(files, plain_copies(files, tmp_path / "plain"), str(redis_server.port), tmp_path)


@pytest.mark.slow  # ~15 s; test_compressed_inputs.py and test_capture_compress.py test compression on every run
def test_capture_py_compress_zstd_rotated_files_read_as_the_plain_files(redis_server, tmp_path):
    out = tmp_path / "z.pcap"
    proc = start_capture("--port", redis_server.port, "-i", "lo", "--duration", "4s", "--rotate-size", "1MB",
                         "--compress", "zstd", "-o", out)
    traffic.drive(redis_server.host, redis_server.port, seed=8, scale=0.5)
    stderr = finish(proc)
    files = sorted(tmp_path.glob("z.pcap*"), key=lambda f: int(f.name[6:].split(".")[0] or 0))
    assert len(files) >= 3 and all(f.suffix == ".zst" for f in files), [f.name for f in files]
    assert all(f"wrote {f} (" in stderr for f in files), stderr
    assert_same_answers(files, plain_copies(files, tmp_path / "plain"), str(redis_server.port), tmp_path)


def test_live_tcpdump_pipe_stopped_by_sigint_covers_every_lookup_sent(redis_server, tmp_path):
    port = str(redis_server.port)
    dump = subprocess.Popen(["tcpdump", "-i", "lo", "-w", "-", "-s", "0", "-B", "65536", "-U", "--immediate-mode",
                             "-Z", "root", "port", port], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    sim = subprocess.Popen([sys.executable, "simulate.py", "-", "--port", port, "--lru", "100,100000", "--json"],
                           cwd=REPO, stdin=dump.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    dump.stdout.close()
    try:
        time.sleep(1.5)  # tcpdump listening
        r = redis.Redis(host=redis_server.host, port=redis_server.port, protocol=2)
        r.hset("st_0", mapping={str(f): "v" for f in range(8)})
        lookups, peak = 0, 0
        for phase in range(3):
            for i in range(1_500):
                fields = [str(f) for f in range((i % 5) + 1)]
                r.hmget(f"st_{i % 300}", fields)
                lookups += len(fields)
                if i % 10 == 0:
                    r.get(f"plain_{i % 50}")
                    lookups += 1
            peak = max(peak, psutil.Process(sim.pid).memory_info().rss)
            time.sleep(1.2)
        r.close()
        time.sleep(2.5)  # the kernel hands packets to tcpdump up to a second late
        assert sim.poll() is None, sim.stderr.read().decode()
        sim.send_signal(signal.SIGINT)
        stdout, stderr = sim.communicate(timeout=60)
    finally:
        for p in (sim, dump):
            if p.poll() is None:
                p.kill()
        dump.wait()
    stderr = stderr.decode()
    assert sim.returncode == 0, stderr
    doc = json.loads(stdout)
    assert doc["trace"]["lookups"] == lookups, (doc["trace"], stderr)
    assert [r["lookups"] for r in doc["results"] if r["policy"] == "lru"] == [lookups, lookups]
    assert "live input ended: interrupted (SIGINT)" in stderr
    assert "lookups; LRU 100" in stderr, stderr  # the progress line, with the hit rates so far
    assert peak < 400 * 2**20, peak


def test_capture_py_feeds_simulate_py_through_a_pipe_to_its_end(redis_server, tmp_path):
    """`capture.py -o - --duration ... | simulate.py -`: no file written; the pipe's end ends the simulation."""
    port = str(redis_server.port)
    cap = subprocess.Popen([sys.executable, "capture.py", "-o", "-", "-i", "lo", "--port", port, "--duration", "8s"],
                           cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    sim = subprocess.Popen([sys.executable, "simulate.py", "-", "--port", port, "--lru", "1000", "--json",
                            "--no-progress"], cwd=REPO, stdin=cap.stdout, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    cap.stdout.close()
    try:
        started = b""
        while b"capturing" not in started:
            started += cap.stderr.readline()
            assert cap.poll() is None, started
        time.sleep(1.0)  # tcpdump says it listens a moment before its filter sees every packet
        r = redis.Redis(host=redis_server.host, port=redis_server.port, protocol=2)
        lookups = 0
        start = time.monotonic()
        for i in range(1_000):
            r.hmget(f"st_{i % 100}", ["1", "2", "3"])
            lookups += 3
        r.close()
        assert time.monotonic() - start < 5, "the client must be done well before the capture's end"
        stdout, stderr = sim.communicate(timeout=60)
        cap_err = cap.stderr.read().decode()
        cap.wait(30)
    finally:
        for p in (sim, cap):
            if p.poll() is None:
                p.kill()
    assert sim.returncode == 0 and cap.returncode == 0, (stderr.decode(), cap_err)
    assert json.loads(stdout)["trace"]["lookups"] == lookups, stderr.decode()
    assert "wrote the capture to standard output" in cap_err
    assert list(tmp_path.iterdir()) == []
