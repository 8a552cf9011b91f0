"""`-` is standard input for simulate.py and parse.py: the format (and the compression) told from the first
bytes, read once; the same answers as the file. A live input ends cleanly at --duration with the full answer."""

import json
import os
import subprocess
import sys
import time

import pyarrow.parquet as pq

from conftest import REPO, run_cli
from test_bad_input import assert_one_line_error

CAPTURE = REPO / "sample_traces" / "feature_store.pcap"
MONITOR = REPO / "sample_traces" / "feature_store.monitor"


def piped(data: bytes, *args):
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, input=data, capture_output=True,
                          timeout=120)


def answer(proc):
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    doc["trace"].pop("path", None)
    return doc


def test_a_capture_on_standard_input_simulates_as_the_file():
    flags = ["--port", "16379", "--lru", "1000,10000", "--json", "--no-progress"]
    from_pipe = answer(piped(CAPTURE.read_bytes(), "simulate.py", "-", *flags))
    from_file = answer(piped(b"", "simulate.py", CAPTURE, *flags))
    assert from_pipe == from_file and from_pipe["trace"]["lookups"] > 0


def test_a_compressed_monitor_log_on_standard_input():
    packed = subprocess.run(["zstd", "-q", "-c", str(MONITOR)], capture_output=True, check=True).stdout
    flags = ["--lru", "1000", "--json", "--no-progress"]
    assert answer(piped(packed, "simulate.py", "-", *flags)) == answer(piped(b"", "simulate.py", MONITOR, *flags))


def test_parse_py_reads_standard_input(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    proc = piped(CAPTURE.read_bytes(), "parse.py", "-", "-o", a, "--port", "16379", "--no-progress")
    assert proc.returncode == 0, proc.stderr.decode()
    run_cli("parse.py", CAPTURE, "-o", b, "--port", "16379", "--no-progress", check_rc=0)
    assert pq.read_table(a).equals(pq.read_table(b))


def test_a_capture_on_standard_input_needs_its_port():
    proc = piped(CAPTURE.read_bytes(), "simulate.py", "-", "--lru", "10")
    proc.stderr, proc.stdout = proc.stderr.decode(), proc.stdout.decode()
    assert_one_line_error(proc, "standard input: a capture read from a stream needs --port")


def test_duration_is_for_live_input_only():
    assert_one_line_error(run_cli("simulate.py", MONITOR, "--lru", "10", "--duration", "1s"),
                          "--duration is for a live input")


def test_a_live_fifo_ends_at_its_duration_with_the_full_answer(tmp_path):
    """The writer keeps the FIFO open (a live pipe): --duration ends the run, and every line written before
    is in the answer."""
    fifo = tmp_path / "live.fifo"
    os.mkfifo(fifo)
    lines = MONITOR.read_bytes().splitlines(keepends=True)[:3001]
    sim = subprocess.Popen([sys.executable, "simulate.py", str(fifo), "--lru", "100", "--json", "--duration", "3s"],
                           cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(fifo, "wb") as w:
        w.write(b"".join(lines))
        w.flush()
        start = time.monotonic()
        stdout, stderr = sim.communicate(timeout=60)  # the writer is still open: only the duration ends it
        elapsed = time.monotonic() - start
    assert sim.returncode == 0, stderr.decode()
    doc = json.loads(stdout)
    expected = answer(piped(b"".join(lines), "simulate.py", "-", "--lru", "100", "--json", "--no-progress"))
    assert doc["trace"]["lookups"] == expected["trace"]["lookups"] > 0
    assert [r["hits"] for r in doc["results"]] == [r["hits"] for r in expected["results"]]
    assert "live input ended: --duration 3s reached" in stderr.decode()
    assert elapsed < 30


def test_parse_py_on_a_live_capture_ends_cleanly_on_sigint_with_its_trace(tmp_path):
    """The writer keeps the FIFO open (tcpdump still running): Ctrl-C ends the parse, and the trace holds every
    row of the packets written before, as parsing the whole file gives them."""
    fifo, out, whole = tmp_path / "live.fifo", tmp_path / "live.parquet", tmp_path / "whole.parquet"
    os.mkfifo(fifo)
    run_cli("parse.py", CAPTURE, "-o", whole, "--port", "16379", "--no-progress", check_rc=0)
    proc = subprocess.Popen([sys.executable, "parse.py", str(fifo), "-o", str(out), "--port", "16379",
                             "--stats-json", str(tmp_path / "s.json")], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    with open(fifo, "wb") as w:
        w.write(CAPTURE.read_bytes())
        w.flush()
        time.sleep(3)
        proc.send_signal(2)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()
    assert "live input ended: interrupted (SIGINT)" in stderr.decode()
    assert pq.read_table(out).equals(pq.read_table(whole))
    assert json.loads((tmp_path / "s.json").read_text())["live_end"] == "interrupted (SIGINT)"
