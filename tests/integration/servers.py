"""The real parts the integration tests run: a redis-server, a tcpdump, and a network namespace to put them in.

Each is a context manager that always stops what it started (by process id, never by name), so a failing test
leaves no server, capture or namespace behind. Inside a namespace, every command is run through
`ip netns exec NS`, which execs the command itself: the process id we hold is the server's own.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import threading
import time

START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0


class HarnessError(RuntimeError):
    """A real part that would not start: the message says what to install or fix."""


class Process:
    """A child process whose output lines (`stream`: "stdout" with stderr merged in, or "stderr") are collected
    by a thread, so waiting for a line cannot block. Its own session: a signal sent to it reaches it alone."""

    def __init__(self, argv, stream: str, **popen):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT if stream == "stdout" else subprocess.PIPE,
                                     start_new_session=True, **popen)
        self.lines: list[str] = []
        self._changed = threading.Condition()
        pipe = self.proc.stdout if stream == "stdout" else self.proc.stderr
        if stream != "stdout":
            threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
        self._reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._reader.start()

    def _read(self, pipe):
        for raw in pipe:
            with self._changed:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @staticmethod
    def _drain(pipe):
        for _ in pipe:
            pass

    def wait_for(self, text: str, timeout: float) -> bool:
        """True once a line contains `text`; False if the process ended or the time ran out first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not any(text in line for line in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    return False
                self._changed.wait(min(left, 0.1))
        return True

    def stop(self, sig=signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(STOP_TIMEOUT)
        return self.proc.returncode

    def output(self) -> str:
        return "\n".join(self.lines)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """`redis-server` on 127.0.0.1 without persistence (no RDB snapshots, no AOF), logging to stdout."""

    def __init__(self, workdir, port: int | None = None, prefix=(), extra_args=()):
        self.workdir, self.prefix, self.extra_args = str(workdir), list(prefix), list(extra_args)
        self.port = port
        self.host = "127.0.0.1"
        self._proc: Process | None = None

    def __enter__(self):
        for _ in range(5):  # a free port can be taken between the probe and the bind: try another
            port = self.port or free_port()
            proc = Process(self.prefix + ["redis-server", "--port", str(port), "--bind", self.host,
                                           "--save", "", "--appendonly", "no", "--dir", self.workdir,
                                           "--daemonize", "no", "--logfile", "", *self.extra_args], "stdout")
            if proc.wait_for("Ready to accept connections", START_TIMEOUT):
                self.port, self._proc = port, proc
                return self
            proc.stop()
            if self.port or "Address already in use" not in proc.output():
                raise HarnessError(f"redis-server did not start: {proc.output()[-600:]}")
        raise HarnessError("redis-server found no free port")

    def __exit__(self, *exc):
        self._proc.stop(signal.SIGTERM)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def cli(self, *args) -> str:
        """`redis-cli` against this server, from inside its namespace when it has one."""
        out = subprocess.run(self.prefix + ["redis-cli", "-h", self.host, "-p", str(self.port), *args],
                             capture_output=True, text=True, timeout=30, check=True)
        return out.stdout


class Tcpdump:
    """`tcpdump -i IF -w FILE -s 0 -B 65536 -U --immediate-mode port P`, stopped with SIGINT.

    `-U` writes each packet as it comes and `--immediate-mode` hands it over without waiting for a full kernel
    block, so nothing sits in a buffer when the capture stops; SIGINT then makes tcpdump close the file and
    print its counters, and `stop` waits for those lines: the file is complete once they are there. The
    64 MiB kernel buffer (`-B`, in KiB) holds a whole burst of the driver's traffic even when tcpdump is
    not scheduled for a while on a busy machine: a kernel drop would be a hole in the capture.
    """

    def __init__(self, path, port: int | list[int], interface: str = "lo", prefix=()):
        """`port`: the port to capture, or a list of them (a cluster's nodes and their buses)."""
        self.path, self.port, self.interface, self.prefix = str(path), port, interface, list(prefix)
        self._proc: Process | None = None
        self.stats: dict[str, int] = {}

    def __enter__(self):
        ports = self.port if isinstance(self.port, list) else [self.port]
        bpf = " or ".join(f"port {p}" for p in ports).split(" ")
        argv = self.prefix + ["tcpdump", "-i", self.interface, "-w", self.path, "-s", "0", "-B", "65536", "-U",
                              "--immediate-mode", "-Z", "root", *bpf]
        self._proc = Process(argv, "stderr")
        if not self._proc.wait_for("listening on", START_TIMEOUT):
            self._proc.stop()
            raise HarnessError(f"tcpdump did not start: {self._proc.output()[-600:]}")
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self, settled=None) -> dict:
        """Stops tcpdump once the capture is settled, and returns its counters.

        Packets still in the kernel's ring when tcpdump stops are lost (neither captured nor dropped), and
        tcpdump reads the ring only when it is scheduled; so first wait until `settled()` says the file holds
        what it must (every connection's FINs, say), or without it until the file stops growing.
        """
        if self._proc is None or self.stats:
            return self.stats
        done = _wait_settled(settled or _FileStable(self.path), STOP_TIMEOUT)
        self._proc.stop(signal.SIGINT)
        if not self._proc.wait_for("packets captured", STOP_TIMEOUT):
            raise HarnessError(f"tcpdump ended without its counters: {self._proc.output()[-600:]}")
        for line in self._proc.lines:
            words = line.split(" ", 2)
            if len(words) == 3 and words[0].isdigit() and words[1].startswith("packet"):
                self.stats[words[2]] = int(words[0])
        if not done:
            raise HarnessError(f"the capture was still incomplete after {STOP_TIMEOUT:.0f}s (tcpdump: {self.stats})")
        return self.stats


def _wait_settled(settled, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not settled():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class _FileStable:
    """True once the file's size has not changed for `quiet` seconds."""

    def __init__(self, path, quiet: float = 0.5):
        self.path, self.quiet = path, quiet
        self._size, self._since = -1, time.monotonic()

    def __call__(self) -> bool:
        size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        if size != self._size:
            self._size, self._since = size, time.monotonic()
        return time.monotonic() - self._since >= self.quiet


class Netns:
    """A fresh network namespace whose loopback behaves like an Ethernet link: MTU 1500 and no segmentation
    offloads (TSO, GSO, GRO off), so TCP sends real MSS-sized segments and the capture sees each of them."""

    def __init__(self):
        self.name = f"cachescope-test-{os.getpid()}-{secrets.token_hex(3)}"
        self.prefix = ["ip", "netns", "exec", self.name]

    def __enter__(self):
        _run(["ip", "netns", "add", self.name], "creating a network namespace")
        try:
            _run(self.prefix + ["ip", "link", "set", "lo", "up", "mtu", "1500"], "setting up its loopback")
            _run(self.prefix + ["ethtool", "-K", "lo", "tso", "off", "gso", "off", "gro", "off"],
                 "turning segmentation offloads off")
        except BaseException:
            self._delete()
            raise
        return self

    def __exit__(self, *exc):
        self._delete()

    def _delete(self):
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True, timeout=30)


def _run(argv, doing: str):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise HarnessError(f"{doing}: {argv[0]!r} is not installed (apt-get install iproute2 ethtool)") from None
    if out.returncode != 0:
        said = (out.stderr or out.stdout).strip()
        if "Operation not permitted" in said or "Permission denied" in said:
            raise HarnessError(f"{doing} needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): {' '.join(argv)}: {said}")
        raise HarnessError(f"{doing} failed: {' '.join(argv)}: {said}")
    return out.stdout
