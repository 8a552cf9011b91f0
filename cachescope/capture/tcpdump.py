"""tcpdump as cachescope drives it: the command line, the names of the files it writes, what its stderr says.

Everything here is pure (no process is started), so each rule can be tested alone; `packets.py` runs tcpdump.

Choices, and why:
- `-s 0`: whole packets. A truncated packet loses the RESP bytes the parser needs, and its stream has a gap.
- `-B` (KiB): the kernel's capture buffer. tcpdump's default (2 MiB) overflows within milliseconds of a burst
  of large replies; the kernel then drops packets ("dropped by kernel"), and every drop is a gap in a stream.
- `-Z root` when running as root: tcpdump otherwise gives up root for the `tcpdump` user right after opening
  the device, and then cannot create the output file in a directory that user may not write (a home
  directory, a 0700 temporary directory), nor the next file of a rotation.
- `-C` counts millions of bytes (10^6, not MiB) and rotates once the current file is *larger* than that, so
  files end a little over the size. Names: `out.pcap`, then `out.pcap1`, `out.pcap2`, ... (tcpdump appends
  the count after the whole name).
- `-G` rotates every N seconds (checked when a packet arrives) and names each file by strftime(3) on the
  clock of its opening; without a `%` in the name every file would overwrite the previous one, so
  `-%Y%m%d-%H%M%S` is put before the extension: `out-20240521-143000.pcap`, `out-20240521-144000.pcap`, ...
  With both, each timed file may grow a count: `out-20240521-143000.pcap1`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from cachescope.errors import CaptureError, UsageError

TIME_PATTERN = "-%Y%m%d-%H%M%S"
STDOUT = "-"
MIN_ROTATE_BYTES = 10**6  # tcpdump's -C unit

_COUNTS = {
    "captured": re.compile(r"^(\d+) packets? captured$"),
    "received": re.compile(r"^(\d+) packets? received by filter$"),
    "dropped_by_kernel": re.compile(r"^(\d+) packets? dropped by kernel$"),
    "dropped_by_interface": re.compile(r"^(\d+) packets? dropped by interface$"),
}
_NO_RIGHT = re.compile(r"don't have permission|Operation not permitted|CAP_NET_RAW|cap_net_raw")


@dataclass
class CaptureStats:
    """tcpdump's closing counters. `captured` packets are in the files; `received` passed the filter (on
    loopback it counts both directions of a packet that is kept once); kernel drops are lost for good."""

    captured: int | None = None
    received: int | None = None
    dropped_by_kernel: int | None = None
    dropped_by_interface: int | None = None

    @property
    def complete(self) -> bool:
        return self.captured is not None


def bpf_filter(ports) -> str:
    """The capture filter: both directions of every TCP connection to or from one of the ports."""
    return "tcp and (" + " or ".join(f"port {p}" for p in ports) + ")"


def savefile_pattern(output: str, rotate_every: float | None) -> str:
    """The name given to `-w`: with timed rotation, a strftime pattern unless the name already has one."""
    if not rotate_every or "%" in output:
        return output
    head, tail = os.path.split(output)
    stem, ext = os.path.splitext(tail)
    return os.path.join(head, stem + TIME_PATTERN + ext)


def tcpdump_command(tcpdump: str, *, output: str, ports, interface: str = "any", buffer_bytes: int,
                    rotate_size: int | None = None, rotate_every: float | None = None,
                    as_root: bool = False) -> list[str]:
    """The full argument vector, from already-parsed options (bytes and seconds)."""
    cmd = [tcpdump, "-i", interface, "-w", savefile_pattern(output, rotate_every), "-s", "0",
           "-B", str(max(1, buffer_bytes // 1024)), "-n"]
    if output == STDOUT:
        if rotate_size is not None or rotate_every is not None:
            raise UsageError("-o - writes one stream to standard output: it cannot rotate")
        # Each packet handed over as it comes, for a live reader (`| simulate.py -`).
        cmd += ["-U", "--immediate-mode"]
    if as_root:
        cmd += ["-Z", "root"]
    if rotate_size is not None:
        if rotate_size < MIN_ROTATE_BYTES:
            raise UsageError(f"--rotate-size {rotate_size:,} bytes: tcpdump rotates in whole millions of bytes, "
                             "give at least 1MB")
        cmd += ["-C", str(round(rotate_size / MIN_ROTATE_BYTES))]
    if rotate_every is not None:
        if rotate_every < 1:
            raise UsageError("--rotate-every must be at least one second")
        cmd += ["-G", str(round(rotate_every))]
    return cmd + [bpf_filter(ports)]


def savefile_regex(pattern: str, compressed: bool = False) -> re.Pattern:
    """Matches every name tcpdump can derive from `pattern`: strftime fields filled in, a rotation count
    appended, and with `compressed` (`--compress`) a compressor's suffix after that."""
    parts = re.split(r"(%.)", os.path.basename(pattern))
    body = "".join(".+?" if p.startswith("%") and len(p) == 2 else re.escape(p) for p in parts)
    suffix = "(\\.gz|\\.zst|\\.xz|\\.lz4)?" if compressed else ""
    return re.compile(f"^{body}[0-9]*{suffix}$")


def files_written(pattern: str, since: float, compressed: bool = False) -> list[str]:
    """The files of this capture: names that fit the pattern (compressed ones too with `compressed`),
    modified since it started, oldest first."""
    folder = os.path.dirname(pattern) or "."
    regex = savefile_regex(pattern, compressed)
    found = []
    for entry in os.scandir(folder):
        if regex.match(entry.name) and entry.is_file() and entry.stat().st_mtime >= since - 1:
            found.append((entry.stat().st_mtime, _rotation_count(entry.name), entry.path))
    return [path for _, _, path in sorted(found)]


def _rotation_count(name: str) -> int:
    digits = re.search(r"[0-9]*(\.gz|\.zst|\.xz|\.lz4)?$", name).group(0).split(".")[0]
    return int(digits) if digits else 0


def parse_stats(lines) -> CaptureStats:
    """The counters tcpdump prints on stderr when it stops ("N packets captured", ...)."""
    stats = CaptureStats()
    for line in lines:
        for name, regex in _COUNTS.items():
            m = regex.match(line.strip())
            if m:
                setattr(stats, name, int(m.group(1)))
    return stats


def start_error(lines, returncode: int) -> CaptureError:
    """Why tcpdump stopped before capturing, as one line: the right to capture, or tcpdump's own words."""
    said = " ".join(line.strip() for line in lines if line.strip() and not _COUNTS_LINE.match(line.strip()))
    if _NO_RIGHT.search(said):
        return CaptureError("capturing packets needs root or the CAP_NET_RAW capability: run it with sudo "
                            f"(tcpdump said: {said})")
    return CaptureError(f"tcpdump stopped with status {returncode}: {said or 'no message'}")


_COUNTS_LINE = re.compile(r"^\d+ packets? ")
