"""How the process's memory is allocated: one arena for every thread, and the pages batches leave free in the
heap given back every ten seconds while a trace is simulated."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cachescope.simulate import freed_memory
from conftest import REPO

_ARENAS = """
import ctypes, threading
import cachescope._native
def allocate():
    block = bytearray(1 << 20)  # from malloc, on this thread: glibc gives a new thread an arena of its own
    del block
thread = threading.Thread(target=allocate)
thread.start()
thread.join()
ctypes.CDLL("libc.so.6").malloc_stats()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
@pytest.mark.parametrize("user_choice", [None, "4"])
def test_threads_share_one_allocator_arena_unless_the_user_chose(user_choice):
    """Each arena keeps up to 64 MiB freed (`keep_freed_memory`): one per thread put a Parquet trace's peak
    27-41 MiB higher. A user's own MALLOC_ARENA_MAX stands."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    if user_choice:
        env["MALLOC_ARENA_MAX"] = user_choice
    proc = subprocess.run([sys.executable, "-c", _ARENAS], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    arenas = proc.stderr.count("Arena ")
    assert arenas == (2 if user_choice else 1), proc.stderr


_FRAGMENTED = """
import cachescope._native as native
def rss():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmRSS"))
blocks = [bytearray(100_000) for _ in range(2_000)]  # 200 MB from the heap (below the mmap threshold)
del blocks[::2]  # half of it free, in holes between blocks still in use: glibc returns none of it
before = rss()
native.release_freed_memory()
print(before - rss())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap")
def test_the_pages_left_free_between_blocks_in_use_are_given_back():
    proc = subprocess.run([sys.executable, "-c", _FRAGMENTED], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 80e6, f"{int(proc.stdout) / 1e6:.0f} MB given back of 100 MB free"


def test_the_batches_pass_through_with_memory_given_back_between_them(monkeypatch):
    calls = []
    monkeypatch.setattr(freed_memory._native, "release_freed_memory", lambda: calls.append(1))
    monkeypatch.setattr(freed_memory, "EVERY_S", 0.0)
    assert list(freed_memory.giving_back_freed_memory(iter(range(5)))) == list(range(5))
    assert len(calls) == 5
    calls.clear()
    monkeypatch.setattr(freed_memory, "EVERY_S", 3600.0)
    assert list(freed_memory.giving_back_freed_memory(iter(range(5)))) == list(range(5))
    assert calls == []
