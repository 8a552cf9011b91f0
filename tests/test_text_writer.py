"""parse.py's text outputs (`commands` .txt and `.monitor`) are written by the Rust core
(`src/parse/text_out.rs`); they must stay byte for byte what the Python writer wrote
(tests/reference_text_writer.py): on the committed capture, and on rows with odd keys."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from cachescope.parse import writers
from cachescope.parse.capture_source import CaptureRows
from cachescope.parse.keytext import key_text
from cachescope.parse.schema import SCHEMA
from conftest import REPO, run_cli
import reference_text_writer

PCAP = REPO / "sample_traces" / "feature_store.pcap"
PORT = json.loads((REPO / "sample_traces" / "feature_store.truth.json").read_text())["port"]


def _batch(rows, clients=("10.0.0.1:5000", "10.0.0.2:6000")):
    """A record batch of (req, cmd, raw key bytes, raw field bytes or None, error or None) rows."""
    n = len(rows)
    cmds = sorted({r[1] for r in rows})
    errors = sorted({r[4] for r in rows if r[4] is not None}) or ["MOVED"]
    return pa.RecordBatch.from_arrays([
        pa.array(1_700_000_000_999_999_999 + np.arange(n, dtype=np.int64) * 1_234_567, pa.int64()),
        pa.array(np.zeros(n, np.uint32)),
        pa.array([r[0] for r in rows], pa.uint64()),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int8)), pa.array(["read", "write", "delete"])),
        pa.DictionaryArray.from_arrays(pa.array([cmds.index(r[1]) for r in rows], pa.int16()), pa.array(cmds)),
        pa.array([key_text(r[2]) for r in rows], pa.large_string()),
        pa.array([None if r[3] is None else key_text(r[3]) for r in rows], pa.large_string()),
        pa.nulls(n, pa.int32()), pa.nulls(n, pa.bool_()), pa.nulls(n, pa.int64()),
        pa.DictionaryArray.from_arrays(pa.array(np.arange(n, dtype=np.int32) % len(clients)), pa.array(clients)),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["s"])),
        pa.DictionaryArray.from_arrays(pa.array([None if r[4] is None else errors.index(r[4]) for r in rows],
                                                pa.int16()), pa.array(errors)),
        pa.array([r[0] for r in rows], pa.uint64()),
    ], schema=SCHEMA)


ODD_KEYS = [b"a\x00b", b"back\\slash", b'quo"te', b"\xff\xfe\x80", "é".encode(), b"", b"sp ace", b"tab\t",
            b"nl\nr\r", b"\x07\x08", b"\x7f", b"\\x41", b"\\\\x", "a\u3000b".encode(), "\u0085".encode(),
            "\u200b".encode(), b"\x1c", b"'single'", "😀".encode(), b"plain:key"]


def _odd_rows():
    rows, req = [], 0
    for k in ODD_KEYS:
        for cmd in ("GET", "DEL", "EXPIRE", "SETEX", "SET", "INCRBY"):
            rows.append((req, cmd, k, None, None))
            req += 1
        rows.append((req, "HGETALL", k, ODD_KEYS[3], None))
        rows.append((req, "HGETALL", k, ODD_KEYS[4], None))
        req += 1
    for cmd in ("MGET", "MSET", "DEL"):  # several keys in one command
        rows += [(req, cmd, k, None, None) for k in ODD_KEYS]
        req += 1
    for cmd in ("HSET", "HMGET", "HSETNX", "HINCRBY", "HMSET"):  # several fields of one key
        rows += [(req, cmd, b"h\xff", f, None) for f in ODD_KEYS]
        req += 1
    rows += [(req, "GET", b"moved", None, "MOVED"), (req + 1, "GET", b"after", None, None)]
    # An error row among the rows of one command, and a command split around an error row of another.
    rows += [(req + 2, "MGET", b"x", None, None), (req + 3, "GET", b"e", None, "ASK"),
             (req + 2, "MGET", b"y", None, None), (req + 4, "GET", b"last", None, "MOVED")]
    return rows


@pytest.mark.parametrize("fmt", ["commands", "monitor"])
def test_odd_keys_are_written_as_the_python_writer_did(fmt):
    rb = _batch(_odd_rows())
    want = reference_text_writer.text(rb, monitor=fmt == "monitor")
    assert want.count(b"\n") == 150
    assert writers.text_lines(rb, fmt) == want


@pytest.mark.parametrize("fmt", ["commands", "monitor"])
def test_every_character_is_quoted_as_the_python_writer_did(fmt):
    """Python's str.isspace decided which keys the commands format quotes: every code point of the first
    three planes (the last space is U+3000) as a key of its own."""
    chars = [c for c in range(0x30000) if not 0xD800 <= c < 0xE000]
    rows = [(i, "GET", chr(c).encode(), None, None) for i, c in enumerate(chars)]
    rb = _batch(rows)
    assert writers.text_lines(rb, fmt) == reference_text_writer.text(rb, monitor=fmt == "monitor")


def test_sliced_batches_are_written_from_their_own_rows():
    rb = _batch(_odd_rows()).slice(37, 101)
    for fmt in ("commands", "monitor"):
        assert writers.text_lines(rb, fmt) == reference_text_writer.text(rb, monitor=fmt == "monitor")


@pytest.mark.parametrize("ext,fmt", [("txt", "commands"), ("monitor", "monitor")])
def test_parse_py_writes_the_sample_capture_as_the_python_writer_did(tmp, ext, fmt):
    want = b"".join(reference_text_writer.text(rb, monitor=fmt == "monitor")
                    for rb in CaptureRows(str(PCAP), [PORT]).record_batches())
    assert want.count(b"\n") > 1000
    out = tmp / f"t.{ext}"
    run_cli("parse.py", PCAP, "-o", out, "--port", PORT, "--no-progress", check_rc=0)
    assert out.read_bytes() == want


def test_oracle_general_records_are_those_of_the_python_writer(tmp):
    """The records (`_OracleGeneral.add`, now from the batch's buffers) are those the writer built with
    pyarrow's filter and `_hash_columns`: reads only, rows answered with an error left out."""
    from cachescope import _native
    from cachescope.trace.parquet import _hash_columns

    parts = []
    for rb in CaptureRows(str(PCAP), [PORT]).record_batches():
        rb = rb.filter(rb.column("error").is_null())
        rb = rb.filter(pa.array(np.asarray(rb.column("op").indices) == 0))
        parts.append((rb.column("ts_ns").to_numpy(), _hash_columns(rb, "field", "", 0)["keys"],
                      np.maximum(rb.column("value_size").fill_null(1).to_numpy().astype(np.uint32), 1)))
    ts, ids, sizes = (np.concatenate(c) for c in zip(*parts))
    out = tmp / "t.oracleGeneral"
    run_cli("parse.py", PCAP, "-o", out, "--port", PORT, "--no-progress", check_rc=0)
    rec = np.fromfile(out, dtype=writers._OracleGeneral.DTYPE)
    assert len(rec) == len(ts) > 1000
    assert (rec["time"] == (ts - ts[0]) // 10**9).all()
    assert (rec["id"] == ids).all()
    assert (rec["size"] == sizes).all()
    assert (rec["next"] == _native.next_access(np.ascontiguousarray(ids)).view(np.int64)).all()
