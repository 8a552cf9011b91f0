"""What `--version` prints: the package's version and, run from a git checkout, the commit (numbers can change
between commits of the same version), `modified` when the checkout's tracked files differ from it."""

from __future__ import annotations

import os
import subprocess

from cachescope import __version__

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit() -> str | None:
    """`5f56622` or `5f56622, modified` when this package runs from a git checkout (and git is installed);
    None from an installed wheel, or without git."""
    if not os.path.exists(os.path.join(_CHECKOUT, ".git")):
        return None
    try:
        head = _git("rev-parse", "--short=7", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    if not head:
        return None
    return f"{head}, modified" if dirty else head


def version_line(prog: str = "cachescope") -> str:
    """`simulate.py 0.1.0 (commit 5f56622)`."""
    at = commit()
    return f"{prog} {__version__}" + (f" (commit {at})" if at else "")


def _git(*args: str) -> str:
    proc = subprocess.run(["git", "-C", _CHECKOUT, *args], capture_output=True, text=True, timeout=10,
                          env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    if proc.returncode != 0:
        raise subprocess.SubprocessError(proc.stderr.strip())
    return proc.stdout.strip()
