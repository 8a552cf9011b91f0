"""The parser against real traffic: `cachescope.parse_capture` on captures of a real redis-server must give back,
connection by connection and command by command, what the traffic driver sent and what the server answered.

The same tests also run against reference_parser.py, a slow plain-Python parser that only checks the tests. Each
scenario (host loopback; a namespace with MTU 1500 and no offloads) is recorded once per session by the
fixtures in conftest.py; the truth next to each pcap is described in traffic.py.

What the trace must hold (DESIGN.md's schema), per the truth:
  - one row per lookup or written field; all rows of one command share `req`, in the command's order;
  - HMGET/HGET rows carry the field, GET/MGET/SET/DEL/EXPIRE rows a null field; HGETALL one row per field
    of its reply (the fields come from the reply), or one row with a null field for a missing hash;
  - reads: `found` false exactly for nils, and then `value_size` null or 0; otherwise `value_size` equals the
    bytes the server stored (inside MULTI/EXEC too, where the values come back in EXEC's reply);
  - writes (HSET, SET): `value_size`, when known, the bytes written; deletes (HDEL, DEL) one row per field/key;
  - commands that are neither (CLIENT, HELLO, MULTI, EXEC, ...) make no rows;
  - `conn` dense from 0 in order of first appearance, which is the order the driver connected in;
  - `latency_ns` positive; `client`/`server` the two `ip:port`.
"""

from __future__ import annotations

import itertools

import pytest

ROW_OPS = ("read", "write", "delete")


_PARSED = {}


@pytest.fixture(params=["cachescope", "reference"])
def parsed(request, real_capture):
    """(RealCapture, trace) from `cachescope.parse_capture`, or from reference_parser.py: the latter runs today
    and shows that these tests pass on a correct trace."""
    if request.param == "cachescope":
        import cachescope

        parse = cachescope.parse_capture
    else:
        from .reference_parser import parse_capture as parse
    key = (request.param, str(real_capture.pcap))
    if key not in _PARSED:
        _PARSED[key] = parse(str(real_capture.pcap), ports=(real_capture.port,))
    return real_capture, _PARSED[key]


def expected_commands(conn):
    """[(cmd, op, [(key, field, size)])] of one connection's commands that make rows."""
    return [(c["cmd"], c["op"], [tuple(r) for r in c["rows"]]) for c in conn["commands"] if c["op"] in ROW_OPS]


def parsed_commands(rows):
    """The same shape from the trace rows of one connection: rows grouped by `req`, in `req` order."""
    out = []
    ordered = rows.sort_values("req", kind="stable").itertuples(index=False)
    for _, group in itertools.groupby(ordered, key=lambda r: r.req):
        group = list(group)
        cmds, ops = {str(r.cmd) for r in group}, {str(r.op) for r in group}
        assert len(cmds) == 1 and len(ops) == 1, f"one command per req: {group}"
        out.append((cmds.pop(), ops.pop(), group))
    return out


def test_one_conn_per_driver_connection_in_order(parsed):
    capture, df = parsed
    truth = capture.truth["connections"]
    assert df["conn"].nunique() == len(truth)
    assert sorted(df["conn"].unique()) == list(range(len(truth)))
    for i, conn in enumerate(truth):
        rows = df[df["conn"] == i]
        assert set(rows["client"]) == {conn["client"]}, conn["name"]
        assert set(rows["server"]) == {capture.server}


def test_commands_keys_and_fields_per_connection(parsed):
    capture, df = parsed
    for i, conn in enumerate(capture.truth["connections"]):
        expected = expected_commands(conn)
        got = parsed_commands(df[df["conn"] == i])
        seen = [(cmd, op, [(r.key, _null(r.field)) for r in rows]) for cmd, op, rows in got]
        want = [(cmd, op, [(k, f) for k, f, _ in rows]) for cmd, op, rows in expected]
        _assert_same_sequence(conn["name"], want, seen)


def test_value_sizes_and_nils(parsed):
    capture, df = parsed
    for i, conn in enumerate(capture.truth["connections"]):
        for (cmd, op, want), (_, _, rows) in zip(expected_commands(conn), parsed_commands(df[df["conn"] == i])):
            for (key, field, size), row in zip(want, rows):
                where = f"{conn['name']}: {cmd} {key} {field}"
                if op == "read":
                    assert bool(row.found) == (size is not None), where
                    if size is None:
                        assert _null(row.value_size) in (None, 0), where
                    else:
                        assert row.value_size == size, where
                elif op == "write" and size is not None and _null(row.value_size) is not None:
                    assert row.value_size == size, where


def test_clock_and_latency(parsed):
    capture, df = parsed
    assert (df["latency_ns"] > 0).all()
    assert df["latency_ns"].notna().all()
    for _, rows in df.groupby("conn"):
        # One connection's commands go out in order. The capture may see a pipelined command's first segment a
        # few microseconds before the previous command's (segments of one write reordered on their way to
        # the capture; seen at MTU 1500, 30-40 us), so a time may fall behind an earlier one by that much.
        ts = rows.sort_values("req")["ts_ns"]
        assert (ts.cummax() - ts).max() < 1_000_000, "a command timed over 1 ms before an earlier one"
    from .pcapread import read_segments

    segments = read_segments(capture.pcap)
    first, last = segments[0].ts * 1e9, segments[-1].ts * 1e9
    assert first - 1e6 <= df["ts_ns"].min() and df["ts_ns"].max() <= last + 1e6


def _null(v):
    try:
        import pandas as pd

        return None if pd.isna(v) else v
    except (TypeError, ValueError):
        return v


def _assert_same_sequence(name, want, seen):
    """Equal lists, or a message naming the first command that differs (not a diff of thousands of rows)."""
    for n, (w, s) in enumerate(zip(want, seen)):
        assert w == s, f"{name}: command {n} differs:\n  expected {w!r:.500}\n  parsed   {s!r:.500}"
    assert len(want) == len(seen), f"{name}: {len(want)} commands sent, {len(seen)} parsed"
