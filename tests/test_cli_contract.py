"""The command-line contract of DESIGN.md that outside tools rely on."""

import json
import re

import pandas as pd

from conftest import run_cli
from traces import as_monitor_text, lookups_of, random_commands


def write_monitor(tmp, seed=7):
    commands = random_commands(seed, n_commands=600)
    path = tmp / "t.monitor"
    path.write_text(as_monitor_text(commands, step=0.25))
    return path, commands


def test_json_document(tmp):
    path, commands = write_monitor(tmp)
    proc = run_cli("simulate.py", path, "--lru", "1e1,2e1,40", "--json", check_rc=0)
    doc = json.loads(proc.stdout)  # exactly one JSON document on stdout
    keys = lookups_of(commands)
    assert doc["trace"] == doc["trace"] | {
        "path": str(path), "format": "monitor", "commands": len(commands), "lookups": len(keys),
        "unique_keys": len(set(keys)),
    }
    assert [r["capacity"] for r in doc["results"]] == [10, 20, 40]
    for r in doc["results"]:
        assert {"policy", "capacity", "capacity_unit", "lookups", "hits", "misses", "hit_rate"} <= r.keys()
        assert r["policy"] == "lru" and r["capacity_unit"] == "entries"
        assert r["hits"] + r["misses"] == r["lookups"] == len(keys)
        assert r["hit_rate"] == r["hits"] / r["lookups"]
    assert doc["infinite"]["hits"] == len(keys) - len(set(keys))
    hits = [r["hits"] for r in doc["results"]]
    assert hits == sorted(hits) and hits[-1] <= doc["infinite"]["hits"]  # LRU is a stack algorithm


def test_human_summary_shows_each_capacity_and_the_bound(tmp):
    path, _ = write_monitor(tmp)
    proc = run_cli("simulate.py", path, "--lru", "10,100", check_rc=0)
    out = proc.stdout
    assert re.search(r"^LRU 10 ", out, re.M) and re.search(r"^LRU 100 ", out, re.M) and "infinite (bound)" in out
    assert "%" in out and "unique keys" in out


def test_plot_and_timeline_files(tmp):
    path, commands = write_monitor(tmp)
    png, csv = tmp / "p.png", tmp / "t.csv"
    run_cli("simulate.py", path, "--lru", "10,100", "--window", "100", "--plot", png, "--timeline", csv,
            "--json", check_rc=0)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    tl = pd.read_csv(csv)
    n_lookups = len(lookups_of(commands))
    n_windows = -(-n_lookups // 100)
    assert len(tl) == 3 * n_windows  # two capacities and the bound
    assert {"policy", "capacity", "end_lookup", "ts_ns", "seconds", "hit_rate", "cumulative_hit_rate"} <= set(tl)
    assert tl.groupby(["policy", "capacity"], dropna=False)["lookups"].sum().eq(n_lookups).all()


def test_console_script_spelling(tmp):
    path, _ = write_monitor(tmp)
    direct = run_cli("simulate.py", path, "--lru", "10", "--json", check_rc=0)
    via = run_cli("-m", "cachescope", "simulate", path, "--lru", "10", "--json", check_rc=0)
    assert json.loads(direct.stdout)["results"] == json.loads(via.stdout)["results"]


def test_feature_store_options_from_the_command_line(tmp):
    path, commands = write_monitor(tmp)
    schedule = tmp / "refresh.csv"
    field = next(fields[0] for cmd, _, fields in commands if cmd == "HMGET")
    schedule.write_text(f"feature,time\n{field},1700000030\n")
    allow = tmp / "allow.txt"
    allow.write_text(f"# the features we cache\n{field}\n")
    proc = run_cli("simulate.py", path, "--lru", "20,1e3", "--invalidate-on-write", "--ttl", "40s",
                   "--refresh-schedule", schedule, "--restart-every", "1min", "--plot", tmp / "p.png",
                   "--json", check_rc=0)
    doc = json.loads(proc.stdout)
    for row in doc["results"]:
        assert row["restarts"] == 2  # 150 s of traffic, restarts at 60 s and 120 s
        assert row["round_trips_saved"] <= row["commands"]
        assert "byte_hit_rate" not in row  # an entry capacity has no byte metrics
        assert len(row["recoveries_s"]) == 2
    assert (tmp / "p.png").stat().st_size > 20_000
    allowed = run_cli("simulate.py", path, "--lru", "1e3", "--allow-list", allow, "--json", check_rc=0)
    row = json.loads(allowed.stdout)["results"][0]
    assert row["uncacheable"] > 0 and row["hits"] > 0


def test_byte_capacity_on_a_text_trace(tmp):
    path, _ = write_monitor(tmp)
    proc = run_cli("simulate.py", path, "--lru", "64KiB", "--assume-value-size", "100", "--json", check_rc=0)
    row = json.loads(proc.stdout)["results"][0]
    assert row["capacity"] == 65536 and row["capacity_unit"] == "bytes"
    assert row["byte_hit_rate"] == row["hit_rate"]  # every value the same size
