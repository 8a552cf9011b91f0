"""The captures `parse.py` is given, each with the host it was taken on: files, globs (expanded here when the
shell did not), the rotated files `capture.py --rotate-*` writes, and folders of captures, one per host."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

from cachescope.errors import UsageError

# What tcpdump's rotation adds to a name (tcpdump.py): a count after the extension (`redis.pcap3`), and with
# timed rotation the opening time before it (`redis-20240521-143000.pcap`).
_ROTATION_COUNT = re.compile(r"(\.pcap(?:ng)?)[0-9]+$")
_OPENING_TIME = re.compile(r"[-_.]?\d{8}[-_T]?\d{4,6}(?=\.|$)")
_CAPTURE_EXTENSIONS = re.compile(r"\.(pcap|pcapng|cap|monitor)[0-9]*(\.(gz|zst|xz|lz4))?$")
# What `capture.py --compress` or `tcpdump -z` adds after the rotated name.
_COMPRESSED = re.compile(r"\.(gz|zst|xz|lz4)$")


@dataclass(frozen=True)
class Capture:
    """One input: its path, the host it was taken on, and a name unique among the inputs."""

    path: str
    host: str
    name: str


def expand_inputs(args: list[str]) -> list[str]:
    """Each argument as the paths it names: a glob's matches (sorted), a folder as itself (see captures),
    anything else as it is (a missing file is reported when it is opened)."""
    paths: list[str] = []
    for arg in args:
        if not os.path.exists(arg) and glob.has_magic(arg):
            matches = sorted(glob.glob(arg))
            if not matches:
                raise UsageError(f"{arg}: no file matches")
            paths += matches
        else:
            paths.append(arg)
    return paths


def is_host_folder(path: str) -> bool:
    """A folder of captures (one host's): it holds capture files. A tcpflow output folder holds flow files."""
    if not os.path.isdir(path):
        return False
    return any(_CAPTURE_EXTENSIONS.search(e.name) for e in os.scandir(path) if e.is_file())


def captures(args: list[str]) -> list[Capture]:
    """The captures to parse, in a stable order, each with its host: a host folder's name for the files in
    it; else the file's name less its extension and its rotation suffix, or its folder's name when that name
    is taken by files of several folders (`web1/redis.pcap`, `web2/redis.pcap`)."""
    found: list[tuple[str, str | None]] = []  # (path, host when a folder names it)
    for path in expand_inputs(args):
        if is_host_folder(path):
            host = os.path.basename(os.path.normpath(path))
            files = sorted(e.path for e in os.scandir(path) if e.is_file() and _CAPTURE_EXTENSIONS.search(e.name))
            found += [(f, host) for f in files]
        else:
            found.append((path, None))
    seen: set[str] = set()
    unique = []
    for path, host in found:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append((path, host))
    named = iter(host_names([path for path, host in unique if host is None]))
    out, names = [], set()
    for path, host in unique:
        host = host if host is not None else next(named)
        name = _unique(f"{host}-{os.path.basename(path)}", names)
        out.append(Capture(path, host, name))
    return out


def host_names(paths: list[str]) -> list[str]:
    """The host of each capture file: its name less its extension and its rotation suffix, or its folder's
    name when that name is taken by files of several folders (`web1/redis.pcap`, `web2/redis.pcap`)."""
    folders_of: dict[str, set[str]] = {}
    for path in paths:
        folders_of.setdefault(host_of_name(path), set()).add(os.path.dirname(os.path.realpath(path)))
    hosts = []
    for path in paths:
        stem = host_of_name(path)
        shared = len(folders_of[stem]) > 1
        hosts.append(os.path.basename(os.path.dirname(os.path.realpath(path))) if shared else stem)
    return hosts


def host_of_name(path: str) -> str:
    """`redis.pcap3` -> `redis`, `redis-20240521-143000.pcap` -> `redis`, `a.pcap` -> `a`, `a.pcap2.gz` -> `a`."""
    name = _ROTATION_COUNT.sub(r"\1", _COMPRESSED.sub("", os.path.basename(path)))
    stem, _ = os.path.splitext(name)
    return _OPENING_TIME.sub("", stem) or stem


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}.{n}"
    taken.add(candidate)
    return candidate
