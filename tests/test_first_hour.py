"""What a new user meets in the first hour (issue 28): values written as people write them (`--target 80`,
`10kb`), `--version` on every command with the checkout's commit, progress bars on a terminal only, examples in
`simulate.py --help`, and a suggestion for a mistyped flag."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from conftest import REPO, run_cli
from traces import as_monitor_text, random_commands

from cachescope.errors import UsageError
from cachescope.simulate.capacity import Capacity, parse_capacity
from cachescope.simulate.labels import label
from cachescope.simulate.sizing import parse_targets


@pytest.fixture
def monitor_trace(tmp):
    path = tmp / "t.monitor"
    path.write_text(as_monitor_text(random_commands(3, n_commands=600)))
    return path


# Values as people write them

@pytest.mark.parametrize("written", ["80", "80%", "0.8", " 80 % ", 80, 0.8])
def test_a_target_of_80_is_80_percent_however_written(written):
    assert parse_targets(written) == [0.8]


def test_targets_above_1_are_percentages_and_at_most_1_fractions():
    assert parse_targets("1") == [1.0] and parse_targets("100") == [1.0] and parse_targets("1%") == [0.01]
    assert parse_targets("55,0.7,80%") == [0.55, 0.7, 0.8]
    for bad in ("150", "0", "0%", "eighty"):
        with pytest.raises(UsageError):
            parse_targets(bad)


def test_the_command_line_takes_target_80(monitor_trace):
    docs = [json.loads(run_cli("simulate.py", monitor_trace, "--curve", "lru", "--target", t, "--json",
                               "--no-progress", check_rc=0).stdout) for t in ("80", "80%", "0.8")]
    assert [d["sizing"][0]["target"] for d in docs] == [0.8] * 3
    assert docs[0]["sizing"] == docs[1]["sizing"] == docs[2]["sizing"]


@pytest.mark.parametrize("written", ["10kb", "10Kb", "64mb", "64Mb", "2gb", "1 tb"])
def test_a_lower_case_b_after_k_or_m_is_ambiguous_and_says_how_to_write_it(written):
    with pytest.raises(UsageError) as e:
        parse_capacity(written)
    n = re.match(r"[0-9]+", written).group(0)
    message = str(e.value)
    assert "ambiguous" in message and "\n" not in message
    k = written.strip()[len(n):].strip()[0].lower()
    assert (f"{n}{k} for " in message) == (k != "t")  # 10k: entries (there is no 1t)
    assert re.search(rf"{n}[KMGT]B ", message) and re.search(rf"{n}[KMGT]iB ", message)


@pytest.mark.parametrize("written, capacity, shown", [
    ("10k", Capacity(10_000, "entries"), "LRU 10k"),
    ("1e4", Capacity(10_000, "entries"), "LRU 10k"),
    ("10KB", Capacity(10_000, "bytes"), "LRU 10 KB"),
    ("10kB", Capacity(10_000, "bytes"), "LRU 10 KB"),
    ("10KiB", Capacity(10_240, "bytes"), "LRU 10 KiB"),
    ("10kib", Capacity(10_240, "bytes"), "LRU 10 KiB"),
    ("1 MB", Capacity(10**6, "bytes"), "LRU 1 MB"),
    ("1.5GB", Capacity(1_500_000_000, "bytes"), "LRU 1.5 GB"),
    ("64MiB", Capacity(64 << 20, "bytes"), "LRU 64 MiB"),
    ("1.5MiB", Capacity(3 << 19, "bytes"), "LRU 1.5 MiB"),
    ("100B", Capacity(100, "bytes"), "LRU 100 B"),
])
def test_capacities_are_echoed_as_typed(written, capacity, shown):
    assert parse_capacity(written) == capacity
    assert label("lru", capacity.value, capacity.unit) == shown


def test_the_command_line_refuses_10kb_in_one_line_and_labels_10KB_as_typed(monitor_trace):
    proc = run_cli("simulate.py", monitor_trace, "--lru", "10kb", "--no-progress")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "ambiguous" in proc.stderr and "10k" in proc.stderr and "10KB" in proc.stderr and "10KiB" in proc.stderr
    out = run_cli("simulate.py", monitor_trace, "--lru", "10KB,1MB", "--assume-value-size", "100",
                  "--no-progress", check_rc=0).stdout
    assert re.search(r"^LRU 10 KB ", out, re.M) and re.search(r"^LRU 1 MB ", out, re.M), out


# --version

def _commit() -> str | None:
    if not (REPO / ".git").exists():
        return None
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip() if head.returncode == 0 else None


@pytest.mark.parametrize("command", [["simulate.py"], ["parse.py"], ["capture.py"], ["-m", "cachescope"],
                                     ["-m", "cachescope", "simulate"], ["-m", "cachescope", "parse"],
                                     ["-m", "cachescope", "capture"]])
def test_every_command_prints_its_version_and_the_commit(command):
    proc = run_cli(*command, "--version", check_rc=0)
    version = re.search(r'^version = "(.*)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)
    prog = {"simulate.py": "simulate.py", "parse.py": "parse.py", "capture.py": "capture.py"}.get(
        command[0], " ".join(["cachescope", *command[2:]]))
    m = re.fullmatch(rf"{re.escape(prog)} {re.escape(version)}(?: \(commit ([0-9a-f]+)(, modified)?\))?\n",
                     proc.stdout)
    assert m, proc.stdout
    commit = _commit()
    if commit:  # from a checkout (git installed): the commit it runs
        assert m.group(1) == commit, (proc.stdout, commit)


# Progress bars

class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


@pytest.mark.parametrize("tty", [False, True])
def test_progress_bars_are_drawn_on_a_terminal_only(monkeypatch, tty):
    from cachescope.progress import count_bar, progress_bar

    stream = _Stream(tty)
    monkeypatch.setattr(sys, "stderr", stream)
    for make in (progress_bar, count_bar):
        with make(1000, "reading", True) as bar:
            bar.update(10)
            assert (type(bar).__name__ == "_NoBar") != tty
        with make(1000, "reading", False) as bar:
            assert type(bar).__name__ == "_NoBar"
    if not tty:
        assert stream.getvalue() == ""


_SLOW_READ = """
import time
from cachescope.progress import progress_bar
with progress_bar(1000, "reading t.monitor", True) as bar:
    time.sleep(1.3)  # past the bar's one-second delay
    bar.update(500)
    time.sleep(0.2)
    bar.update(500)
"""


@pytest.mark.parametrize("terminal", [False, True])
def test_a_redirected_stderr_gets_no_carriage_returns_a_terminal_gets_the_bar(tmp, terminal):
    import fcntl
    import pty
    import struct
    import termios

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    if terminal:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns: room for a bar
        proc = subprocess.run([sys.executable, "-c", _SLOW_READ], stderr=follower, env=env, timeout=60)
        os.close(follower)
        written = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            written += chunk
        os.close(leader)
        assert proc.returncode == 0 and b"\r" in written and b"reading t.monitor" in written, written
    else:
        with open(tmp / "err", "w") as err:
            proc = subprocess.run([sys.executable, "-c", _SLOW_READ], stderr=err, env=env, timeout=60)
        assert proc.returncode == 0 and (tmp / "err").read_text() == ""


# --help examples, and a mistyped flag

def _examples(help_text: str) -> list[str]:
    block = help_text.split("examples (from the repository's root):\n", 1)[1]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("python simulate.py ")]


def test_help_ends_with_examples_that_run(tmp):
    help_text = run_cli("simulate.py", "--help", check_rc=0).stdout
    examples = _examples(help_text)
    assert len(examples) >= 3, help_text
    flags = " ".join(examples)
    assert "--target" in flags and "--curve" in flags and "--pods" in flags  # sizing, curve and target, fleets
    for example in examples:
        args = [str(tmp / a.split("/", 1)[1]) if a.startswith("out/") else a for a in shlex.split(example)[1:]]
        proc = run_cli(*args, "--no-progress", check_rc=0)
        assert "infinite (bound)" in proc.stdout
    assert run_cli("-m", "cachescope", "simulate", "--help", check_rc=0).stdout.count("cachescope simulate sample_") \
        == len(examples)


@pytest.mark.parametrize("typo, meant", [("--traget", "--target"), ("--taget=80", "--target"),
                                         ("--wtinylfy", "--wtinylfu"), ("--jsno", "--json"), ("--zzz", None)])
def test_a_mistyped_flag_gets_a_suggestion_in_one_line(monitor_trace, typo, meant):
    proc = run_cli("simulate.py", monitor_trace, "--lru", "100", typo)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert typo.split("=")[0] in proc.stderr
    assert (f"did you mean {meant}?" in proc.stderr) if meant else ("did you mean" not in proc.stderr)


def test_parse_and_capture_suggest_too(tmp):
    proc = run_cli("parse.py", "sample_traces/feature_store.pcap", "-o", tmp / "t.parquet", "--anonymise")
    assert proc.returncode == 2 and "did you mean --anonymize?" in proc.stderr and proc.stderr.count("\n") == 1
    proc = run_cli("capture.py", "-o", tmp / "c.pcap", "--duraton", "1s")
    assert proc.returncode == 2 and "did you mean --duration?" in proc.stderr and proc.stderr.count("\n") == 1
