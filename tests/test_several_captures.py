"""parse.py given several captures (in this process, --workers 0): one trace merged by time, each host its own
client, conn/req unique; a partitioned dataset; clock offsets; a capture that fails reported by name; and
simulate.py reading the dataset as the one-file trace."""

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from fleet_captures import SERVER_SKEW_NS, write_fleet


@pytest.fixture
def fleet(tmp):
    return write_fleet(tmp)


def _own_rows(path, host):
    from cachescope.parse.capture_source import parse_capture

    df = parse_capture(str(path), ports=None)
    df["client"] = host + ":" + df["client"].astype(str)
    return df


def test_several_captures_merge_by_time_with_each_host_a_client(tmp, fleet):
    out = tmp / "fleet.parquet"
    proc = run_cli("parse.py", fleet["host1"], fleet["host2"], fleet["host3"], "-o", out, "--workers", "0",
                   "--no-progress", "--stats-json", tmp / "s.json", check_rc=0)
    merged = pq.read_table(out).to_pandas()
    own = [_own_rows(fleet[h], h) for h in ("host1", "host2", "host3")]
    assert len(merged) == sum(len(o) for o in own)
    ts = merged["ts_ns"].to_numpy()
    assert (np.diff(ts) >= 0).all()
    # The hosts' traffic interleaves in time (else the merge would prove nothing).
    firsts = merged.groupby("client", observed=True)["ts_ns"].agg(["min", "max"])
    assert firsts["min"].max() < firsts["max"].min()
    # Each capture's rows, in its own order, are those it gives alone.
    cols = ["ts_ns", "op", "cmd", "key", "field", "value_size", "found", "latency_ns", "client", "server"]
    for host, o in zip(("host1", "host2", "host3"), own):
        mine = merged[merged["client"].astype(str).str.startswith(host + ":")]
        pd.testing.assert_frame_equal(mine[cols].astype(str).reset_index(drop=True),
                                      o[cols].astype(str).reset_index(drop=True))
    # conn: one per connection of every capture; req: one per command, its rows together.
    assert merged["conn"].nunique() == sum(o["conn"].nunique() for o in own)
    assert merged["req"].nunique() == sum(o["req"].nunique() for o in own)
    assert (merged.groupby("req")["client"].nunique() == 1).all()
    assert (merged.groupby("req")["ts_ns"].nunique() == 1).all()
    stats = json.loads((tmp / "s.json").read_text())
    assert stats["commands"] == sum(c["commands"] for c in stats["captures"]) > 0
    assert stats["rows"] == len(merged)
    assert "3 captures" in proc.stderr


def test_clock_offset_of_a_connection_seen_twice(tmp, fleet):
    proc = run_cli("parse.py", fleet["host1"], fleet["redis"], fleet["host2"], "-o", tmp / "f.parquet",
                   "--workers", "0", "--no-progress", "--stats-json", tmp / "s.json", check_rc=0)
    offsets = json.loads((tmp / "s.json").read_text())["clock_offsets"]
    assert len(offsets) == 1, offsets  # host2 shares no connection with either
    o = offsets[0]
    assert o["captures"] == sorted([str(fleet["host1"]), str(fleet["redis"])])
    sign = 1 if o["captures"][0] == str(fleet["host1"]) else -1
    assert o["offset_ns"] == sign * SERVER_SKEW_NS
    assert o["connections"] == 1 and o["commands"] >= 8
    assert "clock offset" in proc.stderr and ("+2.500 ms" in proc.stderr or "-2.500 ms" in proc.stderr)


def test_dataset_is_partitioned_and_simulates_as_the_one_file(tmp, fleet):
    caps = [fleet["host1"], fleet["host2"], fleet["host3"]]
    run_cli("parse.py", *caps, "-o", f"{tmp}/fleet/", "--workers", "0", "--no-progress", check_rc=0)
    run_cli("parse.py", *caps, "-o", tmp / "fleet.parquet", "--workers", "0", "--no-progress", check_rc=0)
    parts = sorted(p.relative_to(tmp / "fleet").as_posix() for p in (tmp / "fleet").rglob("*.parquet"))
    assert parts == [f"host=host{h}/date=2023-11-14/hour=22/host{h}-host{h}.pcap.parquet" for h in (1, 2, 3)]
    docs = []
    for trace in (f"{tmp}/fleet/", tmp / "fleet.parquet", f"{tmp}/fleet/**/*.parquet", f"file://{tmp}/fleet/"):
        proc = run_cli("simulate.py", trace, "--lru", "4,16", "--route", "client", "--json", "--no-progress",
                       check_rc=0)
        doc = json.loads(proc.stdout)
        doc["trace"].pop("path")
        docs.append(doc)
    assert docs[0] == docs[1] == docs[2] == docs[3]
    clients = [p["client"] for p in docs[0]["results"][0]["per_pod"]]
    assert sorted(clients) == ["host1:10.0.0.1", "host2:10.0.0.2", "host3:10.0.0.3"]


def test_a_capture_that_fails_is_named_and_the_others_are_written(tmp, fleet):
    bad = tmp / "broken.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1" + b"\x00" * 3)  # a pcap magic and nothing of a header
    out = tmp / "fleet.parquet"
    proc = run_cli("parse.py", fleet["host1"], bad, fleet["host2"], "-o", out, "--workers", "0", "--no-progress",
                   "--port", "6379")
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and str(bad) in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    rows = pq.read_table(out).to_pandas()
    good = run_cli("parse.py", fleet["host1"], fleet["host2"], "-o", tmp / "good.parquet", "--workers", "0",
                   "--no-progress", "--port", "6379", check_rc=0)
    assert good.returncode == 0
    assert rows.equals(pq.read_table(tmp / "good.parquet").to_pandas())


def test_rotated_files_and_host_folders_name_their_hosts(tmp):
    from cachescope.parse.inputs import captures

    for d in ("web1", "web2"):
        (tmp / d).mkdir()
        for name in ("redis.pcap", "redis.pcap1", "redis.pcap2"):
            (tmp / d / name).write_bytes(b"")
    (tmp / "timed").mkdir()
    for name in ("cap-20240521-143000.pcap", "cap-20240521-144500.pcap"):
        (tmp / "timed" / name).write_bytes(b"")
    by_glob = captures([f"{tmp}/web*/redis.pcap*"])
    assert [(c.host, c.path.split("/")[-1]) for c in by_glob] == [
        ("web1", "redis.pcap"), ("web1", "redis.pcap1"), ("web1", "redis.pcap2"),
        ("web2", "redis.pcap"), ("web2", "redis.pcap1"), ("web2", "redis.pcap2")]
    assert len({c.name for c in by_glob}) == 6
    assert {c.host for c in captures([str(tmp / "web2")])} == {"web2"}
    assert {c.host for c in captures([str(tmp / "timed")])} == {"timed"}
    assert {c.host for c in captures([str(p) for p in sorted((tmp / "timed").iterdir())])} == {"cap"}
