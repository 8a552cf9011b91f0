"""Runs tcpdump for a while and reports what it captured and what the kernel dropped.

tcpdump runs in its own session, so a Ctrl-C at the terminal reaches only this process, which then stops
tcpdump itself with SIGINT: tcpdump flushes its buffer, closes the file and prints its counters, which are
parsed from its stderr. The same happens at the end of `duration`, on SIGTERM/SIGHUP, and on any error here,
so no tcpdump is ever left running behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from cachescope.capture.compress import Compressor
from cachescope.capture.options import human_bytes, human_seconds
from cachescope.capture.signals import StopSignals
from cachescope.capture.status import Status
from cachescope.capture.tcpdump import (STDOUT, CaptureStats, files_written, parse_stats, savefile_pattern,
                                        start_error, tcpdump_command)
from cachescope.errors import CaptureError, UsageError

DEFAULT_BUFFER = 64 * 2**20
START_TIMEOUT = 15.0  # opening a device and compiling a filter takes milliseconds; a hang is a broken setup
STOP_TIMEOUT = 10.0


@dataclass
class CaptureResult:
    stats: CaptureStats
    files: list[str]
    seconds: float
    command: list[str] = field(default_factory=list)
    to_stdout: bool = False

    @property
    def bytes_written(self) -> int:
        return sum(os.path.getsize(f) for f in self.files if os.path.exists(f))


def find_tcpdump() -> str:
    path = shutil.which("tcpdump")
    if path is None:
        raise CaptureError("tcpdump is not installed (not found on PATH): install it (apt-get install tcpdump, "
                           "dnf install tcpdump) or use --monitor")
    return path


def capture_packets(output: str, *, ports=(6379,), interface: str = "any", duration: float | None = None,
                    buffer_bytes: int = DEFAULT_BUFFER, rotate_size: int | None = None,
                    rotate_every: float | None = None, status: Status | None = None,
                    compress: str | None = None) -> CaptureResult:
    """Captures the TCP traffic of `ports` on `interface` into `output` until `duration` seconds have passed
    (or Ctrl-C), and returns tcpdump's counters and the files written. `compress` ("gzip", "zstd", "xz",
    "lz4"): each file is compressed once closed (`compress.py`)."""
    status = status or Status("capture")
    to_stdout = output == STDOUT
    if to_stdout and compress:
        raise UsageError("-o - writes to standard output: compress it there (| zstd), not with --compress")
    compressor = Compressor(compress) if compress else None
    cmd = tcpdump_command(find_tcpdump(), output=output, ports=ports, interface=interface,
                          buffer_bytes=buffer_bytes, rotate_size=rotate_size, rotate_every=rotate_every,
                          as_root=os.geteuid() == 0)
    started = time.time()
    run = _Tcpdump(cmd, to_stdout)
    try:
        run.wait_listening()
        into = "standard output" if to_stdout else savefile_pattern(output, rotate_every)
        status.say(f"capturing {cmd[-1]} on {interface} into {into} "
                   + (f"for {human_seconds(duration)}" if duration else "until Ctrl-C"))
        _wait(run, duration, status,
              lambda: [] if to_stdout else files_written(savefile_pattern(output, rotate_every), started,
                                                         compressor is not None),
              compressor)
    finally:
        lines, returncode = run.stop()
    stats = parse_stats(lines)
    if not stats.complete:
        raise start_error(lines, returncode)
    files = [] if to_stdout else files_written(savefile_pattern(output, rotate_every), started,
                                               compressor is not None)
    if compressor is not None:
        files = compressor.finish(files)
    return CaptureResult(stats, files, time.time() - started, cmd, to_stdout)


def _wait(run: "_Tcpdump", duration, status: Status, current_files, compressor=None) -> None:
    """Until the duration is over, the user interrupts, or tcpdump stops on its own (a full disk); files
    that rotation closed are compressed meanwhile."""
    start = time.monotonic()
    deadline = start + duration if duration else None
    stop = StopSignals()
    with stop:
        while run.proc.poll() is None and not stop.requested:
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(0.1 if deadline is None else min(0.1, max(0.0, deadline - time.monotonic())))
            status.tick(lambda: _progress(time.monotonic() - start, duration, current_files()))
            if compressor is not None:
                compressor.closed(current_files())
    if run.proc.poll() is not None and not stop.requested:
        raise start_error(run.lines(), run.proc.returncode)


def _progress(elapsed: float, duration, files) -> str:
    size = sum(os.path.getsize(f) for f in files if os.path.exists(f))
    of = f" of {human_seconds(duration)}" if duration else ""
    return f"{human_seconds(elapsed)}{of}, {human_bytes(size)} written" + (
        f" in {len(files)} files" if len(files) > 1 else "")


class _Tcpdump:
    """One tcpdump process and a thread collecting its stderr (it says little: a banner, warnings, counters)."""

    def __init__(self, cmd, to_stdout: bool = False):
        """`to_stdout`: tcpdump writes the capture to this process's standard output (`-w -`)."""
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=None if to_stdout else subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self._lines: list[str] = []
        self._listening = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._lines.append(line)
            if line.startswith("tcpdump: listening on"):
                self._listening.set()
        self._listening.set()  # stderr closed: tcpdump has exited

    def lines(self) -> list[str]:
        return list(self._lines)

    def wait_listening(self) -> None:
        if not self._listening.wait(START_TIMEOUT):
            raise CaptureError(f"tcpdump did not start capturing within {START_TIMEOUT:.0f}s")
        if self.proc.poll() is not None or not any(line.startswith("tcpdump: listening on") for line in self._lines):
            self.proc.wait()
            self._reader.join()
            raise start_error(self._lines, self.proc.returncode)

    def stop(self) -> tuple[list[str], int]:
        """SIGINT, then the counters; SIGKILL only if tcpdump does not finish within STOP_TIMEOUT."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(STOP_TIMEOUT)
        return self.lines(), self.proc.returncode
