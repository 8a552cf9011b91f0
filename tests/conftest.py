import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "tests" / "data" / "reference"


def run_cli(*args, cwd=REPO, check_rc=None):
    """Runs a top-level command of the checkout (`simulate.py ...`) as a user would."""
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if check_rc is not None:
        assert proc.returncode == check_rc, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def reference_lru(keys, capacity):
    """Exact LRU, written the plain way: per-lookup hit flags."""
    cache = OrderedDict()
    flags = []
    for k in keys:
        if k in cache:
            cache.move_to_end(k)
            flags.append(True)
        else:
            flags.append(False)
            cache[k] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return flags


@pytest.fixture
def tmp(tmp_path):
    return tmp_path
