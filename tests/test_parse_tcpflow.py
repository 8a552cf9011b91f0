"""parse.py and parse_capture on tcpflow output directories: crafted captures (`crafted_capture.py`) are cut
into flow files by the real tcpflow (`tcpflow -r capture.pcap -o DIR`), then parsed. The rows must be those
the capture gives, with what tcpflow loses: every row's time is its connection's first packet (the client
file's modification time) and there are no latencies."""

import json
import os
import shutil
import subprocess

import pandas as pd
import pytest

import cachescope
from conftest import run_cli
from crafted_capture import STEP, T0, Conversation, ethernet, ethernet_pcap, feature_store_batches, pcap, timed
from test_parse_crafted import ANOMALIES, data_segments, in_batch, lookups, rows_of


@pytest.fixture(scope="module")
def tcpflow():
    path = shutil.which("tcpflow")
    if path is None:
        pytest.fail("these tests need tcpflow (apt-get install tcpflow)", pytrace=False)
    return path


def flows(tcpflow, tmp, capture: bytes, name="c") -> str:
    """The tcpflow directory of a capture."""
    (tmp / f"{name}.pcap").write_bytes(capture)
    out = tmp / name
    subprocess.run([tcpflow, "-r", str(tmp / f"{name}.pcap"), "-o", str(out)], check=True, capture_output=True)
    return str(out)


def without_clock(rows: list[dict], first_ts: dict) -> list[dict]:
    """The rows as tcpflow can give them: the connection's first packet as time, no latency."""
    return [r | {"ts_ns": first_ts[r["conn"]], "latency_ns": None} for r in rows]


def check_stats(stats, **want):
    counters = {k: 0 for k in ["unknown_replies", "damaged_commands", "unknown_commands", "malformed_commands",
                               "invalid_requests", "invalid_replies", "resyncs", "skipped_bytes", "unpaired_replies",
                               "contradictions", "mid_stream_connections", "non_redis_files"]}
    counters.update(want)
    assert {k: stats[k] for k in counters} == counters


def test_a_tcpflow_directory_gives_the_rows_of_its_capture(tmp, tcpflow):
    conv = Conversation(feature_store_batches())
    captured = timed(conv.segments())
    capture = ethernet_pcap(conv, captured)
    d = flows(tcpflow, tmp, capture)
    assert sorted(os.listdir(d)) == ["010.000.000.001.51000-010.000.000.002.06379",
                                     "010.000.000.002.06379-010.000.000.001.51000", "report.xml"]
    df = cachescope.parse_capture(d)
    rows = rows_of(df)
    assert rows == without_clock(conv.expected_rows(captured), {0: T0})
    # The same rows as the capture itself gives, times and latencies aside.
    (tmp / "same.pcap").write_bytes(capture)
    direct = rows_of(cachescope.parse_capture(str(tmp / "same.pcap")))
    assert rows == without_clock(direct, {0: T0})
    commands, n = lookups(conv)
    check_stats(df.attrs["stats"], connections=1, commands=commands, rows=n, files=2, skipped_files=1,
                bytes=len(conv.stream[True]) + len(conv.stream[False]))


def test_connections_reusing_a_port_are_numbered_by_their_first_packet(tmp, tcpflow):
    """Two connections on one 4-tuple (tcpflow names the second `...c1`), and an IPv6 one on a second
    server that begins between them; conn numbers follow the connections' first packets, so that `ts_ns`
    never decreases."""
    batches = feature_store_batches()
    first = Conversation(batches[:2])
    second = Conversation(batches[2:], client_isn=777_000, server_isn=888_000)
    v6 = Conversation(batches[1:3], client=("fd00::10", 52000), server=("fd00::6379", 6379))
    s1 = first.segments()
    t1, t2 = timed(s1), timed(second.segments(), t0=T0 + len(s1) * STEP)
    t3 = timed(v6.segments(), t0=T0 + 7 * STEP, step=3 * STEP)
    packets = sorted([(ts, ethernet(c.ip_packet(s))) for c, t in [(first, t1), (second, t2), (v6, t3)] for ts, s in t])
    d = flows(tcpflow, tmp, pcap(packets))
    names = sorted(n for n in os.listdir(d) if n != "report.xml")
    assert names[0] + "c1" == names[1] and "fd00::10.52000-fd00::6379.06379" in names
    rows = rows_of(cachescope.parse_capture(d))
    (c1, _), (c2, _) = lookups(first), lookups(second)
    assert t1[0][0] < t3[0][0] < t2[0][0]
    (c3, _) = lookups(v6)
    want = (first.expected_rows(t1, conn=0) + v6.expected_rows(t3, conn=1, req0=c1) +
            second.expected_rows(t2, conn=2, req0=c1 + c3))
    got = without_clock(want, {0: t1[0][0], 1: t3[0][0], 2: t2[0][0]})
    assert rows == got
    assert [r["ts_ns"] for r in rows] == sorted(r["ts_ns"] for r in rows)


def test_a_connection_not_seen_from_its_start_has_unknown_replies(tmp, tcpflow):
    """The capture begins inside a command: tcpflow's files begin there too. The commands after it come out
    with their keys; their replies stay unknown (without packet times pairing cannot be found again)."""
    conv = Conversation(feature_store_batches())
    segs = conv.segments()
    first = data_segments(segs, True, in_batch(conv, 0), conv)[1]
    captured = timed(segs[first:])
    d = flows(tcpflow, tmp, ethernet_pcap(conv, captured))
    df = cachescope.parse_capture(d)
    status = {0: "lost"} | {i: "unknown" for i in range(1, len(conv.exchanges))}
    assert rows_of(df) == without_clock(conv.expected_rows(captured, status=status), {0: captured[0][0]})
    commands, n = lookups(conv, status)
    # Skipped: the rest of the cut command, and every reply (their frame boundaries are never found).
    skipped = conv.req_at[1] - segs[first].off + len(conv.stream[False])
    check_stats(df.attrs["stats"], connections=1, commands=commands, rows=n, mid_stream_connections=1,
                resyncs=1, unknown_replies=commands, skipped_bytes=skipped)


def test_parse_py_reads_a_tcpflow_directory(tmp, tcpflow):
    conv = Conversation(feature_store_batches())
    captured = timed(conv.segments())
    d = flows(tcpflow, tmp, ethernet_pcap(conv, captured))
    (tmp / "c" / "unrelated.txt").write_text("not a flow\n")
    out = tmp / "t.parquet"
    proc = run_cli("parse.py", d, "-o", out, "--stats-json", tmp / "s.json", check_rc=0)
    assert rows_of(pd.read_parquet(out)) == without_clock(conv.expected_rows(captured), {0: T0})
    assert "tcpflow directory, 2 flow files" in proc.stderr
    stats = json.loads((tmp / "s.json").read_text())
    assert (stats["files"], stats["skipped_files"], stats["connections"]) == (2, 2, 1)  # report.xml, unrelated.txt
    via = json.loads(run_cli("simulate.py", out, "--lru", "10", "--json", check_rc=0).stdout)
    assert via["trace"]["lookups"] == sum(1 for e in conv.exchanges for r in e.rows if r[0] == "read")
    # A directory without flows of a Redis port is one clear error.
    empty = tmp / "empty"
    empty.mkdir()
    proc = run_cli("parse.py", empty, "-o", tmp / "e.parquet")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and str(empty) in proc.stderr, proc.stderr
    proc = run_cli("parse.py", d, "-o", tmp / "e.parquet", "--port", "6380")
    assert proc.returncode == 2 and "6380" in proc.stderr, proc.stderr
