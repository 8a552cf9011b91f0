"""The README's first command works as written (less its `pip install`, which the test run has done), and prints
what the README shows."""

import re
import shlex

from conftest import REPO, run_cli


def test_quick_start_command(tmp):
    readme = (REPO / "README.md").read_text()
    first = re.search(r"```sh\n(.*?)\n```", readme, re.S).group(1)
    install, command = first.split(" && ", 1)
    assert install == "pip install -r requirements.txt"
    args = shlex.split(command)
    assert args[:2] == ["python", "simulate.py"]
    args = [str(tmp / a) if a.endswith((".png", ".html")) else a for a in args[1:]]
    out = run_cli(*args, "--no-progress", check_rc=0).stdout
    assert re.search(r"^LRU 10k ", out, re.M) and "infinite (bound)" in out
    # the output the README shows is what the command prints today
    shown = re.search(r"The first command prints.*?\n```\n(.*?)\n```", readme, re.S).group(1)
    assert out.rstrip("\n") == shown
    assert list(tmp.glob("*.png")) and list(tmp.glob("*.html"))
