"""A dataset whose parts follow one another in time (a capture rotated into files) is read part after part,
without the merge: the same simulation as the merge's, round trips and commands included, and the merge is
kept for parts that overlap in time."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from fleet_captures import write_fleet


def _write_part(table: pa.Table, path, host: str) -> None:
    from cachescope.trace.dataset_spec import PART_HOST_KEY

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata({PART_HOST_KEY: host.encode()}), path,
                   write_statistics=["ts_ns", "req", "conn"])


@pytest.fixture
def rotated(tmp):
    """One trace (three hosts' captures merged) cut into three parts in time, as a rotated capture's files
    are: the first cut between two rows of one command (the parts share its time), the second between two
    times. Returns (the one-file trace, the dataset's folder)."""
    fleet = write_fleet(tmp)
    one = tmp / "fleet.parquet"
    run_cli("parse.py", fleet["host1"], fleet["host2"], fleet["host3"], "-o", one, "--workers", "0",
            "--no-progress", check_rc=0)
    table = pq.read_table(one)
    ts, req = table.column("ts_ns").to_numpy(), table.column("req").to_numpy()
    inside = np.flatnonzero((req[1:] == req[:-1]) & (ts[1:] == ts[:-1]))  # a row whose command goes on after it
    first = int(inside[len(inside) // 3]) + 1
    later = np.flatnonzero(ts[1:] != ts[:-1]) + 1
    second = int(later[later > first + 10][len(later[later > first + 10]) // 2])
    assert ts[first - 1] == ts[first] and ts[second - 1] < ts[second]
    folder = tmp / "rotated"
    for k, (lo, hi) in enumerate([(0, first), (first, second), (second, len(table))]):
        _write_part(table.slice(lo, hi - lo), folder / "host=redis" / f"redis-{k}.pcap.parquet", "redis")
    return one, folder


def _simulate(trace, **kw):
    from cachescope import simulate_trace

    return simulate_trace(str(trace), lru=[4, 16], curve="lru", writes="invalidate", **kw).to_json()


def test_parts_that_follow_in_time_are_read_in_turn(rotated):
    from cachescope.trace.dataset import dataset_files
    from cachescope.trace.dataset_sequence import sequential_parts

    _, folder = rotated
    _, files = dataset_files(str(folder))
    spans = sequential_parts(files)
    assert spans is not None
    assert [s.file for s in spans] == sorted(files)
    assert spans[0].last_ts == spans[1].first_ts  # the cut command's rows share its time


def test_parts_that_overlap_in_time_are_merged(tmp):
    from cachescope.trace.dataset import dataset_files
    from cachescope.trace.dataset_sequence import sequential_parts

    fleet = write_fleet(tmp)
    run_cli("parse.py", fleet["host1"], fleet["host2"], "-o", f"{tmp}/fleet/", "--workers", "0", "--no-progress",
            check_rc=0)
    _, files = dataset_files(f"{tmp}/fleet/")
    assert len(files) == 2 and sequential_parts(files) is None


def test_reading_in_turn_simulates_as_the_merge(rotated, monkeypatch):
    from cachescope.trace import dataset

    _, folder = rotated
    in_turn = _simulate(folder)
    monkeypatch.setattr(dataset, "sequential_parts", lambda files, fs=None: None)
    merged = _simulate(folder)
    in_turn["trace"].pop("path"), merged["trace"].pop("path")
    assert in_turn == merged
    assert in_turn["trace"]["writes"] > 0 and in_turn["trace"]["round_trips_known"]


def test_rotated_dataset_from_the_command_line(rotated):
    one, folder = rotated
    docs = []
    for trace in (folder, one):
        proc = run_cli("simulate.py", trace, "--lru", "4,16", "--route", "client", "--json", "--no-progress",
                       check_rc=0)
        docs.append(json.loads(proc.stdout))
    # The cut command is two commands of the dataset, one of the one-file trace; every lookup and hit agrees.
    a, b = docs
    assert a["trace"]["commands"] == b["trace"]["commands"] + 1
    assert a["trace"]["lookups"] == b["trace"]["lookups"] and a["trace"]["unique_keys"] == b["trace"]["unique_keys"]
    assert [r["hits"] for r in a["results"]] == [r["hits"] for r in b["results"]]
    clients = sorted(p["client"] for p in a["results"][0]["per_pod"])
    assert clients == ["host1:10.0.0.1", "host2:10.0.0.2", "host3:10.0.0.3"]
