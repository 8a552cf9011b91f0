"""The command line a user expects: `cachescope --version`, `cachescope --help` with one line per command, and
the README's example output equal to what the command prints today (test_readme.py)."""

import re
import subprocess
import sys

from conftest import REPO

from cachescope.cli import COMMANDS


def _cachescope(*args):
    return subprocess.run([sys.executable, "-m", "cachescope", *args], cwd=REPO, capture_output=True, text=True)


def test_version_is_the_package_version():
    proc = _cachescope("--version")
    version = re.search(r'^version = "(.*)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)
    # and, from a checkout, the commit (test_first_hour.py)
    assert proc.returncode == 0 and re.fullmatch(rf"cachescope {re.escape(version)}( \(commit [^)]+\))?\n", proc.stdout)


def test_help_lists_every_command_on_one_line():
    proc = _cachescope("--help")
    assert proc.returncode == 0
    for name in COMMANDS:
        lines = [line for line in proc.stdout.splitlines() if line.split()[:1] == [name]]
        assert len(lines) == 1 and len(lines[0].split()) > 3, (name, proc.stdout)
        assert _cachescope(name, "--help").returncode == 0  # each one answers its own --help
    assert "--version" in proc.stdout


def test_no_command_or_an_unknown_one_is_a_usage_error():
    assert _cachescope().returncode == 2
    proc = _cachescope("frobnicate")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "frobnicate" in proc.stderr
