"""Commands answered with an error (LOADING, WRONGTYPE, a cluster's MOVED and ASK) are no lookups.

They used to look like commands whose reply was lost (value_size and found null), and counted as lookups: the
failed attempt filled the simulated cache, so the client's retry became a hit. Their rows now carry the
error's code (`error` column), and every simulation (a capture, its Parquet trace, its text trace) leaves
them out and counts them by code."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

import cachescope
from conftest import reference_lru, run_cli
from crafted_capture import (Conversation, answered_with_error, ethernet_pcap, get, hmget, hset, other,
                             timed)
from test_parse_crafted import check_stats, rows_of

LOADING = b"-LOADING Redis is loading the dataset in memory\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
MOVED = b"-MOVED 3999 10.0.0.3:6379\r\n"
ASK = b"-ASK 3999 10.0.0.3:6379\r\n"


def _conversation() -> Conversation:
    """Lookups answered with errors, each retried as a client does, among ordinary ones."""
    v = lambda n: b"x" * n  # noqa: E731
    features = {"11": v(3), "22": v(4)}
    return Conversation([
        [hmget("st_1", features),
         answered_with_error(hmget("st_2", features), LOADING),
         answered_with_error(hmget("plain_1", {"11": None}), WRONGTYPE),
         get("plain_1", v(5))],
        [answered_with_error(hmget("st_3", features), MOVED),
         hmget("st_3", features),
         answered_with_error(hset("st_4", {"11": v(2)}), ASK),
         other("ASKING"),
         hset("st_4", {"11": v(2)})],
        [hmget("st_2", features),
         hmget("st_1", features),
         answered_with_error(get("plain_2", None), LOADING)],
    ])


def _logical_lookups(conv: Conversation) -> list[tuple]:
    """The lookups the service's cache sees: the read rows of commands not answered with an error."""
    return [(k, f) for e in conv.exchanges if e.error is None for op, _, k, f, _, _ in e.rows if op == "read"]


def _write(tmp, conv: Conversation):
    path = tmp / "errors.pcap"
    path.write_bytes(ethernet_pcap(conv, timed(conv.segments())))
    return path


def test_error_replies_mark_their_rows_with_the_code(tmp):
    conv = _conversation()
    captured = timed(conv.segments())
    path = tmp / "errors.pcap"
    path.write_bytes(ethernet_pcap(conv, captured))
    df = cachescope.parse_capture(str(path))
    rows = rows_of(df)
    assert rows == conv.expected_rows(captured)
    codes = [r["error"] for r in rows]
    assert codes.count("LOADING") == 3 and codes.count("WRONGTYPE") == 1 and codes.count("MOVED") == 2
    assert codes.count("ASK") == 1
    # An error is not an unknown reply: those rows have no outcome either, but no code.
    assert all(r["found"] is None for r in rows if r["error"] is not None)
    check_stats(df.attrs["stats"], packets=len(captured), connections=1, commands=len(conv.exchanges),
                rows=len(rows))
    assert df.attrs["stats"]["error_replies"] == {"LOADING": 2, "WRONGTYPE": 1, "MOVED": 1, "ASK": 1}


def _simulate(trace, *extra) -> dict:
    proc = run_cli("simulate.py", trace, "--lru", "3", "--json", "--no-progress", *extra, check_rc=0)
    return json.loads(proc.stdout)


def test_attempts_answered_with_an_error_neither_hit_nor_fill_the_cache(tmp):
    conv = _conversation()
    path = _write(tmp, conv)
    logical = _logical_lookups(conv)
    hits = sum(reference_lru(logical, 3))
    errors = {"LOADING": 2, "WRONGTYPE": 1, "MOVED": 1, "ASK": 1}
    doc = _simulate(path)
    (lru,) = doc["results"]
    assert (lru["lookups"], lru["hits"]) == (len(logical), hits)
    assert doc["infinite"]["hits"] == sum(reference_lru(logical, 10**6))
    assert doc["trace"]["lookups"] == len(logical)
    assert doc["trace"]["error_replies"] == errors
    # HMGET st_2 (2 fields), HMGET plain_1 (1), HMGET st_3 (2), GET plain_2 (1); the HSET is a write.
    assert doc["trace"]["error_lookups"] == 6
    assert doc["trace"]["lookups_by_server"] == {"10.0.0.2:6379": len(logical)}
    summary = run_cli("simulate.py", path, "--lru", "3", "--no-progress", check_rc=0).stdout
    assert "5 commands answered with an error are no lookups (6 left out)" in summary
    assert "2 of them redirected by the cluster (MOVED, ASK)" in summary
    assert "lookups by Redis server: 10.0.0.2:6379" in summary

    # The same trace written as Parquet (the error column kept) and as text (the attempts left out).
    parquet, text = tmp / "t.parquet", tmp / "t.txt"
    parsed = run_cli("parse.py", path, "-o", parquet, check_rc=0)
    assert "answered with an error" in parsed.stderr and "LOADING 2" in parsed.stderr
    assert pq.read_table(parquet).column("error").null_count < pq.read_metadata(parquet).num_rows
    again = _simulate(parquet)
    assert again["results"] == doc["results"] and again["trace"]["error_replies"] == errors
    run_cli("parse.py", path, "-o", text, check_rc=0)
    assert "MOVED" not in text.read_text() and len(text.read_text().splitlines()) == 6
    from_text = _simulate(text)
    assert (from_text["results"][0]["lookups"], from_text["results"][0]["hits"]) == (len(logical), hits)


def test_a_write_answered_with_an_error_invalidates_nothing(tmp):
    """HSET st_1 answered MOVED changed nothing on the server: with --writes invalidate it must not evict."""
    features = {"11": b"abc"}
    conv = Conversation([[hmget("st_1", features)],
                         [answered_with_error(hset("st_1", {"11": b"new"}), MOVED)],
                         [hmget("st_1", features)]])
    doc = _simulate(_write(tmp, conv), "--writes", "invalidate")
    (lru,) = doc["results"]
    assert (lru["lookups"], lru["hits"], lru["invalidations"]) == (2, 1, 0)
    assert doc["trace"]["writes"] == 0 and doc["trace"]["error_replies"] == {"MOVED": 1}


def test_a_parquet_error_column_of_plain_strings_is_read_too(tmp):
    """A trace written by another tool may hold `error` as plain strings rather than a category."""
    import pandas as pd

    df = pd.DataFrame({"req": [0, 0, 1, 2, 2, 3], "op": ["read"] * 6,
                       "key": ["a", "a", "a", "b", "b", "a"], "field": ["1", "2", "1", "1", "2", "1"],
                       "error": [None, None, "TRYAGAIN", "CLUSTERDOWN", "CLUSTERDOWN", None]})
    path = tmp / "plain.parquet"
    df.to_parquet(path)
    doc = _simulate(path)
    (lru,) = doc["results"]
    assert (lru["lookups"], lru["hits"]) == (3, 1)
    assert doc["trace"]["error_replies"] == {"TRYAGAIN": 1, "CLUSTERDOWN": 1}
    assert doc["trace"]["error_lookups"] == 3


def test_a_command_whose_rows_span_two_batches_is_counted_once():
    """Record batches may cut a command's rows (Parquet row groups do): its error is one attempt, not two."""
    from types import SimpleNamespace

    import pyarrow as pa

    from cachescope.trace.parquet import RecordBatchEvents
    from cachescope.trace.readers import TraceInfo

    src = SimpleNamespace(info=TraceInfo("t.parquet", "parquet"), granularity="field", path="t.parquet",
                          want_clients=False, key_pattern=None)
    events = RecordBatchEvents(src)

    def batch(reqs, errors):
        n = len(reqs)
        return pa.RecordBatch.from_pydict({
            "req": pa.array(reqs, pa.uint64()), "op": pa.array(["read"] * n),
            "key": pa.array(["k"] * n), "field": pa.array([str(i) for i in range(n)]),
            "error": pa.array(errors, pa.string()).dictionary_encode()})

    events.convert(batch([0, 1, 1], [None, "MOVED", "MOVED"]))
    events.convert(batch([1, 1, 2, 3], ["MOVED", "MOVED", None, "MOVED"]))
    assert src.info.error_replies == {"MOVED": 2}
    assert (src.info.error_lookups, src.info.lookups) == (5, 2)
