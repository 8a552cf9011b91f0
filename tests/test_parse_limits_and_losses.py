"""The capture parser on crafted captures at its size limits and across losses that used to give wrong rows:
commands, keys and replies over the limits are counted and reported, never merged into one empty key; after
a lost client segment no reply is paired on a guess; a value's text never becomes commands. Every rows'
expectation comes from what was built (`crafted_capture.py`), never from a parser."""

import json
import random
from dataclasses import replace

import cachescope
from cachescope.parse.keytext import key_bytes
from conftest import run_cli
from crafted_capture import (EACH, Conversation, Exchange, array, bulk, command, ethernet, ethernet_pcap, get, hmget,
                             pcap, timed)
from test_parse_crafted import check_stats, data_segments, lookups, overlapping, parse

MARK = b"PLANTED"


def test_an_mget_over_the_command_size_limit_is_counted_and_reported(tmp):
    """An MGET of 200,000 keys (17.6 MB) is over the 16 MiB a command may hold: it gives no rows, and says so
    in `oversized_commands`; its reply is still consumed, so the GET after it pairs."""
    keys = [b"feature_store:entity:%064d" % i for i in range(200_000)]
    mget = Exchange(("MGET",), array([bulk(None)] * len(keys)), raw=command("MGET", *keys))
    assert len(mget.request) > 17_000_000
    conv = Conversation([[get("before", b"abc")], [mget], [get("after", b"xy")]])
    captured = timed(conv.segments(mss_client=60_000, mss_server=60_000))
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    status = {1: "lost"}
    assert rows == conv.expected_rows(captured, status=status)
    commands, n = lookups(conv, status)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, oversized_commands=1)


def test_keys_over_the_argument_limit_do_not_become_one_empty_key(tmp):
    """Two distinct keys of 1.1 MiB each used to come out as the same empty key, so that the second looked
    like a hit. Their rows are dropped and counted (`elided_keys`, `elided_args`); the rest is untouched."""
    big = [b"a" * (1_100_000) + b"1", b"a" * (1_100_000) + b"2"]
    long_gets = [replace(get("x", b"value"), args=("GET", k.decode()), rows=[]) for k in big]
    conv = Conversation([[get("short", b"v"), *long_gets, hmget("h", {"f": b"12"})]])
    captured = timed(conv.segments(mss_client=60_000, mss_server=60_000))
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert rows == conv.expected_rows(captured)
    assert all(r["key"] != "" for r in rows)
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, elided_args=2,
                elided_keys=2)


def test_an_hgetall_reply_over_the_element_limit_is_counted(tmp):
    """An HGETALL answered with 131,073 fields (262,147 elements, over the 262,144 a reply is described by)
    is one lookup of the entity with its reply unknown, and is counted in `oversized_replies`."""
    n_fields = 131_073
    reply = array([x for i in range(n_fields) for x in (bulk(b"f%d" % i), bulk(MARK))])
    hgetall = Exchange(("HGETALL", "h"), reply, [("read", "HGETALL", "h", None, None, None)])
    conv = Conversation([[hgetall], [get("after", b"xy")]])
    captured = timed(conv.segments(mss_client=60_000, mss_server=60_000))
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    # The reply is paired (its latency is known) but not described.
    want = conv.expected_rows(captured)
    assert [dict(r, latency_ns=None) for r in rows] == [dict(r, latency_ns=None) for r in want]
    commands, n = lookups(conv)
    check_stats(stats, packets=len(captured), connections=1, commands=commands, rows=n, oversized_replies=1)


def flat_hgetall(key: str, fields: dict) -> Exchange:
    """HGETALL answered in RESP2: a flat array of field, value, ..."""
    reply = array([x for f, v in fields.items() for x in (bulk(f.encode()), bulk(v))])
    return Exchange(("HGETALL", key), reply, [("read", "HGETALL", key, f, len(v), True) for f, v in fields.items()])


def test_after_a_lost_request_segment_a_pipelining_client_is_never_paired_one_off(tmp):
    """A client segment holding one whole command is lost. The client then sends an HMGET, the server answers
    the lost command, is quiet, and the client sends an HGETALL before the HMGET's reply comes: the HGETALL
    used to be paired with the HMGET's reply, its values becoming field names. After such a loss no reply is
    paired: the rows come from the commands' own bytes, their replies unknown."""
    conv = Conversation([
        [get("k0", b"abc")],
        [get("lost", b"xyz"), hmget("e", {"f1": b"secret-" + MARK, "f2": b"other-" + MARK})],
        # Its reply unknown, an HGETALL is one lookup of the entity.
        [replace(flat_hgetall("h", {"g": b"1"}), rows=[("read", "HGETALL", "h", None, None, None)])],
        [get("k3", b"abcd")],
        [get("k4", b"abcde")],
    ])
    segs = conv.segments(mss_client=EACH, mss_server=EACH)
    # The HMGET's reply comes after the HGETALL was sent (it answers after a quiet moment).
    hmget_reply = data_segments(segs, False, range(2, 3), conv)[0]
    hgetall_cmd = data_segments(segs, True, range(3, 4), conv)[0]
    moved = segs.pop(hmget_reply)
    segs.insert(hgetall_cmd, moved)
    lost = data_segments(segs, True, range(1, 2), conv)[0]
    assert overlapping(conv, segs[lost], True) == [1]
    segs.pop(lost)
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    # After the loss commands are read on probation: the last one, that no command follows, is confirmed by
    # its reply (sent at a quiet moment, of its shape), and kept with its reply unknown.
    status = {1: "lost", 2: "unknown", 3: "unknown", 4: "unknown", 5: "unknown"}
    assert rows == conv.expected_rows(captured, status=status)
    assert not any(MARK.decode() in str(r[k]) for r in rows for k in ("key", "field", "cmd"))
    assert (stats["unknown_replies"], stats["gaps"], stats["unconfirmed_commands"]) == (4, 1, 0)


def test_a_value_spelling_commands_after_a_gap_invents_none(tmp):
    """A lost client segment takes the header of an HSET's large value: its length is unknown, and its text
    spells commands (`*3 $5 HMGET ...`). None of them may become rows; the real commands after it do."""
    value = (b"x" * 50 + command("HMGET", "invented_key", "invented_field") + b"more text " * 30
             + command("GET", "invented_too") + b"y" * 40)
    write = Exchange(("HSET", "h", "f", value), b":1\r\n", [("write", "HSET", "h", "f", len(value), None)])
    conv = Conversation([[get("k0", b"a")], [write], [get("k2", b"ab")], [get("k3", b"abc")], [get("k4", b"x")]])
    segs = conv.segments(mss_client=40)
    header_at = conv.stream[True].index(b"$%d\r\n" % len(value), conv.req_at[1]) + 2
    i = next(i for i, s in enumerate(segs) if s.client and s.payload and s.off <= header_at < s.end)
    segs.pop(i)
    captured = timed(segs)
    rows, stats = parse(tmp, ethernet_pcap(conv, captured))
    assert not any("invented" in str(r["key"]) or "invented" in str(r["field"]) for r in rows)
    # The invented commands are dropped unconfirmed; k4, the last, that no command follows, is confirmed by
    # its reply.
    status = {1: "lost", 2: "unknown", 3: "unknown", 4: "unknown"}
    assert rows == conv.expected_rows(captured, status=status)
    assert stats["unconfirmed_commands"] == 2 and stats["gaps"] == 1



def test_distinct_key_bytes_stay_distinct_in_every_output_and_the_simulation(tmp):
    """A key holding the byte 0x80 used to be written `\\x80`, as a key really spelled so is: one key in the
    Parquet trace, the text traces and the simulation, and false hits. A NUL in a key made the commands
    trace unreadable. Every output keeps them apart now, and the text traces read back to the same bytes."""
    keys = [b"a\x80", b"a\\x80", b"k\x00z", b"a\\\\x80"]
    reads = [Exchange(("GET", k), bulk(b"v"), [("read", "GET", k, None, 1, True)]) for k in [*keys, keys[0]]]
    conv = Conversation([[r] for r in reads])
    captured = timed(conv.segments())
    path = tmp / "c.pcap"
    path.write_bytes(ethernet_pcap(conv, captured))
    df = cachescope.parse_capture(str(path))
    assert len(df) == 5 and df["key"].nunique() == 4
    assert [key_bytes(k) for k in df["key"]] == [*keys, keys[0]]
    for out in ("t.parquet", "t.txt", "t.monitor"):
        run_cli("parse.py", path, "-o", tmp / out, check_rc=0)
        if out != "t.parquet":
            assert b"\x00" not in (tmp / out).read_bytes()
        result = cachescope.simulate_trace(str(tmp / out), lru=[10])
        # Five lookups of four distinct keys: one hit, the repeated one.
        assert (result.infinite["lookups"], result.infinite["hits"]) == (5, 1), out
    text = (tmp / "t.txt").read_text()
    assert 'GET "a\\x80"\nGET "a\\\\x80"\nGET "k\\x00z"\n' in text


def test_tls_and_garbage_on_the_redis_port_are_not_commands(tmp):
    """TLS on the Redis port used to be counted as 17 commands, random bytes as thousands. A client that
    begins with a TLS record is an encrypted connection (`encrypted_connections`, named in the summary on
    stderr); bytes that are neither RESP nor a known inline command are unparsable, never commands."""
    rng = random.Random(5)
    hello = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]) + rng.randbytes(500)
    tls = Conversation([[Exchange(("TLS",), bytes([0x16, 0x03, 0x03, 0x00, 0x5A]) + rng.randbytes(90), raw=hello)]])
    noise = bytes(b for b in rng.randbytes(30_000) if b != ord("*"))
    junk = Conversation([[Exchange(("JUNK",), b"-ERR unknown command\r\n", raw=noise)]], client=("10.0.0.3", 52000))
    path = tmp / "c.pcap"
    packets = [(ts, ethernet(tls.ip_packet(s))) for ts, s in timed(tls.segments(mss_client=1400))]
    packets += [(ts + 10**9, ethernet(junk.ip_packet(s))) for ts, s in timed(junk.segments(mss_client=1400))]
    path.write_bytes(pcap(packets))
    # Without --port, nothing here looks like Redis: one line saying the port's traffic is TLS.
    found = run_cli("parse.py", path, "-o", tmp / "t.parquet", check_rc=2)
    assert "the traffic on port 6379 is TLS-encrypted" in found.stderr
    proc = run_cli("parse.py", path, "-o", tmp / "t.parquet", "--port", "6379", "--stats-json", tmp / "s.json",
                   check_rc=0)
    stats = json.loads((tmp / "s.json").read_text())
    assert (stats["commands"], stats["rows"], stats["encrypted_connections"]) == (0, 0, 1)
    assert stats["refused_inline_lines"] > 10 and stats["unparsable_bytes"] > 10_000
    assert "1 encrypted (TLS) connections" in proc.stderr
