"""A real headless Chromium (Debian's `chromium`) opening a local page: its DOM after load, what it wrote to the
console, and a screenshot. Nothing leaves the machine: every host name resolves nowhere, and the background
services that would phone home are off."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]
_CONSOLE = re.compile(r":(INFO|WARNING|ERROR|VERBOSE\d*):CONSOLE[^\]]*\] (.*)")


def chromium() -> str:
    path = shutil.which("chromium")
    assert path, "chromium is not installed (apt-get install chromium; .ci/run installs it)"
    return path


def open_page(page: str, screenshot: str | None = None, width: int = 1200, height: int = 8000):
    """(DOM after load, console messages) of the local file `page`; with `screenshot`, also a PNG of it."""
    with tempfile.TemporaryDirectory() as profile:
        args = [chromium(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]
        action = [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
        proc = subprocess.run([*args, *action, f"file://{page}"], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [m.group(2) for m in _CONSOLE.finditer(proc.stderr)]
    return proc.stdout, console
