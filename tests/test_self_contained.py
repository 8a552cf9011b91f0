"""A clone tests green with nothing beside it: no tracked file reaches outside the repository for its data,
and the design notes the README points to are in the repository."""

import re
import subprocess

from conftest import REPO

OUTSIDE = re.compile(rb"\.\./shared\b|\bshared/reference\b")


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / p.decode() for p in out.split(b"\0") if p]


def test_no_tracked_file_reads_outside_the_repository():
    this = REPO / "tests" / "test_self_contained.py"
    offenders = [str(p.relative_to(REPO)) for p in tracked_files()
                 if p.is_file() and p != this and OUTSIDE.search(p.read_bytes())]
    assert offenders == []


def test_design_notes_and_reference_data_are_in_the_repository():
    readme = (REPO / "README.md").read_text()
    assert "DESIGN.md" in readme and (REPO / "DESIGN.md").is_file()
    for name in ("cloudPhysicsIO.keys.txt", "cloudPhysicsIO.expected.json", "README.md"):
        assert (REPO / "tests" / "data" / "reference" / name).is_file()
    assert (REPO / "tests" / "caffeine_replay" / "pom.xml").is_file()
