"""What a capture made by `sample_traces/record_capture.py` must parse into, read from its truth JSON.

Each HMGET and HSET the script sent is one command of the trace: rows sharing one `req`, one per field, in the
command's order. An HMGET row carries the size the server returned and `found`. A nil is `found` false with
no size, or a size of 0: the stored values are never empty. An HSET row carries the size of the value written
and no `found`. The `CLIENT INFO` and the client library's handshake make no rows.
"""

from __future__ import annotations

import itertools
import json

import pandas as pd

ROW_COMMANDS = ("HMGET", "HSET")


def load_truth(path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def expected_commands(conn: dict) -> list[tuple]:
    """[(cmd, key, ((field, size, found), ...))] of one truth connection, in the order sent."""
    out = []
    for c in conn["commands"]:
        key, rest = c["args"][0], c["args"][1:]
        if c["cmd"] == "HMGET":
            rows = tuple((f, s, s is not None) for f, s in zip(rest, c["sizes"]))
        elif c["cmd"] == "HSET":
            rows = tuple((f, size, None) for f, size in zip(rest[::2], rest[1::2]))
        else:
            continue
        out.append((c["cmd"], key, rows))
    return out


def parsed_commands(rows: pd.DataFrame) -> list[tuple]:
    """The same shape from the trace rows of one connection: rows grouped by `req`, in `req` order."""
    rows = rows.sort_values("req", kind="stable")
    columns = zip(rows["req"], rows["cmd"].astype(str), rows["key"], rows["field"], rows["value_size"],
                  rows["found"])
    out = []
    for _, group in itertools.groupby(columns, key=lambda r: r[0]):
        group = list(group)
        cmds, keys = {r[1] for r in group}, {r[2] for r in group}
        assert len(cmds) == 1 and len(keys) == 1, f"one command of one key per req: {group[:3]}"
        out.append((cmds.pop(), keys.pop(), tuple(_row(*r[3:]) for r in group)))
    return out


def _row(field, size, found):
    size = None if pd.isna(size) else int(size)
    found = None if found is None or pd.isna(found) else bool(found)
    if found is False and size == 0:
        size = None
    return (field, size, found)


def assert_matches_truth(df: pd.DataFrame, truth: dict) -> None:
    """The trace has one connection per truth connection, in the same order, each with exactly its commands."""
    conns = truth["connections"]
    assert sorted(df["conn"].unique()) == list(range(len(conns)))
    assert set(df["server"].astype(str)) == {truth["server"]}
    for i, conn in enumerate(conns):
        rows = df[df["conn"] == i]
        assert set(rows["client"].astype(str)) == {conn["client"]}, f"connection {i} is {conn['name']}'s"
        assert_same_sequence(conn["name"], expected_commands(conn), parsed_commands(rows))


def assert_same_sequence(name: str, want: list, seen: list) -> None:
    """Equal lists, or a message naming the first command that differs (not a diff of thousands of rows)."""
    for n, (w, s) in enumerate(zip(want, seen)):
        assert w == s, f"{name}: command {n} differs:\n  expected {w!r:.500}\n  parsed   {s!r:.500}"
    assert len(want) == len(seen), f"{name}: {len(want)} commands sent, {len(seen)} parsed"


def lookups(truth: dict) -> list[tuple[str, str]]:
    """Every (entity, field) looked up, over all connections."""
    return [(c["args"][0], f) for conn in truth["connections"] for c in conn["commands"] if c["cmd"] == "HMGET"
            for f in c["args"][1:]]


def field_writes(truth: dict) -> int:
    return sum(len(c["args"][1:]) // 2 for conn in truth["connections"] for c in conn["commands"]
               if c["cmd"] == "HSET")
