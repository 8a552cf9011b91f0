"""Port discovery finds inline commands (issue 27, item 6): a client typing Redis commands as plain lines
(`GET k\\r\\n`, as netcat, telnet and redis-cli's inline mode send them) to a real redis-server on a port of
its own, beside a real HTTP server answering `GET / HTTP/1.1` (a request line that begins with a Redis command
name), recorded by tcpdump on loopback. Without --port, the Redis port is found, and only it; the commands
are parsed and counted as with --port; a capture of the HTTP traffic alone still has no Redis."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import urllib.request

import pandas as pd
import pytest

from conftest import run_cli

from .servers import Tcpdump, free_port

# (line, rows it makes, reads among them)
INLINE = [
    (b"SET k1 v1", 1, 0),
    (b"GET k1", 1, 1),
    (b"MGET k1 k2 missing", 3, 3),
    (b'HSET h f1 "a b" f2 b', 2, 0),
    (b"hmget h f1 f2 f3", 3, 3),
    (b"DEL k2", 1, 0),
    (b"PING", 0, 0),
]


def _reply(sock: socket.socket) -> bytes:
    """One reply's bytes: every line of these replies ends with CRLF and none spans segments on loopback."""
    data = sock.recv(65536)
    assert data and data.endswith(b"\r\n"), data
    return data


@pytest.fixture
def http_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), http.server.SimpleHTTPRequestHandler)
    server.RequestHandlerClass.log_message = lambda *a: None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _http_traffic(port: int) -> None:
    for _ in range(3):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()
    # An HTTP/0.9 line that is also a Redis inline command: the server answers it in HTML, not RESP.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET index\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass


def _inline_traffic(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for line, _, _ in INLINE:
            s.sendall(line + b"\r\n")
            _reply(s)


def _stats(tmp_path, pcap, *args):
    out, js = tmp_path / "t.parquet", tmp_path / "s.json"
    run_cli("parse.py", pcap, "-o", out, "--stats-json", js, "--no-progress", *args, check_rc=0)
    return pd.read_parquet(out), json.loads(js.read_text())


def test_inline_commands_are_found_without_port_and_http_is_not(redis_server, http_server, tmp_path):
    pcap = tmp_path / "inline.pcap"
    with Tcpdump(pcap, [redis_server.port, http_server], "lo") as dump:
        _http_traffic(http_server)
        _inline_traffic(redis_server.port)
        dump.stop()
    found, stats = _stats(tmp_path, pcap)
    assert (stats["redis_ports"], stats["ports_found"]) == ([redis_server.port], True)
    assert stats["commands"] == len(INLINE)
    assert len(found) == sum(rows for _, rows, _ in INLINE)
    reads = found[found["op"].astype(str) == "read"]
    assert len(reads) == sum(r for _, _, r in INLINE)
    assert reads["found"].tolist() == [True, True, False, False, True, True, False]
    assert found["cmd"].astype(str).tolist()[:3] == ["SET", "GET", "MGET"]
    assert found.loc[found["cmd"].astype(str) == "HSET", "field"].tolist() == ["f1", "f2"]
    # The same rows as with the port given.
    given, given_stats = _stats(tmp_path, pcap, "--port", str(redis_server.port))
    assert given_stats["ports_found"] is False
    pd.testing.assert_frame_equal(found, given)
    sim = run_cli("simulate.py", pcap, "--lru", "10", "--json", "--no-progress", check_rc=0)
    assert json.loads(sim.stdout)["trace"]["lookups"] == len(reads)


def test_http_alone_is_not_taken_for_redis(http_server, tmp_path):
    pcap = tmp_path / "http.pcap"
    with Tcpdump(pcap, http_server, "lo") as dump:
        _http_traffic(http_server)
        dump.stop()
    proc = run_cli("parse.py", pcap, "-o", tmp_path / "t.parquet", "--no-progress", check_rc=2)
    assert proc.stderr.count("\n") == 1 and "no Redis commands on any port" in proc.stderr
    assert f"{http_server} (" in proc.stderr
