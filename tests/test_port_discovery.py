"""Without --port, parse.py and simulate.py find a capture's Redis ports by what is said on them (the ports
RESP commands are sent to), or stop with one line naming the ports that carry TCP traffic (exit 2). A Redis
Cluster is found on all its ports, and its bus (port + 10000, a binary protocol) is not taken for Redis."""

import json

import pandas as pd

from conftest import REPO, run_cli
from crafted_capture import STEP, T0, Conversation, Seg, ethernet, feature_store_batches, pcap, timed


def packets(conv, captured):
    return [(ts, ethernet(conv.ip_packet(s))) for ts, s in captured]


def cluster_capture():
    """A client of each of three cluster nodes (7000-7002); the nodes' bus links (17000-17002); a replica's
    link to 7000 picked up mid-stream, with commands both ways. Returns the pcap and the rows expected."""
    batches = feature_store_batches()
    out, n_rows = [], 0
    for i, port in enumerate((7000, 7001, 7002)):
        conv = Conversation(batches[i:i + 2], client=("10.0.0.1", 51000 + i), server=("10.0.0.2", port))
        out += packets(conv, timed(conv.segments(), t0=T0 + i * 10**9))
        n_rows += sum(len(e.rows) for e in conv.exchanges)
        bus = Conversation([], client=("10.0.0.3", 40000 + i), server=("10.0.0.2", port + 10000))
        ping = b"RCmb\x00\x00\x08\x00\x00\x01\x00\x00" + bytes(range(64))
        segs = [Seg(True, 100, 0, "S"), Seg(False, 900, 101, "SA"), Seg(True, 101, 901, "PA", ping),
                Seg(False, 901, 101 + len(ping), "PA", ping)]
        out += packets(bus, timed(segs, t0=T0 + i * 10**9 + 5 * 10**8))
    replica = Conversation([], client=("10.0.0.4", 45000), server=("10.0.0.2", 7000))
    segs = [Seg(True, 1, 1, "PA", b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$1\r\n0\r\n"),
            Seg(False, 1, 30, "PA", b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")]
    out += packets(replica, timed(segs, t0=T0 + 4 * 10**9))
    return pcap(sorted(out, key=lambda p: p[0])), n_rows


def test_a_cluster_is_found_on_all_its_ports_by_parse_and_simulate(tmp):
    data, n_rows = cluster_capture()
    cap, out, js = tmp / "cluster.pcap", tmp / "cluster.parquet", tmp / "s.json"
    cap.write_bytes(data)
    proc = run_cli("parse.py", cap, "-o", out, "--stats-json", js, "--no-progress", check_rc=0)
    stats = json.loads(js.read_text())
    assert (stats["redis_ports"], stats["ports_found"]) == ([7000, 7001, 7002], True)
    assert "Redis found by content on port(s) 7000, 7001, 7002" in proc.stderr
    df = pd.read_parquet(out)
    # The replica's propagated SET (sent by 7000 to the replica's port) is no client's command.
    assert len(df) == n_rows and set(df["server"].astype(str)) == {f"10.0.0.2:{p}" for p in (7000, 7001, 7002)}
    reads = int((df["op"].astype(str) == "read").sum())
    sim = run_cli("simulate.py", cap, "--lru", "100", "--json", "--no-progress", check_rc=0)
    assert json.loads(sim.stdout)["trace"]["lookups"] == reads > 0


def test_redis_on_another_port_is_found(tmp):
    conv = Conversation(feature_store_batches(), server=("10.0.0.2", 6380))
    captured = timed(conv.segments())
    cap, out = tmp / "r.pcap", tmp / "r.parquet"
    cap.write_bytes(pcap(packets(conv, captured)))
    run_cli("parse.py", cap, "-o", out, "--no-progress", check_rc=0)
    assert len(pd.read_parquet(out)) == sum(len(e.rows) for e in conv.exchanges)
    # Given, the port is taken as it is: nothing on 6379 is an empty trace, as before.
    run_cli("parse.py", cap, "-o", out, "--port", "6379", "--no-progress", check_rc=0)
    assert len(pd.read_parquet(out)) == 0


def test_no_redis_anywhere_is_one_line_naming_the_tcp_ports(tmp):
    web = Conversation([], client=("10.0.0.1", 52000), server=("10.0.0.2", 80))
    db = Conversation([], client=("10.0.0.1", 52001), server=("10.0.0.2", 5432))
    http = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"
    segs = [Seg(True, 1, 1, "PA", http), Seg(False, 1, 1 + len(http), "PA", b"HTTP/1.1 200 OK\r\n\r\n")]
    data = pcap(packets(web, timed(segs)) + packets(db, timed([Seg(True, 1, 1, "PA", b"\x00\x00\x00\x08")],
                                                           t0=T0 + 10 * STEP)))
    cap = tmp / "web.pcap"
    cap.write_bytes(data)
    for cmd in (["parse.py", cap, "-o", tmp / "w.parquet"], ["simulate.py", cap, "--lru", "10"]):
        proc = run_cli(*cmd)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert str(cap) in lines[0] and "no Redis commands on any port" in lines[0]
        assert "80 (2 segments), 5432 (1 segments)" in lines[0] and "--port" in lines[0]
    assert not (tmp / "w.parquet").exists()


def test_the_sample_capture_is_found_on_its_port(tmp):
    sample = REPO / "sample_traces" / "feature_store.pcap"
    found, given = tmp / "found.json", tmp / "given.json"
    run_cli("parse.py", sample, "-o", tmp / "a.parquet", "--stats-json", found, "--no-progress", check_rc=0)
    run_cli("parse.py", sample, "-o", tmp / "b.parquet", "--stats-json", given, "--port", "16379", "--no-progress",
            check_rc=0)
    found, given = json.loads(found.read_text()), json.loads(given.read_text())
    assert found["redis_ports"] == given["redis_ports"] == [16379]
    assert found["rows"] == given["rows"] > 0


def test_tls_traffic_is_named_as_such(tmp):
    """Redis behind TLS (port 6380): nothing in it reads as a command, and the error says why rather than that
    the capture holds no Redis commands."""
    tls = Conversation([], client=("10.0.0.1", 52000), server=("10.0.0.2", 6380))
    hello = b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" + bytes(range(32))
    server_hello = b"\x16\x03\x03\x00\x5a\x02\x00\x00\x56\x03\x03" + bytes(range(32, 64))
    record = b"\x17\x03\x03\x00\x30" + bytes(range(48))
    segs = [Seg(True, 1, 1, "PA", hello), Seg(False, 1, 1 + len(hello), "PA", server_hello),
            Seg(True, 1 + len(hello), 1 + len(server_hello), "PA", record)]
    cap = tmp / "tls.pcap"
    cap.write_bytes(pcap(packets(tls, timed(segs))))
    for cmd in (["parse.py", cap, "-o", tmp / "t.parquet"], ["simulate.py", cap, "--lru", "10"]):
        proc = run_cli(*cmd)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert f"{cap}: the traffic on port 6380 is TLS-encrypted" in lines[0] and "MONITOR" in lines[0]
