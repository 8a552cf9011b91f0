"""The capture command's pure parts: option parsing, tcpdump's command line, its file names and its counters."""

import os
import time

import pytest

from cachescope.capture.monitor import redacted
from cachescope.capture.options import human_bytes, parse_duration, parse_ports, parse_size
from cachescope.capture.tcpdump import (bpf_filter, files_written, parse_stats, savefile_pattern, start_error,
                                        tcpdump_command)
from cachescope.errors import CaptureError, UsageError


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("15m", 900), ("1h", 3600), ("1.5h", 5400), ("45", 45),
                                           (" 2M ", 120), ("0.5s", 0.5)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "s", "5x", "-5s", "0", "1h30m", "inf"])
def test_bad_durations(text):
    with pytest.raises(UsageError):
        parse_duration(text)


@pytest.mark.parametrize("text, size", [("64MiB", 64 * 2**20), ("1GiB", 2**30), ("500MB", 500 * 10**6),
                                        ("1gb", 10**9), ("4096", 4096), ("1.5k", 1500), ("2 KiB", 2048)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "1XB", "0", "-1MB"])
def test_bad_sizes(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_ports_repeat_and_comma_lists():
    assert parse_ports(["6379", "6380,6381", "6379"]) == (6379, 6380, 6381)
    for bad in (["0"], ["65536"], ["6379,"], ["x"], [" "], []):
        with pytest.raises(UsageError):
            parse_ports(bad)


def test_command_line():
    cmd = tcpdump_command("/usr/bin/tcpdump", output="out.pcap", ports=(6379, 6380), interface="eth0",
                          buffer_bytes=64 * 2**20, as_root=True)
    assert cmd == ["/usr/bin/tcpdump", "-i", "eth0", "-w", "out.pcap", "-s", "0", "-B", "65536", "-n", "-Z", "root",
                   "tcp and (port 6379 or port 6380)"]
    assert "-Z" not in tcpdump_command("tcpdump", output="o", ports=(1,), buffer_bytes=2**20)


def test_rotation_options():
    cmd = tcpdump_command("tcpdump", output="/data/c.pcap", ports=(6379,), buffer_bytes=2**20, rotate_size=2**30,
                          rotate_every=600)
    assert cmd[cmd.index("-C") + 1] == "1074"  # tcpdump counts millions of bytes: 1 GiB is 1073.7 of them
    assert cmd[cmd.index("-G") + 1] == "600"
    assert cmd[cmd.index("-w") + 1] == "/data/c-%Y%m%d-%H%M%S.pcap"
    with pytest.raises(UsageError):
        tcpdump_command("tcpdump", output="o", ports=(1,), buffer_bytes=1, rotate_size=999_999)


def test_savefile_pattern_keeps_a_users_strftime_fields():
    assert savefile_pattern("c.pcap", None) == "c.pcap"
    assert savefile_pattern("c.pcap", 60) == "c-%Y%m%d-%H%M%S.pcap"
    assert savefile_pattern("cap", 60) == "cap-%Y%m%d-%H%M%S"
    assert savefile_pattern("c-%H.pcap", 60) == "c-%H.pcap"


def test_files_written_follow_tcpdump_naming(tmp_path):
    names = ["c-20240521-143000.pcap", "c-20240521-143000.pcap1", "c-20240521-144000.pcap", "c.pcap",
             "c-20240521-143000.pcap.gz", "other.pcap"]
    for i, name in enumerate(names):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (time.time() + i, time.time() + i))
    pattern = savefile_pattern(str(tmp_path / "c.pcap"), 60)
    assert [os.path.basename(f) for f in files_written(pattern, time.time())] == names[:3]
    sized = [os.path.basename(f) for f in files_written(str(tmp_path / "c.pcap"), time.time())]
    assert sized == ["c.pcap"]


def test_counters_from_stderr():
    stats = parse_stats(["tcpdump: listening on any, link-type LINUX_SLL2 (Linux cooked v2)",
                         "1 packet captured", "1,000 junk", "12 packets received by filter",
                         "3 packets dropped by kernel", "2 packets dropped by interface"])
    assert (stats.captured, stats.received, stats.dropped_by_kernel, stats.dropped_by_interface) == (1, 12, 3, 2)
    assert not parse_stats(["tcpdump: eth9: No such device exists"]).complete


def test_start_errors_say_why():
    no_right = start_error(["tcpdump: any: You don't have permission to perform this capture on that device",
                            "(socket: Operation not permitted)"], 1)
    assert isinstance(no_right, CaptureError) and "CAP_NET_RAW" in str(no_right) and "sudo" in str(no_right)
    file_error = start_error(["tcpdump: /root/x.pcap: Permission denied"], 1)
    assert "CAP_NET_RAW" not in str(file_error) and "/root/x.pcap: Permission denied" in str(file_error)
    assert "\n" not in str(no_right)


def test_urls_lose_their_secrets():
    assert redacted("redis://:pw@h:6379/2") == "redis://h:6379/2"
    assert redacted("redis://user:p%40ss@10.0.0.1:6380") == "redis://10.0.0.1:6380"
    assert redacted("rediss://u:p@[::1]:6379/0") == "rediss://[::1]:6379/0"


def test_human_bytes():
    assert [human_bytes(n) for n in (0, 999, 1000, 3_200_000, 5 * 10**12)] == ["0 B", "999 B", "1.0 kB", "3.2 MB",
                                                                               "5.0 TB"]


def test_drops_are_reported_with_a_warning(tmp_path):
    import io

    from cachescope.capture.packets import CaptureResult
    from cachescope.capture.status import Status
    from cachescope.capture.tcpdump import CaptureStats
    from cachescope.cli.capture import report

    pcap = tmp_path / "c.pcap"
    pcap.write_bytes(b"\0" * 2400)
    err = io.StringIO()
    report(CaptureResult(CaptureStats(993, 2000, 7, None), [str(pcap)], 1.0), Status("capture.py", err))
    lines = err.getvalue().splitlines()
    assert lines[0] == "capture.py: 993 packets captured, 2,000 received by filter, 7 dropped by kernel"
    assert lines[1].startswith("capture.py: WARNING: 7 packets (0.70%) were dropped") and "--buffer" in lines[1]
    assert lines[2] == f"capture.py: wrote {pcap} (2.4 kB)"
    err = io.StringIO()
    report(CaptureResult(CaptureStats(5, 10, 0, None), [str(pcap)], 1.0), Status("capture.py", err))
    assert "WARNING" not in err.getvalue()


def test_the_loopback_double_count_is_explained(tmp_path):
    """On lo the kernel counts each packet twice in "received by filter"; the report says why, on lo only."""
    import io

    from cachescope.capture.packets import CaptureResult
    from cachescope.capture.status import Status
    from cachescope.capture.tcpdump import CaptureStats
    from cachescope.cli.capture import report

    pcap = tmp_path / "c.pcap"
    pcap.write_bytes(b"\0" * 24)
    said = {}
    for interface in ("lo", "any", "no-such-interface"):
        err = io.StringIO()
        report(CaptureResult(CaptureStats(100, 200, 0, None), [str(pcap)], 1.0), Status("capture.py", err),
               interface=interface)
        said[interface] = err.getvalue().splitlines()
    assert said["lo"][1].startswith("capture.py: (on the loopback interface lo the kernel counts each packet twice")
    assert "WARNING" not in "".join(said["lo"])
    assert not any("twice" in line for line in said["any"] + said["no-such-interface"])


def test_console_script_has_the_capture_command(capsys):
    from cachescope.cli import main

    assert main(["capture", "--duration", "soon", "-o", "x.pcap"]) == 2
    assert capsys.readouterr().err.startswith("cachescope capture: error: --duration 'soon' is not a duration")
