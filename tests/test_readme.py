"""The README's first command works as written (less its `bash scripts/setup`, the install the test run has
done), and prints what the README shows; its test command is scripts/test."""

import re
import shlex
import subprocess

from conftest import REPO, run_cli


def test_quick_start_command(tmp):
    readme = (REPO / "README.md").read_text()
    first = re.search(r"```sh\n(.*?)\n```", readme, re.S).group(1)
    install, command = first.split(" && ", 1)
    assert install == "bash scripts/setup"  # which runs pip install -r requirements.txt (test_setup_script.py)
    args = shlex.split(command)
    assert args[:2] == ["python", "simulate.py"]
    # what it writes goes to out/, a folder every clone has and git ignores
    outputs = [a for a in args if a.endswith((".png", ".html"))]
    assert outputs and all(a.startswith("out/") for a in outputs)
    assert (REPO / "out").is_dir()
    if (REPO / ".git").exists():
        ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", *outputs], capture_output=True, text=True)
        assert ignored.stdout.split() == outputs, ignored
    args = [str(tmp / a[len("out/"):]) if a in outputs else a for a in args[1:]]
    out = run_cli(*args, "--no-progress", check_rc=0).stdout
    assert re.search(r"^LRU 10k ", out, re.M) and "infinite (bound)" in out
    # the output the README shows is what the command prints today
    shown = re.search(r"The first command prints.*?\n```\n(.*?)\n```", readme, re.S).group(1)
    assert out.rstrip("\n") == shown
    assert list(tmp.glob("*.png")) and list(tmp.glob("*.html"))


def test_test_command_is_the_test_script():
    """The README's test command (.ci/run runs it verbatim) is scripts/test, which installs what the tests need."""
    readme = (REPO / "README.md").read_text()
    command = re.search(r"<!-- test-command -->\n```sh\n(.*?)\n```", readme, re.S).group(1)
    assert command == "bash scripts/test"
    script = (REPO / "scripts" / "test").read_text()
    assert "scripts/setup --dev" in script and "cargo test --quiet" in script and "python -m pytest -q" in script
