"""Nothing the user has is destroyed: an output that is an input (or another output) is refused before
anything is written, FIFOs and device nodes are written in place (not replaced by a regular file), and
SIGTERM mid-parse removes the half-written output as Ctrl-C does."""

import os
import signal
import stat
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq

from conftest import REPO, run_cli
from test_bad_input import assert_one_line_error

CAPTURE = REPO / "tests" / "data" / "captures" / "tcpdump_lo.pcap"
PORT = "45885"
MONITOR = b'1700000000.000001 [0 10.0.0.1:5000] "HMGET" "st_1" "11" "22"\n'


def test_stats_json_onto_the_capture_is_refused(tmp):
    capture = tmp / "c.pcap"
    capture.write_bytes(CAPTURE.read_bytes())
    proc = run_cli("parse.py", capture, "-o", tmp / "t.parquet", "--port", PORT, "--stats-json", capture)
    assert_one_line_error(proc, str(capture), "--stats-json")
    assert capture.read_bytes() == CAPTURE.read_bytes()
    assert not (tmp / "t.parquet").exists()


def test_stats_json_onto_the_output_is_refused(tmp):
    out = tmp / "t.txt"
    proc = run_cli("parse.py", CAPTURE, "-o", out, "--port", PORT, "--stats-json", out)
    assert_one_line_error(proc, str(out), "--stats-json", "-o")
    assert not out.exists()


def test_output_through_a_symlink_to_the_input_is_refused(tmp):
    log = tmp / "m.monitor"
    log.write_bytes(MONITOR)
    link = tmp / "link.monitor"
    link.symlink_to(log)
    assert_one_line_error(run_cli("parse.py", log, "-o", link), "-o")
    assert log.read_bytes() == MONITOR and link.is_symlink()


def test_simulate_plot_and_timeline_onto_the_trace_are_refused(tmp):
    trace = tmp / "t.monitor"
    trace.write_bytes(MONITOR * 3)
    for flag in ("--plot", "--timeline"):
        proc = run_cli("simulate.py", trace, "--lru", "10", flag, trace)
        assert_one_line_error(proc, str(trace), flag)
        assert trace.read_bytes() == MONITOR * 3
    same = tmp / "out.csv"
    assert_one_line_error(run_cli("simulate.py", trace, "--lru", "10", "--plot", same, "--timeline", same),
                          "--plot", "--timeline")


def _drain(path, into):
    with open(path, "rb") as f:
        into.append(f.read())


def test_output_onto_a_fifo_is_written_in_place(tmp):
    for name, fmt in (("fifo.txt", "commands"), ("fifo.parquet", "parquet")):
        fifo = tmp / name
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(target=_drain, args=(fifo, got), daemon=True)
        reader.start()
        proc = subprocess.run([sys.executable, "parse.py", CAPTURE, "-o", fifo, "--port", PORT, "--format", fmt],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
        try:  # unblock the reader if the parse never opened the FIFO
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        reader.join(10)
        assert proc.returncode == 0, proc.stderr
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        assert got and got[0]
        if fmt == "commands":
            assert got[0].decode().splitlines()[0].startswith("HSET")
        else:
            assert got[0].startswith(b"PAR1")
    assert not [p for p in tmp.iterdir() if p.name.endswith(".partial")]


def test_output_onto_a_device_node_is_written_in_place(tmp):
    nulls = {}
    for name in ("null.txt", "null.png"):  # /dev/null's of our own
        nulls[name] = tmp / name
        os.mknod(nulls[name], stat.S_IFCHR | 0o666, os.makedev(1, 3))
    run_cli("parse.py", CAPTURE, "-o", nulls["null.txt"], "--port", PORT, check_rc=0)
    assert stat.S_ISCHR(os.lstat(nulls["null.txt"]).st_mode)
    trace = tmp / "t.monitor"
    trace.write_bytes(MONITOR)
    run_cli("simulate.py", trace, "--lru", "10", "--timeline", nulls["null.txt"], "--plot", nulls["null.png"],
            check_rc=0)
    assert all(stat.S_ISCHR(os.lstat(p).st_mode) for p in nulls.values())


def test_output_to_dev_stdout_goes_to_stdout(tmp):
    proc = run_cli("parse.py", CAPTURE, "-o", "/dev/stdout", "--format", "commands", "--port", PORT, check_rc=0)
    assert proc.stdout.splitlines()[0].startswith("HSET")
    assert os.path.islink("/dev/stdout")


def test_sigterm_mid_parse_removes_the_partial_output(tmp):
    log = tmp / "big.monitor"
    with open(log, "wb") as f:
        for i in range(200):
            f.write(b"".join(b'1700000000.%06d [0 10.0.0.1:5000] "GET" "k%d"\n' % (j % 10**6, i * 10_000 + j)
                             for j in range(10_000)))
    out = tmp / "t.parquet"
    proc = subprocess.Popen([sys.executable, "parse.py", log, "-o", out, "--no-progress"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    partial = tmp / ".t.parquet.partial"
    deadline = time.monotonic() + 30
    while not partial.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert partial.exists(), "the parse ended before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "terminated" in err
    assert sorted(p.name for p in tmp.iterdir()) == ["big.monitor"], err
