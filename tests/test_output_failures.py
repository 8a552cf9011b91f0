"""Outputs that cannot be written: a full disk (`/dev/full`, and a full tmpfs for the files written beside
and renamed), a missing folder. Each is exit status 2 and one line naming the path the user gave (never the
temporary file), nothing partial is left looking complete, an earlier complete output stays as it was, and a
folder that is missing is refused before any parsing or simulation starts."""

from __future__ import annotations

import subprocess

import pytest

from conftest import REPO, run_cli

CAPTURE = REPO / "sample_traces" / "feature_store.pcap"


def one_error_line(proc, prog: str, path) -> str:
    """The run failed with exit status 2 and a single line naming `path`; returns that line."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith(f"{prog}: error:")]
    assert len(errors) == 1 and errors[0] == proc.stderr.splitlines()[-1], proc.stderr
    assert errors[0].startswith(f"{prog}: error: {path}: "), errors[0]
    assert ".partial" not in proc.stderr
    return errors[0]


@pytest.mark.parametrize("fmt", ["parquet", "commands", "monitor"])
def test_a_trace_written_to_a_full_device_fails_naming_it(fmt):
    proc = run_cli("parse.py", CAPTURE, "-o", "/dev/full", "--format", fmt)
    assert "No space left on device" in one_error_line(proc, "parse.py", "/dev/full")


@pytest.mark.parametrize("flag", ["--timeline", "--plot", "--report"])
def test_simulate_outputs_on_a_full_device_fail_naming_it(flag):
    proc = run_cli("simulate.py", CAPTURE, "--lru", "100", "--no-progress", flag, "/dev/full")
    assert f"cannot write {flag}: No space left on device" in one_error_line(proc, "simulate.py", "/dev/full")


def test_stats_json_on_a_full_device_fails_naming_it(tmp_path):
    proc = run_cli("parse.py", CAPTURE, "-o", tmp_path / "t.parquet", "--stats-json", "/dev/full")
    assert "cannot write --stats-json" in one_error_line(proc, "parse.py", "/dev/full")


@pytest.mark.parametrize("argv", [
    ["parse.py", CAPTURE, "-o", "{missing}/t.parquet"],
    ["parse.py", CAPTURE, "-o", "{tmp}/t.txt", "--stats-json", "{missing}/s.json"],
    ["simulate.py", CAPTURE, "--lru", "100", "--timeline", "{missing}/t.csv"],
    ["simulate.py", CAPTURE, "--lru", "100", "--report", "{missing}/r.html"],
])
def test_a_missing_folder_is_refused_before_any_work(tmp_path, argv):
    missing = tmp_path / "no" / "such" / "folder"
    argv = [str(a).format(tmp=tmp_path, missing=missing) for a in argv]
    proc = run_cli(*argv)
    path = next(a for a in argv if str(missing) in a)
    assert "does not exist" in one_error_line(proc, argv[0], path)
    # Refused before reading the capture: nothing parsed was reported, nothing written.
    assert "packets" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs holding `previous.txt` (an earlier output), then filled to the last byte. Mounting
    needs root, as the integration tests' namespaces do: without it this FAILS, it never skips."""
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        (mount / "previous.txt").write_text("an earlier complete trace\n")
        with open(mount / "fill", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_leaves_nothing_partial_and_the_earlier_output_intact(full_disk):
    for out in ("previous.txt", "new.parquet"):
        proc = run_cli("parse.py", CAPTURE, "-o", full_disk / out)
        assert "No space left on device" in one_error_line(proc, "parse.py", full_disk / out)
    assert sorted(p.name for p in full_disk.iterdir()) == ["fill", "previous.txt"]
    assert (full_disk / "previous.txt").read_text() == "an earlier complete trace\n"
    proc = run_cli("simulate.py", CAPTURE, "--lru", "100", "--no-progress", "--timeline", full_disk / "t.csv")
    one_error_line(proc, "simulate.py", full_disk / "t.csv")
    assert sorted(p.name for p in full_disk.iterdir()) == ["fill", "previous.txt"]
