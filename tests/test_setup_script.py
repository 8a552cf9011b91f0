"""scripts/setup (and so scripts/test, the README's test command) on a machine without what the tests run: as
root with apt-get, it installs the Debian packages and Rust; otherwise one line names what is missing and how to
get it, and the exit status is 2. Tested with a PATH that hides the machine's programs (stand-ins record what
would have been installed), never by uninstalling anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import REPO

TEST_TOOLS = {"redis-server": "redis-server", "redis-cli": "redis-tools", "tcpdump": "tcpdump", "ip": "iproute2",
              "ethtool": "ethtool", "tcpflow": "tcpflow", "gzip": "gzip", "zstd": "zstd", "xz": "xz-utils",
              "lz4": "lz4", "chromium": "chromium"}
# What the script itself runs, linked from the machine.
BASICS = ["bash", "sh", "dirname", "id", "awk", "sort", "head", "mkdir", "chmod", "cat"]


def _machine(tmp, *, tools=(), cargo=None, cc=True, apt=False):
    """A bin folder with the basics, stand-ins for `tools`, a `cargo` of that version, and an `apt-get` and a
    `curl` that log their arguments (the curl's rustup installs a cargo 1.95)."""
    bin_ = tmp / "bin"
    bin_.mkdir()
    for name in BASICS:
        os.symlink(shutil.which(name), bin_ / name)
    os.symlink(sys.executable, bin_ / "python")
    log = tmp / "log"

    def stub(name, body="exit 0"):
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)

    for tool in tools:
        stub(tool)
    if cargo:
        stub("cargo", f'echo "cargo {cargo} (0000000 2026-01-01)"')
    if cc:
        stub("cc")
    if apt:
        stub("apt-get", f'echo "apt-get $*" >> {log}')
        rustup = ('mkdir -p "$HOME/.cargo/bin"; printf "#!/bin/sh\\necho cargo 1.95.0\\n" > "$HOME/.cargo/bin/cargo"; '
                  'chmod +x "$HOME/.cargo/bin/cargo"')
        stub("curl", f"echo \"curl $*\" >> {log}; echo '{rustup}'")
    home = tmp / "home"
    home.mkdir()
    return {"PATH": str(bin_), "HOME": str(home), "SETUP_SKIP_PIP": "1"}, log


def _setup(env, *args, user=None):
    prefix = [shutil.which("setpriv"), f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user else []
    return subprocess.run([*prefix, shutil.which("bash"), str(REPO / "scripts" / "setup"), *args], cwd="/",
                          env=env, capture_output=True, text=True, timeout=60)


def test_without_apt_get_one_line_names_every_missing_program_and_its_package(tmp):
    env, _ = _machine(tmp, tools=["redis-server", "gzip"], cargo="1.95.0")
    proc = _setup(env, "--dev")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr
    assert line.startswith("scripts/test: missing ")
    missing = {t: p for t, p in TEST_TOOLS.items() if t not in ("redis-server", "gzip")}
    for tool, package in missing.items():
        assert f" {tool}" in line
    assert "apt-get install " + " ".join(missing.values()) in line
    assert "redis-server," not in line and "Rust" not in line


def test_an_old_or_missing_rust_is_named_with_rustup(tmp):
    for i, cargo in enumerate(["1.63.0", None]):
        (tmp / str(i)).mkdir()
        env, _ = _machine(tmp / str(i), tools=TEST_TOOLS, cargo=cargo)
        proc = _setup(env)  # the quick start's setup: no test programs needed
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("scripts/setup: missing Rust >= 1.88") and "https://rustup.rs" in proc.stderr


def test_with_everything_there_it_goes_on_to_pip(tmp):
    env, _ = _machine(tmp, tools=TEST_TOOLS, cargo="1.95.0")
    assert os.geteuid() == 0, "the suite runs as root (README, Development)"
    proc = _setup(env, "--dev")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    proc = _setup(env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_as_root_it_installs_the_packages_and_rust(tmp):
    assert os.geteuid() == 0, "the suite runs as root (README, Development)"
    env, log = _machine(tmp, tools=["redis-server", "curl"], cargo=None, apt=True)
    proc = _setup(env, "--dev")
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    packages = [p for t, p in TEST_TOOLS.items() if t != "redis-server"]
    assert calls[0] == "apt-get update -qq"
    assert calls[1].startswith("apt-get install -y -qq ")
    assert calls[1].split()[4:] == packages
    assert calls[2].startswith("curl ") and "https://sh.rustup.rs" in calls[2]


def test_the_tests_need_root_and_say_so():
    assert os.geteuid() == 0, "the suite runs as root (README, Development)"
    with tempfile.TemporaryDirectory() as where:  # one that user nobody can enter (pytest's tmp is root's only)
        os.chmod(where, 0o755)
        env, _ = _machine(Path(where), tools=TEST_TOOLS, cargo="1.95.0")
        (Path(where) / "home").chmod(0o777)
        proc = _setup(env, "--dev", user=65534)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "need root" in proc.stderr and "sudo" in proc.stderr
        assert "root" not in _setup(env, user=65534).stderr  # the quick start's setup does not need it
