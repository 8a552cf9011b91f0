"""Compressing the files of a rotated capture as they close, as `tcpdump -z gzip` does: a week of captures
is kept compressed, and cachescope reads them so (gzip, zstd, xz, lz4; `src/input/`).

tcpdump's own `-z CMD` runs `CMD FILE` on each file it closes, but not on the last one, and takes no
arguments: `zstd FILE` and `lz4 FILE` keep the original next to the compressed copy. So the compressor is run
here instead: each file once tcpdump has moved on to the next, the last once tcpdump has stopped, each with
the options that replace the file by its compressed copy (`FILE.gz`, `FILE.zst`, ...)."""

from __future__ import annotations

import os
import shutil
import subprocess

from cachescope.errors import CaptureError, UsageError

# name: (command replacing FILE by FILE + suffix, suffix)
COMPRESSORS = {
    "gzip": (["gzip", "-f"], ".gz"),
    "zstd": (["zstd", "-q", "-f", "--rm"], ".zst"),
    "xz": (["xz", "-f", "-T1"], ".xz"),
    "lz4": (["lz4", "-q", "-f", "--rm"], ".lz4"),
}
SUFFIXES = tuple(suffix for _, suffix in COMPRESSORS.values())


def check_compressor(name: str) -> None:
    if name not in COMPRESSORS:
        raise UsageError(f"--compress {name!r}: choose from {', '.join(COMPRESSORS)}")
    if shutil.which(COMPRESSORS[name][0][0]) is None:
        raise CaptureError(f"--compress {name}: the {COMPRESSORS[name][0][0]} command is not installed")


def files_order(files: list[str]):
    """Sorts compressed names in the order of the files they came from."""
    rank = {f: i for i, f in enumerate(files)}
    return lambda name: rank.get(name[: -len(_suffix(name))] if _suffix(name) else name, rank.get(name, 0))


def _suffix(name: str) -> str:
    return next((s for s in SUFFIXES if name.endswith(s)), "")


class Compressor:
    """Compresses closed files of a capture in the background, one process per file."""

    def __init__(self, name: str):
        check_compressor(name)
        self.command, self.suffix = COMPRESSORS[name]
        self._running: dict[str, subprocess.Popen] = {}
        self._done: set[str] = set()

    def closed(self, files: list[str]) -> None:
        """`files`, oldest first, as the capture lists them: of those not compressed yet, all but the newest
        (the one tcpdump writes) are closed."""
        plain = [f for f in files if not f.endswith(SUFFIXES)]
        for path in plain[:-1]:
            self._start(path)

    def finish(self, files: list[str]) -> list[str]:
        """After tcpdump has stopped: compresses what is left, waits for every compressor, and returns the
        files as they now are."""
        for path in files:
            self._start(path)
        for path, proc in self._running.items():
            if proc.wait() != 0:
                raise CaptureError(f"{' '.join(self.command)} {path} failed with status {proc.returncode}")
        return sorted({path if path.endswith(SUFFIXES) else path + self.suffix for path in files},
                      key=files_order(files))

    def _start(self, path: str) -> None:
        if path in self._running or path.endswith(SUFFIXES) or not os.path.exists(path):
            return
        self._running[path] = subprocess.Popen([*self.command, path], stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
