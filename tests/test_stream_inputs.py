"""Inputs that are streams (a FIFO, a `<(...)` pipe) are read once: the format is told from the same open file
the reader then reads, so a FIFO neither hangs nor reads as empty, and gives the numbers the file gives."""

import json
import os
import subprocess
import sys
import threading

import pytest

from conftest import REPO
from test_bad_input import assert_one_line_error

CAPTURE = REPO / "tests" / "data" / "captures" / "tcpdump_lo.pcap"
PORT = "45885"
TIMEOUT = 60  # a hang fails the test instead of the whole run


def _monitor_log(tmp):
    log = tmp / "m.log"
    lines = ["OK"] + [f'1700000000.{i:06d} [0 10.0.0.{i % 3}:5000] "HMGET" "st_{i % 7}" "11" "22"'
                      for i in range(5000)]
    log.write_text("\n".join(lines) + "\n")
    return log


def _run(*args):
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, capture_output=True, text=True,
                          timeout=TIMEOUT)


def _through_fifo(tmp, source, *command):
    """Runs `command` with `{fifo}` replaced by a FIFO that a writer thread fills with `source`'s bytes."""
    fifo = tmp / f"in-{source.name}.fifo"
    os.mkfifo(fifo)

    def write():
        try:
            with open(fifo, "wb") as f:
                f.write(source.read_bytes())
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        return _run(*[fifo if a == "{fifo}" else a for a in command])
    finally:
        try:  # a reader that never came: let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass


def _hits(proc):
    assert proc.returncode == 0, proc.stderr
    return [r["hits"] for r in json.loads(proc.stdout)["results"]], json.loads(proc.stdout)["trace"]["lookups"]


@pytest.mark.parametrize("kind", ["monitor", "pcap"])
def test_simulate_reads_a_fifo(tmp, kind):
    source = _monitor_log(tmp) if kind == "monitor" else CAPTURE
    args = ["--lru", "2,5", "--json", "--port", PORT]
    direct = _hits(_run("simulate.py", source, *args))
    assert direct[1] > 0
    assert _hits(_through_fifo(tmp, source, "simulate.py", "{fifo}", *args)) == direct


@pytest.mark.parametrize("kind", ["monitor", "pcap"])
def test_parse_reads_a_fifo(tmp, kind):
    source = _monitor_log(tmp) if kind == "monitor" else CAPTURE
    direct, piped = tmp / "direct.txt", tmp / "piped.txt"
    assert _run("parse.py", source, "-o", direct, "--port", PORT).returncode == 0
    proc = _through_fifo(tmp, source, "parse.py", "{fifo}", "-o", piped, "--port", PORT)
    assert proc.returncode == 0, proc.stderr
    assert piped.read_text() == direct.read_text() and direct.stat().st_size > 0


def test_process_substitution(tmp):
    log = _monitor_log(tmp)
    direct = _hits(_run("simulate.py", log, "--lru", "3", "--json"))
    proc = subprocess.run(["bash", "-c", f'"{sys.executable}" simulate.py <(cat "{log}") --lru 3 --json'],
                          cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    assert _hits(proc) == direct
    out = tmp / "t.txt"
    proc = subprocess.run(["bash", "-c", f'"{sys.executable}" parse.py <(cat "{CAPTURE}") -o "{out}" --port {PORT}'],
                          cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("HSET")


def test_belady_on_a_fifo_is_refused(tmp):
    proc = _through_fifo(tmp, _monitor_log(tmp), "simulate.py", "{fifo}", "--belady", "3")
    assert_one_line_error(proc, "FIFO", "file first")
