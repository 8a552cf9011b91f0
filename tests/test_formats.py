"""One trace in every format reads as the same lookups; formats are told apart by extension and content."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cachescope
from cachescope.trace.formats import detect_format
from traces import as_commands_text, as_monitor_text, lookups_of, random_commands


def to_parquet(commands, path, t0_ns=1_700_000_000 * 10**9, use_dictionary=True):
    """The trace schema of DESIGN.md, one row per lookup / written or deleted field."""
    rows = {"ts_ns": [], "conn": [], "req": [], "op": [], "cmd": [], "key": [], "field": []}
    for req, (cmd, key, fields) in enumerate(commands):
        for f in fields or [None]:
            rows["ts_ns"].append(t0_ns + req * 1000)
            rows["conn"].append(req % 3)
            rows["req"].append(req)
            rows["op"].append("write" if cmd == "HSET" else "read")
            rows["cmd"].append(cmd)
            rows["key"].append(key)
            rows["field"].append(f)
    table = pa.table(rows).cast(pa.schema([
        ("ts_ns", pa.int64()), ("conn", pa.uint32()), ("req", pa.uint64()), ("op", pa.dictionary(pa.int8(), pa.string())),
        ("cmd", pa.dictionary(pa.int8(), pa.string())), ("key", pa.string()), ("field", pa.string()),
    ]))
    pq.write_table(table, path, row_group_size=97, use_dictionary=use_dictionary)


@pytest.mark.parametrize("seed", range(3))
def test_every_format_gives_the_same_hits(tmp, seed):
    commands = random_commands(seed, n_commands=500)
    (tmp / "t.txt").write_text(as_commands_text(commands))
    (tmp / "t.log").write_text(as_monitor_text(commands))
    to_parquet(commands, tmp / "t.parquet")
    results = {}
    for name in ("t.txt", "t.log", "t.parquet"):
        r = cachescope.simulate_trace(str(tmp / name), lru=[5, 50], window=64)
        results[r.trace.format] = (r.summary["hits"].tolist(), r.unique_keys, r.trace.lookups, r.trace.commands,
                                   r.trace.writes)
    assert set(results) == {"commands", "monitor", "parquet"}
    assert len(set(map(str, results.values()))) == 1, results
    assert results["parquet"][2] == len(lookups_of(commands))


@pytest.mark.parametrize("batch_rows", [1 << 16, 37])
def test_parquet_keys_and_fields_stored_with_or_without_dictionaries_read_alike(tmp, monkeypatch, batch_rows):
    """Keys and fields stored with a dictionary are read as one (each distinct one hashed once); stored plain,
    row by row: the events are the same, null fields (GET rows) included. In batches of 37 rows, each batch of
    a 97-row group comes with the group's whole dictionary, whose hashes carry over from the batch before."""
    import numpy as np

    from cachescope.trace import parquet
    from cachescope.trace.readers import open_trace

    monkeypatch.setattr(parquet, "BATCH_ROWS", batch_rows)
    commands = random_commands(4, n_commands=400)
    assert any(not fields for _, _, fields in commands)  # GETs: a row with a null field
    columns = {}
    for name, dictionary in (("plain", False), ("both", True), ("key only", ["key"]), ("field only", ["field"])):
        path = tmp / f"{name}.parquet"
        to_parquet(commands, path, use_dictionary=dictionary)
        for granularity in ("field", "entity"):
            batches = list(open_trace(str(path), granularity=granularity).batches())
            assert max(len(b["keys"]) for b in batches) <= batch_rows
            columns[name, granularity] = {k: np.concatenate([b[k] for b in batches])
                                          for k in ("keys", "entities", "fields", "key_bytes", "ops", "reqs")}
    for (name, granularity), got in columns.items():
        for k, v in got.items():
            assert np.array_equal(v, columns["plain", granularity][k]), (name, granularity, k)
    assert (columns["plain", "field"]["fields"] == 0).any() and not np.array_equal(
        columns["plain", "field"]["keys"], columns["plain", "entity"]["keys"])


def test_dictionary_hashes_keep_only_what_the_dictionary_before_began_with():
    """A dictionary the same as the one before, grown from it, changed, empty, sliced or of nulls only: every
    value's hash and length are those of hashing it afresh, and a null row takes hash 0 and no bytes."""
    import numpy as np

    from cachescope import _native
    from cachescope.trace.arrow_views import strings
    from cachescope.trace.parquet import DictionaryHashes, _hashed

    empty = pa.array([], pa.string()).dictionary_encode()
    arrays = [pa.array(["x", None, "y", "x"]), pa.array(["x", "y", None, "x"]), pa.array(["x", "y", "z", None]),
              pa.array(["q", "x"]), pa.array(["q", "x"]).slice(1), pa.array(["a", "b"]), pa.array(["a", "c", "b"]),
              pa.array([None, None], pa.string())]
    dictionaries = DictionaryHashes()
    for arr in [a.dictionary_encode() for a in arrays[:4]] + [empty] + [a.dictionary_encode() for a in arrays[4:]]:
        hashes, lengths = _hashed(arr, dictionaries)
        offsets, data, present = strings(arr.dictionary_decode())
        assert np.array_equal(hashes, _native.hash_optional_column(offsets, data, present)), arr
        assert np.array_equal(lengths, np.where(present, np.diff(offsets), 0)), arr


def test_parquet_timeline_uses_its_clock(tmp):
    commands = random_commands(1, n_commands=300)
    to_parquet(commands, tmp / "t.parquet")
    r = cachescope.simulate_trace(str(tmp / "t.parquet"), lru=[5], window=50)
    assert r.has_clock and r.timeline["seconds"].max() == pytest.approx(299e-6)


def test_detection(tmp):
    cases = {
        "a.txt": "HMGET st_1 2496559762 1170383926\n",
        "b.txt": 'OK\n1700000000.123456 [0 10.1.2.3:51234] "HMGET" "st_1" "2496559762"\n',
        "c.txt": "42932745\n42932746\n",
        "d.monitor": "anything\n",
        "e.keys": "HMGET st_1 1 2\n",
    }
    for name, text in cases.items():
        (tmp / name).write_text(text)
    assert [detect_format(str(tmp / n)) for n in cases] == ["commands", "monitor", "keys", "monitor", "keys"]
    assert detect_format(str(tmp / "a.txt"), "keys") == "keys"
