"""What batch refreshes cost per feature (`--refresh-schedule`): the entries each feature's refreshes dropped and
the lookups that then missed because of them, in `--json` and in the report's per-feature table; and the
report's per-feature hit rates are those of the cache it chose, not LRU's."""

import json
import re

from cachescope import _native
from chromium import open_page
from conftest import run_cli

T0 = 1_700_000_000
NAMED = "daf_st_p7d_sum_dasher_wait_cat"  # feature A, named in the schedule by its name
A = str(_native.xxh32(NAMED.encode()))
B = "222"  # feature B, named in the schedule by its id


def _monitor(path, commands):
    """A MONITOR log of `(seconds after T0, key, fields)` HMGETs."""
    lines = [f'{T0 + t}.000000 [0 10.0.0.1:5000] "HMGET" "{key}" ' + " ".join(f'"{f}"' for f in fields)
             for t, key, fields in commands]
    path.write_text("\n".join(lines) + "\n")
    return path


def _refreshed(tmp_path):
    # t=0..2: (st_1, A) (st_1, B) (st_2, A) (st_2, B) (st_3, A): all miss, cold.
    # t=10 refresh A drops (st_1, A), (st_2, A), (st_3, A).                A dropped 3
    # t=20: (st_1, A) misses (re-fetch A), (st_1, B) hits.                 A re-fetched 1
    # t=30 refresh B drops (st_1, B), (st_2, B).                           B dropped 2
    # t=40: (st_2, A) misses (re-fetch A: dropped at t=10, not looked up since), (st_2, B) misses (re-fetch B).
    # t=50: (st_2, A), (st_2, B) hit: counted once, at t=40.
    # (st_3, A) and (st_1, B) are dropped and never looked up again.
    # A: 3 dropped, 2 re-fetched; B: 2 dropped, 1 re-fetched. Hits: t=20 B, t=50 A and B.
    trace = _monitor(tmp_path / "t.monitor", [(0, "st_1", [A, B]), (1, "st_2", [A, B]), (2, "st_3", [A]),
                                              (20, "st_1", [A, B]), (40, "st_2", [A, B]), (50, "st_2", [A, B])])
    schedule = tmp_path / "s.csv"
    schedule.write_text(f"feature,time\n{NAMED},{T0 + 10}\n{B},{T0 + 30}\n")
    return trace, schedule


def test_refresh_cost_per_feature_in_json(tmp_path):
    trace, schedule = _refreshed(tmp_path)
    proc = run_cli("simulate.py", trace, "--lru", "100", "--refresh-schedule", schedule, "--json",
                   "--no-progress", check_rc=0)
    (run,) = json.loads(proc.stdout)["results"]
    assert (run["lookups"], run["hits"]) == (11, 3)
    assert (run["refresh_evictions"], run["refresh_refetches"]) == (5, 3)
    assert run["refresh_by_feature"] == [
        {"feature": NAMED, "field": A, "refresh_evictions": 3, "refresh_refetches": 2},
        {"feature": B, "field": B, "refresh_evictions": 2, "refresh_refetches": 1},
    ]
    # the summary names them too
    text = run_cli("simulate.py", trace, "--lru", "100", "--refresh-schedule", schedule, "--no-progress",
                   check_rc=0).stdout
    assert re.search(r"refreshed\s+re-fetched", text) and re.search(r"LRU 100 .*\s5\s+3\b", text)


def test_no_schedule_no_refresh_keys(tmp_path):
    trace, _ = _refreshed(tmp_path)
    (run,) = json.loads(run_cli("simulate.py", trace, "--lru", "100", "--json", "--no-progress",
                                check_rc=0).stdout)["results"]
    assert (run["refresh_evictions"], run["refresh_refetches"]) == (0, 0) and "refresh_by_feature" not in run


def _feature_rows(html: str) -> dict:
    """The per-feature table of a rendered report: {feature: {column: cell}}."""
    part = html.split("<h3>Per feature</h3>", 1)[1]
    table = re.search(r"<table>(.*?)</table>", part, re.S).group(1)
    heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th>(.*?)</th>", table)]
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table.split("</thead>", 1)[1], re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        rows[cells[0]] = dict(zip(heads, cells))
    return rows


def test_the_report_shows_the_refresh_cost_per_hour(tmp_path):
    trace, schedule = _refreshed(tmp_path)
    out, names = tmp_path / "r.html", tmp_path / "names.txt"
    names.write_text(NAMED + "\n")
    run_cli("simulate.py", trace, "--lru", "100", "--refresh-schedule", schedule, "--feature-names", names,
            "--report", out, "--no-progress", check_rc=0)
    dom, console = open_page(str(out))
    assert console == []
    rows = _feature_rows(dom)
    # 50 s of trace: A's 3 drops and 2 re-fetches are 216 and 144 an hour, B's 2 and 1 are 144 and 72.
    assert rows[NAMED]["refresh cost"] == "216 / 144 per h"
    assert rows[B]["refresh cost"] == "144 / 72 per h"
    # The hit rates are the run's, refreshes included: A hits once in 6 lookups (t=50), B twice in 5. LRU's
    # stack distances, blind to refreshes, would give A 3 in 6.
    assert rows[NAMED]["LRU hit rate"] == "16.7%" and rows[B]["LRU hit rate"] == "40.0%"
    text = re.sub(r"<[^>]+>", "", dom)
    assert "dropped 5 entries of this cache and 3 lookups" in text
    # the per-type rates stay LRU's stack distances, and say what they leave out
    assert "which model no refresh" in text


def test_without_a_schedule_the_report_says_how_to_get_the_refresh_cost(tmp_path):
    trace, _ = _refreshed(tmp_path)
    out = tmp_path / "r.html"
    run_cli("simulate.py", trace, "--lru", "100", "--report", out, "--no-progress", check_rc=0)
    html = out.read_text()
    assert "refresh cost" not in _feature_rows(html)[A]
    assert "No refresh cost: no --refresh-schedule was given" in html and "--refresh-schedule s.csv" in html


def test_the_per_feature_hit_rate_is_the_chosen_policys(tmp_path):
    # a = (st_1, A), b = (st_1, B), c = (st_2, B): a b a c a. FIFO of 2: a m, b m, a h, c m (evicts a), a m:
    # A hits 1 of 3. LRU of 2 would keep a (c evicts b): A 2 of 3. B misses either way.
    trace = _monitor(tmp_path / "t.monitor", [(0, "st_1", [A]), (1, "st_1", [B]), (2, "st_1", [A]),
                                              (3, "st_2", [B]), (4, "st_1", [A])])
    out = tmp_path / "r.html"
    run_cli("simulate.py", trace, "--fifo", "2", "--report", out, "--no-progress", check_rc=0)
    html = out.read_text()
    rows = _feature_rows(html)
    assert rows[A]["FIFO hit rate"] == "33.3%" and rows[B]["FIFO hit rate"] == "0.0%"
    assert rows[A]["share of hits"] == "100.0%"
    assert "FIFO at 2 entries" in html
