"""Memory bounded on dense MGETs whatever the capture's length (issue 27, item 5): a real capture of pipelined
MGETs of 100-500 keys (real redis-server, redis-py and tcpdump on loopback), read as a capture of the client's
side only (its replies missing, as a `dst port` filter or a one-way mirror port has it: no command is ever
answered, so every connection holds its commands to the end). Its first quarter and the whole of it must
parse, to Parquet and to oracleGeneral, and simulate, in about the same peak memory.

Before: the commands still waiting at the end were made into rows all at once, a connection's 16 MiB of keys
counted without their spans, and every row held behind a command that is never answered was let out in one
batch of up to half a million rows: the peaks grew with the capture (here parse.py to Parquet 114 -> 308 MiB,
oracleGeneral 97 -> 350, simulate.py 108 -> 400), 1.1 GiB on the 78 MB client side of a 210 MB capture.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO
from script_prelude import PEAK

from . import dense_mget
from .conftest import _require_tools

# What the parser's bounds let the whole capture hold beyond its first quarter, which reaches none of them:
# 4 connections x 4 MiB of waiting commands' arguments, 256 Ki rows held for send order (about 80 bytes each,
# twice while they are sorted) and a batch in each stage. Measured: 40-70 MiB; before, 190-290 MiB.
MARGIN = 80 << 20


@pytest.fixture(scope="module")
def client_sides(tmp_path_factory):
    """(first quarter, whole) of the client's side of a 48 MB capture of dense MGETs, and the server port."""
    _require_tools()
    folder = tmp_path_factory.mktemp("dense_mget")
    pcap, desc = dense_mget.cached(folder, 48)
    small, large = folder / "small.pcap", folder / "large.pcap"
    dense_mget.client_side(pcap, small, desc["port"], 0.25)
    dense_mget.client_side(pcap, large, desc["port"])
    return small, large, desc["port"]


def _peak(*argv) -> int:
    proc = subprocess.run([sys.executable, "-c", PEAK, *map(str, argv)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stderr.strip().splitlines()[-1].split()[1]) * 1024


@pytest.mark.slow
@pytest.mark.parametrize("output", ["parquet", "oracleGeneral", "simulate"])
def test_peak_memory_does_not_grow_with_a_dense_mget_capture(client_sides, tmp_path, output):
    small, large, port = client_sides

    def run(pcap):
        if output == "simulate":
            return _peak(REPO / "simulate.py", pcap, "--port", port, "--lru", "100000", "--json")
        return _peak(REPO / "parse.py", pcap, "--port", port, "-o", tmp_path / f"out.{output}", "--no-progress")

    base, peak = run(small), run(large)
    assert peak - base < MARGIN, (f"{output}: {peak >> 20} MiB on the whole capture's client side, "
                                  f"{base >> 20} MiB on its first quarter")
