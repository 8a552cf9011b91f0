"""`python capture.py` with real parts: tcpdump capturing a real redis-server's traffic, MONITOR recording it,
and the one-line errors (no tcpdump, no right to capture, bad options)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import redis

from cachescope.cli.capture import main
from cachescope.cli.common import run

from . import traffic
from .monitorlines import read_file
from .pcapread import by_client, count_packets, read_segments
from .servers import Process, RedisServer

REPO = Path(__file__).resolve().parents[2]
COUNTS = re.compile(r"([\d,]+) packets captured, ([\d,]+) received by filter, ([\d,]+) dropped by kernel")


def start_capture(*args, env=None) -> Process:
    """capture.py as a user runs it; returns once it says it is recording (so traffic sent now is seen)."""
    proc = Process([sys.executable, "capture.py", *map(str, args)], "stderr", cwd=REPO,
                   env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    if not proc.wait_for("capturing " if "--monitor" not in args else "recording MONITOR", 30):
        proc.stop()
        pytest.fail(f"capture.py did not start: {proc.output()}")
    return proc


def finish(proc: Process, timeout=30) -> str:
    proc.proc.wait(timeout)
    proc.stop()
    assert proc.proc.returncode == 0, proc.output()
    return proc.output()


def printed_counts(stderr: str) -> tuple[int, int, int]:
    m = COUNTS.search(stderr)
    assert m, stderr
    return tuple(int(g.replace(",", "")) for g in m.groups())


def test_capture_for_a_duration_on_the_default_interface(redis_server, tmp_path):
    out = tmp_path / "redis.pcap"
    proc = start_capture("--port", redis_server.port, "--duration", "2.5s", "-o", out)
    truth = traffic.drive(redis_server.host, redis_server.port, seed=3, scale=0.2)
    stderr = finish(proc)
    captured, received, dropped = printed_counts(stderr)
    assert out.stat().st_size > 100_000 and f"wrote {out}" in stderr
    assert captured == count_packets(out) > 0 and received >= captured and dropped == 0
    flows = by_client(read_segments(out), redis_server.port)  # `-i any`: Linux cooked v2 frames
    assert set(flows) == {c["client"] for c in truth["connections"]}


def test_ctrl_c_stops_tcpdump_cleanly(redis_server, tmp_path):
    out = tmp_path / "interrupted.pcap"
    proc = start_capture("--port", f"{redis_server.port},6", "--port", "7", "-i", "lo", "-o", out)
    tcpdumps = [p for p in psutil.Process(proc.proc.pid).children() if p.name() == "tcpdump"]
    assert len(tcpdumps) == 1 and "tcp and (port %d or port 6 or port 7)" % redis_server.port in tcpdumps[0].cmdline()
    truth = traffic.drive(redis_server.host, redis_server.port, seed=4, scale=0.1)
    time.sleep(2)  # the kernel hands packets over in blocks up to 1 s late; what is still in the ring is lost
    proc.proc.send_signal(signal.SIGINT)
    stderr = finish(proc)
    assert not tcpdumps[0].is_running() or tcpdumps[0].status() == psutil.STATUS_ZOMBIE
    captured, received, _ = printed_counts(stderr)
    assert captured == count_packets(out)
    # On lo the kernel counts each packet twice (sent and received): the line after the counts says so.
    assert received > captured and "counts each packet twice" in stderr
    assert set(by_client(read_segments(out), redis_server.port)) == {c["client"] for c in truth["connections"]}


def test_rotation_by_size_and_time(redis_server, tmp_path):
    out = tmp_path / "rot.pcap"
    proc = start_capture("--port", redis_server.port, "-i", "lo", "--duration", "3s", "--rotate-size", "1MB",
                         "--rotate-every", "1s", "-o", out)
    traffic.drive(redis_server.host, redis_server.port, seed=5, scale=0.5)  # several MB: size rotations
    r = redis.Redis(host=redis_server.host, port=redis_server.port, protocol=2)
    for _ in range(15):  # packets in later seconds: time rotations (tcpdump rotates when a packet comes)
        r.ping()
        time.sleep(0.1)
    r.close()
    stderr = finish(proc)
    files = sorted(tmp_path.glob("rot*"))
    names = [f.name for f in files]
    assert all(re.fullmatch(r"rot-\d{8}-\d{6}\.pcap\d*", n) for n in names), names
    assert len({n.split(".")[0] for n in names}) >= 2, names  # timed files
    assert any(n[-1].isdigit() for n in names), names  # a size rotation within one of them
    assert sorted(re.findall(r"wrote (\S+) \(", stderr)) == sorted(map(str, files))
    captured, _, _ = printed_counts(stderr)
    assert captured == sum(count_packets(f) for f in files)


def as_truth_args(args: list[bytes]) -> list:
    """A MONITOR line's command as traffic.py's truth writes it: strings, written values as their lengths."""
    cmd = args[0].decode().upper()
    values = set(range(3, len(args), 2)) if cmd == "HSET" else {2} if cmd == "SET" else set()
    return [cmd] + [len(a) if i in values else a.decode("latin-1") for i, a in enumerate(args[1:], 1)]


def test_monitor_records_what_each_client_sent(redis_server, tmp_path):
    out = tmp_path / "redis.monitor"
    proc = start_capture("--monitor", f"redis://{redis_server.address}/0", "--duration", "2s", "-o", out)
    truth = traffic.drive(redis_server.host, redis_server.port, seed=6, scale=0.2)
    stderr = finish(proc)
    assert "MONITOR slows" in stderr
    first, lines = read_file(out)
    assert first == b"OK"
    assert f"recorded {len(lines):,} commands" in stderr
    for conn in truth["connections"]:
        seen = [as_truth_args(args) for _, db, client, args in lines if client == conn["client"]]
        handshake = [s for s in seen if s[0] == "HELLO"]  # redis-py's, for RESP3 (not in the truth)
        assert len(handshake) == (conn["protocol"] == 3)
        sent = [[c["cmd"], *c["args"]] for c in conn["commands"]]
        assert [s for s in seen if s[0] != "HELLO"] == sent, conn["name"]


def test_monitor_lines_are_byte_identical_to_redis_cli(redis_server, tmp_path):
    ours, theirs = tmp_path / "ours.monitor", tmp_path / "cli.monitor"
    with open(theirs, "wb") as f:
        cli = subprocess.Popen(["redis-cli", "-h", redis_server.host, "-p", str(redis_server.port), "MONITOR"],
                               stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc = start_capture("--monitor", f"redis://{redis_server.address}", "--duration", "2s", "-o", ours)
        r = redis.Redis(host=redis_server.host, port=redis_server.port, protocol=2)
        deadline = time.monotonic() + 10
        while sum("O" in c["flags"] for c in r.client_list()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        me = r.client_info()["addr"]
        nasty = b'sp ace "quoted" back\\slash \n\r\t\a\b \x00\x01\x7f\x80\xff caf\xc3\xa9'
        r.set(nasty, nasty)
        r.hset("st_1", mapping={"2496559762": nasty, "12345": 12345, "-7": b""})
        r.hmget("st_1", ["2496559762", "12345", "missing"])
        r.execute_command("SET", "int", 9223372036854775807)
        finish(proc)
        time.sleep(0.3)
    finally:
        cli.terminate()
        cli.wait(10)
    def traffic_lines(path):  # this client's commands after both monitors were on (its CLIENT polls aside)
        return [line for line in path.read_bytes().split(b"\n") if f"{me}]".encode() in line
                and b'] "CLIENT"' not in line]

    mine, cli_lines = traffic_lines(ours), traffic_lines(theirs)
    assert len(mine) == 4 and mine == cli_lines
    assert ours.read_bytes().startswith(b"OK\n") and theirs.read_bytes().startswith(b"OK\n")
    _, parsed = read_file(ours)
    assert [args for _, _, c, args in parsed if c == me and args[0] != b"CLIENT"][0] == [b"SET", nasty, nasty]


def test_monitor_until_ctrl_c(redis_server, tmp_path):
    out = tmp_path / "open-ended.monitor"
    proc = start_capture("--monitor", f"redis://{redis_server.address}", "-o", out)
    r = redis.Redis(host=redis_server.host, port=redis_server.port, protocol=2)
    r.hmget("st_1426727", ["2496559762", "1170383926"])
    r.close()
    time.sleep(0.5)
    proc.proc.send_signal(signal.SIGINT)
    stderr = finish(proc)
    assert "until Ctrl-C" in stderr and "recorded 1 command (" in stderr
    _, lines = read_file(out)
    assert [args for *_, args in lines] == [[b"HMGET", b"st_1426727", b"2496559762", b"1170383926"]]


def test_monitor_never_prints_the_password(tmp_path):
    secret = "s3cr3t-Pa55word"
    with RedisServer(tmp_path, extra_args=["--requirepass", secret]) as server:
        ok = subprocess.run([sys.executable, "capture.py", "--monitor", f"redis://:{secret}@{server.address}/1",
                             "--duration", "0.5s", "-o", tmp_path / "m.monitor"], cwd=REPO, capture_output=True,
                            text=True)
        assert ok.returncode == 0, ok.stderr
        assert secret not in ok.stdout + ok.stderr and f"redis://{server.address}/1" in ok.stderr
        bad = subprocess.run([sys.executable, "capture.py", "--monitor", f"redis://default:wrong-{secret}@"
                              f"{server.address}", "--duration", "1s", "-o", tmp_path / "n.monitor"], cwd=REPO,
                             capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert secret not in bad.stdout + bad.stderr and "default" not in bad.stderr
    assert "invalid" in bad.stderr.lower() or "auth" in bad.stderr.lower()


def one_line_error(capsys, argv, env_path=None, monkeypatch=None) -> str:
    if env_path is not None:
        monkeypatch.setenv("PATH", env_path)
    rc = run("capture.py", main, [str(a) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, (rc, err)
    return err


def test_no_tcpdump_on_path(capsys, monkeypatch, tmp_path):
    err = one_line_error(capsys, ["--duration", "1s", "-o", tmp_path / "x.pcap"], str(tmp_path), monkeypatch)
    assert "tcpdump is not installed" in err


@pytest.mark.parametrize("argv, message", [
    (["--duration", "5x"], "is not a duration"),
    (["--duration", "0s"], "must be more than zero"),
    (["--duration", "1s", "--port", "70000"], "is not a TCP port"),
    (["--duration", "1s", "--port", "6379,"], "is not a TCP port"),
    (["--duration", "1s", "--port", "redis"], "is not a TCP port"),
    (["--duration", "1s", "--buffer", "lots"], "is not a size"),
    (["--duration", "1s", "--rotate-size", "10kB"], "at least 1MB"),
    (["--duration", "1s", "--rotate-every", "soon"], "is not a duration"),
    (["--monitor", "redis://127.0.0.1:6379", "--port", "6380"], "cannot be used with --monitor"),
    (["--monitor", "http://127.0.0.1:6379"], "redis://host:port"),
    (["--duration", "1s", "-i", "nosuch0"], "No such device"),
])
def test_bad_options(capsys, tmp_path, argv, message):
    assert message in one_line_error(capsys, argv + ["-o", tmp_path / "x.pcap"])


def test_monitor_of_an_unreachable_server(capsys, tmp_path):
    from .servers import free_port

    err = one_line_error(capsys, ["--monitor", f"redis://127.0.0.1:{free_port()}", "-o", tmp_path / "m"])
    assert "MONITOR on redis://127.0.0.1:" in err and "onnect" in err


def test_no_right_to_capture(tmp_path):
    """Without CAP_NET_RAW (dropped from the bounding set, so even root lacks it) tcpdump cannot open the device."""
    out = subprocess.run(["setpriv", "--bounding-set=-net_raw", sys.executable, "capture.py", "--duration", "1s",
                          "-o", tmp_path / "x.pcap"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "needs root or the CAP_NET_RAW capability" in out.stderr
