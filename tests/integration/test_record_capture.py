"""`sample_traces/record_capture.py` with its real parts: a short recording parses into exactly its truth, so
the script that made the committed sample still works, and tells where it put the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cachescope
from capture_truth import assert_matches_truth, load_truth

from .servers import free_port

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "sample_traces" / "record_capture.py"


def test_a_short_recording_parses_into_its_truth(tmp_path):
    port = free_port()
    pcap = tmp_path / "short.pcap"
    proc = subprocess.run([sys.executable, str(SCRIPT), "-o", str(pcap), "--commands", "60", "--port", str(port),
                           "--seed", "7"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    truth = load_truth(tmp_path / "short.truth.json")
    assert (truth["port"], truth["replayed"], truth["seed"]) == (port, 60, 7)
    assert f"server 127.0.0.1:{port}" in proc.stdout
    assert f"{pcap.stat().st_size:,} bytes" in proc.stdout
    assert_matches_truth(cachescope.parse_capture(str(pcap), ports=(port,)), truth)


def test_a_taken_port_falls_back_to_a_free_one(tmp_path, redis_server):
    pcap = tmp_path / "moved.pcap"
    proc = subprocess.run([sys.executable, str(SCRIPT), "-o", str(pcap), "--commands", "5",
                           "--port", str(redis_server.port)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    truth = load_truth(tmp_path / "moved.truth.json")
    assert truth["port"] != redis_server.port
    assert f"port {redis_server.port} is taken, using {truth['port']}" in proc.stderr
    assert_matches_truth(cachescope.parse_capture(str(pcap), ports=(truth["port"],)), truth)
