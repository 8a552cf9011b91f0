"""`capture.py --monitor URL` never prints any part of a credential, whatever characters it holds, and a
malformed URL is one line, exit status 2."""

import pytest

from conftest import run_cli
from test_bad_input import assert_one_line_error



def _no_secret(proc):
    for part in ("s3cr", "Zq9", "pw0rd", "hunter"):
        assert part not in proc.stderr and part not in proc.stdout, (part, proc.stderr)


@pytest.mark.parametrize("url", [
    "redis://:s3cr/Zq9@127.0.0.1:1",  # a raw `/` ended the authority: the rest printed as a path
    "redis://:s3cr#Zq9@127.0.0.1:1/0",  # `#`: part of it read as a fragment
    "redis://:s3cr?Zq9@127.0.0.1:1",  # `?`: part of it read as a query
    "redis://hunter:s3cr@Zq9@127.0.0.1:1",  # an `@` in the password
    "redis://127.0.0.1:1/0?password=pw0rd",  # redis-py takes options from the query
    "rediss://hunter/x:s3cr/Zq9@127.0.0.1:1",
])
def test_monitor_errors_never_show_the_credential(tmp, url):
    proc = run_cli("capture.py", "--monitor", url, "-o", tmp / "m.monitor")
    assert_one_line_error(proc, "127.0.0.1:1")
    _no_secret(proc)


@pytest.mark.parametrize("url", [
    "redis://:s3cr/Zq9@127.0.0.1:abc",  # not a port
    "redis:/:s3cr/Zq9@h",  # not scheme://
    "http://:s3cr/Zq9@h",
    "s3crZq9",
    "redis://:s3cr/Zq9@[::1",
    "redis://127.0.0.1?db=x&password=pw0rd",
])
def test_malformed_monitor_urls_are_one_line_without_the_credential(tmp, url):
    proc = run_cli("capture.py", "--monitor", url, "-o", tmp / "m.monitor")
    assert_one_line_error(proc, "--monitor")
    _no_secret(proc)


def test_the_client_gets_the_credential_as_typed():
    from redis.connection import parse_url

    from cachescope.capture.url import parse_redis_url

    url = parse_redis_url("redis://us:er:p@ss/w#o?r%d@10.0.0.1:6380/3")
    assert url.redacted == "redis://10.0.0.1:6380/3"
    got = parse_url(url.for_client)
    assert (got["username"], got["password"], got["host"], got["port"], got["db"]) == (
        "us", "er:p@ss/w#o?r%d", "10.0.0.1", 6380, 3)
