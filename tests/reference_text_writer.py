"""The text writers of `parse.py` as they were in Python (one line per command, per-row Python), kept as the
reference the Rust writer (`src/parse/text_out.rs`) must match byte for byte."""

from __future__ import annotations

import pyarrow as pa

from cachescope.parse.keytext import key_bytes

VALUE_PLACEHOLDER = "?"
# Commands whose rows are (key, field) pairs that the command writes as `field value`.
_FIELD_VALUE_WRITES = {"HSET", "HMSET"}
_KEY_VALUE_WRITES = {"SET", "SETNX", "GETSET", "APPEND", "MSET", "MSETNX"}
# Arguments after the key (or key and field) that are neither: a TTL, an increment, an offset.
_PLACEHOLDER_ARGS = {"EXPIRE": 1, "PEXPIRE": 1, "EXPIREAT": 1, "PEXPIREAT": 1, "SETEX": 2, "PSETEX": 2,
                     "INCRBY": 1, "DECRBY": 1, "INCRBYFLOAT": 1, "SETRANGE": 2, "HINCRBY": 1,
                     "HINCRBYFLOAT": 1, "HSETNX": 1}


def text(rb: pa.RecordBatch, monitor: bool) -> bytes:
    """What the Python `TraceWriter` wrote for one batch (error rows left out), as the file's bytes."""
    rb = rb.filter(rb.column("error").is_null())
    return "".join(_text_lines(rb, monitor)).encode("utf-8")


def _text_lines(rb: pa.RecordBatch, monitor: bool):
    """One line per command (its rows share `req`)."""
    cols = {name: rb.column(name).to_pylist() for name in ("ts_ns", "req", "cmd", "key", "field", "client")}
    n = rb.num_rows
    i = 0
    while i < n:
        j = i
        while j < n and cols["req"][j] == cols["req"][i]:
            j += 1
        args = _command_args(cols["cmd"][i], cols["key"][i:j], cols["field"][i:j])
        if monitor:
            ts = cols["ts_ns"][i]
            quoted = " ".join(_redis_quote(a) for a in args)
            yield f"{ts // 10**9}.{ts % 10**9 // 1000:06d} [0 {cols['client'][i]}] {quoted}\n"
        else:
            yield " ".join(_bare(a) for a in args) + "\n"
        i = j


def _command_args(cmd: str, keys: list, fields: list) -> list[str]:
    """The command as a line of arguments, rebuilt from its rows (values replaced by the placeholder)."""
    if cmd == "HGETALL":
        return [cmd, keys[0]]
    extra = [VALUE_PLACEHOLDER] * _PLACEHOLDER_ARGS.get(cmd, 0)
    if fields[0] is not None:  # per-field rows of one key
        if cmd in _FIELD_VALUE_WRITES:
            return [cmd, keys[0], *(x for f in fields for x in (f, VALUE_PLACEHOLDER))]
        return [cmd, keys[0], *fields, *extra]
    if cmd in _KEY_VALUE_WRITES:
        return [cmd, *(x for k in keys for x in (k, VALUE_PLACEHOLDER))]
    return [cmd, *keys, *extra]


def _bare(arg: str) -> str:
    """An argument for the commands format: as is, or double-quoted when it holds spaces, quotes, control
    characters, a backslash (an escaped key: its bytes are written back) or nothing."""
    if arg and not any(c.isspace() or c in '"\\' or ord(c) < 0x20 or ord(c) == 0x7F for c in arg):
        return arg
    return _redis_quote(arg)


_REPR = {0x5C: "\\\\", 0x22: '\\"', 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x07: "\\a", 0x08: "\\b"}


def _redis_quote(arg: str) -> str:
    """The argument's bytes (`keytext.key_bytes`), double-quoted as Redis prints a string in MONITOR
    (`sdscatrepr`): the escapes above, printable ASCII as it is, any other byte as `\\xHH`. The text readers
    read exactly those bytes back, so distinct keys stay distinct (and a NUL never reaches the file)."""
    out = ['"']
    for b in key_bytes(arg):
        out.append(_REPR.get(b) or (chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02x}"))
    out.append('"')
    return "".join(out)
