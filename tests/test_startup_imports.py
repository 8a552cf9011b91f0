"""Start-up: the commands import pandas, pyarrow, matplotlib and tqdm only where they use them (pandas alone
took most of `simulate.py --help`'s 0.35 s). Each command runs in a fresh interpreter, as a user runs it, and
reports the heavy libraries it imported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO

HEAVY = ("pandas", "pyarrow", "matplotlib", "tqdm")
PCAP = REPO / "sample_traces" / "feature_store.pcap"
PORT = json.loads((REPO / "sample_traces" / "feature_store.truth.json").read_text())["port"]

_PROBE = """
import json, runpy, sys
sys.argv = json.loads(sys.argv[1])
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
print(json.dumps({"code": code, "heavy": sorted(m for m in sys.modules if m in %r)}), file=sys.stderr)
""" % (HEAVY,)


def imported(*argv) -> list[str]:
    """The heavy libraries `python argv...` imported (it must succeed)."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps([str(a) for a in argv])], cwd=REPO,
                          capture_output=True, text=True)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), proc.stderr
    return report["heavy"]


@pytest.mark.parametrize("command", ["simulate.py", "parse.py", "capture.py"])
def test_help_imports_none_of_the_heavy_libraries(command):
    assert imported(command, "--help") == []


@pytest.mark.parametrize("ext", ["txt", "monitor", "oracleGeneral"])
def test_parse_to_text_or_binary_imports_no_pandas_matplotlib_or_tqdm(tmp, ext):
    assert imported("parse.py", PCAP, "-o", tmp / f"t.{ext}", "--port", PORT, "--no-progress") == ["pyarrow"]


def test_simulate_without_plot_imports_no_matplotlib():
    heavy = imported("simulate.py", REPO / "sample_traces" / "feature_store.monitor", "--lru", "1e3",
                     "--no-progress")
    assert "matplotlib" not in heavy and "tqdm" not in heavy
