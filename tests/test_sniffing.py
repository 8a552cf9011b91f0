"""A file is read as a trace only when it looks like one: prose is not a keys trace."""

from conftest import REPO, run_cli
from test_bad_input import assert_one_line_error


def test_readme_is_not_a_keys_trace():
    proc = run_cli("simulate.py", REPO / "README.md", "--lru", "10")
    assert_one_line_error(proc, "README.md", "could not recognize", "--format")


def test_prose_and_csv_are_refused_but_keys_are_read(tmp):
    prose = tmp / "notes.txt"
    prose.write_text("# notes\n\nsome words about caches\nand more words\n" * 5)
    assert_one_line_error(run_cli("simulate.py", prose, "--lru", "10"), str(prose), "could not recognize")
    keys = tmp / "k.txt"
    keys.write_text("".join(f"user:{i % 13}\n" for i in range(200)))
    proc = run_cli("simulate.py", keys, "--lru", "10", "--json", check_rc=0)
    assert '"format": "keys"' in proc.stdout
    forced = run_cli("simulate.py", prose, "--lru", "10", "--format", "keys", check_rc=0)
    assert "keys" in forced.stdout
