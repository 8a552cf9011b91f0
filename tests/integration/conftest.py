"""Fixtures with real parts: a redis-server, tcpdump on loopback, network namespaces, recorded captures.

The recorded captures are session-wide: the harness's own checks (test_harness.py) and the parser's
comparison tests (test_parse_real_traffic.py) read the same files.
"""

from __future__ import annotations

import shutil

import pytest

from .cluster import Cluster
from .scenario import record_in_netns, record_loopback
from .servers import HarnessError, Netns, RedisServer, Tcpdump

REQUIRED = {"redis-server": "redis-server", "redis-cli": "redis-tools", "tcpdump": "tcpdump", "ip": "iproute2",
            "ethtool": "ethtool"}


def _require_tools():
    missing = [f"{tool} (apt-get install {pkg})" for tool, pkg in REQUIRED.items() if shutil.which(tool) is None]
    if missing:
        pytest.fail("integration tests need: " + ", ".join(missing), pytrace=False)


@pytest.fixture
def redis_server(tmp_path):
    """A fresh redis-server on a free port of 127.0.0.1, no persistence; stopped after the test."""
    _require_tools()
    try:
        with RedisServer(tmp_path) as server:
            yield server
    except HarnessError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture
def redis_cluster(tmp_path):
    """A Redis Cluster of three masters on free ports of 127.0.0.1 (each node in a directory of its own, so
    their nodes.conf files never clash); stopped after the test."""
    _require_tools()
    try:
        with Cluster(tmp_path / "cluster") as cluster:
            yield cluster
    except HarnessError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture
def tcpdump_lo(redis_server, tmp_path):
    """tcpdump on lo capturing `redis_server`'s port into tmp_path/lo.pcap; `.stop()` returns its counters."""
    with Tcpdump(tmp_path / "lo.pcap", redis_server.port, "lo") as dump:
        yield dump


@pytest.fixture
def netns():
    """A network namespace with loopback at MTU 1500 and offloads off; deleted after the test, pass or fail.
    Without the rights to make one this FAILS (CI and developers run as root), it never skips."""
    _require_tools()
    try:
        with Netns() as ns:
            yield ns
    except HarnessError as e:
        pytest.fail(f"cannot make a network namespace for the MTU-1500 capture: {e}", pytrace=False)


def _recorded(tmp_path_factory, name, record):
    _require_tools()
    try:
        return record(tmp_path_factory.mktemp(name))
    except HarnessError as e:
        pytest.fail(f"recording the {name} scenario: {e}", pytrace=False)


@pytest.fixture(scope="session")
def loopback_capture(tmp_path_factory):
    return _recorded(tmp_path_factory, "loopback", record_loopback)


@pytest.fixture(scope="session")
def netns_capture(tmp_path_factory):
    return _recorded(tmp_path_factory, "netns", record_in_netns)


@pytest.fixture(params=["loopback", "netns-mtu1500"])
def real_capture(request):
    """Each recorded scenario in turn: RealCapture(pcap, truth, port, tcpdump_stats, commandstats, ...)."""
    return request.getfixturevalue("loopback_capture" if request.param == "loopback" else "netns_capture")
