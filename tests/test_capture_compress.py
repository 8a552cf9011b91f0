"""capture.py --compress: rotated files compressed once closed, as tcpdump -z does, the last one too; their
names still found as the capture's files."""

import gzip
import os
import time

import pytest

from cachescope.capture.compress import Compressor
from cachescope.capture.tcpdump import files_written, savefile_pattern
from cachescope.errors import UsageError
from conftest import run_cli


def test_closed_files_are_compressed_and_the_one_being_written_is_not(tmp_path):
    files = []
    for i, name in enumerate(["r.pcap", "r.pcap1", "r.pcap2"]):
        (tmp_path / name).write_bytes(name.encode() * 1000)
        os.utime(tmp_path / name, (time.time() + i, time.time() + i))
        files.append(str(tmp_path / name))
    c = Compressor("gzip")
    c.closed(files)
    deadline = time.monotonic() + 30
    while (tmp_path / "r.pcap").exists() or (tmp_path / "r.pcap1").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert (tmp_path / "r.pcap2").exists(), "the newest file is tcpdump's current one"
    listed = files_written(str(tmp_path / "r.pcap"), time.time() - 10, compressed=True)
    done = c.finish(listed)
    assert [os.path.basename(f) for f in done] == ["r.pcap.gz", "r.pcap1.gz", "r.pcap2.gz"]
    assert gzip.decompress((tmp_path / "r.pcap1.gz").read_bytes()) == b"r.pcap1" * 1000


def test_compressed_names_are_the_captures_only_when_compressing(tmp_path):
    (tmp_path / "c.pcap.gz").write_bytes(b"x")
    pattern = savefile_pattern(str(tmp_path / "c.pcap"), None)
    assert files_written(pattern, time.time() - 10) == []
    assert files_written(pattern, time.time() - 10, compressed=True) == [str(tmp_path / "c.pcap.gz")]


def test_an_unknown_compressor_is_a_usage_error():
    with pytest.raises(UsageError, match="choose from gzip, zstd, xz, lz4"):
        Compressor("bzip3")
    proc = run_cli("capture.py", "-o", "x.pcap", "--compress", "rar", "--duration", "1s")
    assert proc.returncode == 2 and "choose from gzip" in proc.stderr and "Traceback" not in proc.stderr
