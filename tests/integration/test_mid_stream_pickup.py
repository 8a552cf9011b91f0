"""Connections already open when the capture starts, as every pooled connection of a long-running service is:
redis-py clients connect (and send their handshake) before tcpdump starts, then each sends a SET and two GETs,
one at a time. The parser meets each connection mid-stream, finds its first command by searching, and must
keep every command whose reply was captured, the last one included (nothing follows it but its reply); the
reply stream is picked up at the first reply, and pairing resumes at the second command, so both GETs' found
and value sizes are known. (Before: the last GET was dropped, and no reply was paired before the sixth
command.)"""

from __future__ import annotations

import redis

import cachescope

from .servers import RedisServer, Tcpdump

CONNECTIONS = 5


def test_connections_open_before_the_capture_keep_every_answered_command(tmp_path):
    pcap = tmp_path / "open.pcap"
    with RedisServer(tmp_path) as server:
        clients = [redis.Redis(host=server.host, port=server.port, protocol=2, single_connection_client=True)
                   for _ in range(CONNECTIONS)]
        for r in clients:
            r.ping()  # the connection and its handshake happen before the capture
        sent = []
        with Tcpdump(pcap, server.port, "lo") as dump:
            for c, r in enumerate(clients):
                r.set(f"c{c}:k1", "v" * 11)
                r.get(f"c{c}:k1")
                r.get(f"c{c}:missing")
                sent += [("SET", f"c{c}:k1"), ("GET", f"c{c}:k1"), ("GET", f"c{c}:missing")]
            dump.stop()
        for r in clients:
            r.close()

    df = cachescope.parse_capture(str(pcap), ports=(server.port,))
    stats = df.attrs["stats"]
    assert stats["mid_stream_connections"] == CONNECTIONS
    assert stats["unconfirmed_commands"] == 0
    assert sorted(zip(df["cmd"].astype(str), df["key"])) == sorted(sent)
    gets = df[df["cmd"].astype(str) == "GET"]
    assert dict(zip(gets["key"], gets["found"])) == {
        **{f"c{c}:k1": True for c in range(CONNECTIONS)}, **{f"c{c}:missing": False for c in range(CONNECTIONS)}}
    assert set(gets.loc[gets["found"] == True, "value_size"]) == {11}  # noqa: E712 (a nullable column)


def test_three_sets_each_answered_on_a_connection_open_before_the_capture_are_all_kept(tmp_path):
    """The smallest case the previous parser lost a command on: it kept two of the three."""
    pcap = tmp_path / "sets.pcap"
    with RedisServer(tmp_path) as server:
        r = redis.Redis(host=server.host, port=server.port, protocol=2, single_connection_client=True)
        r.ping()
        with Tcpdump(pcap, server.port, "lo") as dump:
            for i in range(3):
                assert r.set(f"k{i}", "v")
            dump.stop()
        r.close()
    df = cachescope.parse_capture(str(pcap), ports=(server.port,))
    assert df["key"].tolist() == ["k0", "k1", "k2"]
    assert df.attrs["stats"]["unconfirmed_commands"] == 0
