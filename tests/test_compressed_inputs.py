"""Compressed inputs (gzip, zstd, xz, lz4) in every format, told by their magic number whatever the name,
decoded as a stream: the same rows and the same simulation as the plain file; a corrupt or cut-short
compressed stream is one line naming the file and the compressed byte, exit status 2."""

import json
import shutil
import subprocess

import pyarrow.parquet as pq
import pytest

from conftest import REPO, run_cli
from test_bad_input import assert_one_line_error

CAPTURE = REPO / "sample_traces" / "feature_store.pcap"
CAPTURE_PORT = "16379"
MONITOR = REPO / "sample_traces" / "feature_store.monitor"
PCAPNG = REPO / "tests" / "data" / "captures" / "ipv6.pcapng"
# The command-line tools tcpdump's -z runs, each with the options that write to stdout.
COMPRESSORS = {"gzip": ["gzip", "-c"], "zstd": ["zstd", "-q", "-c"], "xz": ["xz", "-c", "-T1"],
               "lz4": ["lz4", "-q", "-c"]}


def compress(src, dst, kind):
    with open(src, "rb") as i, open(dst, "wb") as o:
        subprocess.run(COMPRESSORS[kind], stdin=i, stdout=o, check=True)
    return dst


def simulate_json(path, *extra):
    proc = run_cli("simulate.py", path, "--lru", "1000,10000", "--s3fifo", "1000", "--json", "--no-progress",
                   *extra)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    out["trace"].pop("path", None)
    return out


@pytest.fixture(scope="module")
def plain_capture_json():
    return simulate_json(CAPTURE, "--port", CAPTURE_PORT)


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_a_compressed_capture_simulates_as_the_plain_one_whatever_its_name(tmp_path, kind, plain_capture_json):
    # Named as if it were plain: the magic number decides, not the name.
    packed = compress(CAPTURE, tmp_path / "capture.pcap", kind)
    assert packed.read_bytes()[:4] != CAPTURE.read_bytes()[:4]
    assert simulate_json(packed, "--port", CAPTURE_PORT) == plain_capture_json


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_a_compressed_capture_parses_to_the_same_rows_ports_found_by_content(tmp_path, kind):
    packed = compress(CAPTURE, tmp_path / f"capture.pcap.{kind}", kind)
    plain_out, packed_out = tmp_path / "plain.parquet", tmp_path / "packed.parquet"
    run_cli("parse.py", CAPTURE, "-o", plain_out, "--no-progress", check_rc=0)
    proc = run_cli("parse.py", packed, "-o", packed_out, "--no-progress", check_rc=0)
    assert "16379" in proc.stderr
    assert pq.read_table(packed_out).equals(pq.read_table(plain_out))


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_compressed_text_traces_and_pcapng_read_as_the_plain_ones(tmp_path, kind):
    for src, extra in [(MONITOR, ()), (PCAPNG, ("--port", "6379"))]:
        packed = compress(src, tmp_path / (src.name + ".bin"), kind)
        assert simulate_json(packed, *extra) == simulate_json(src, *extra)


def test_a_compressed_monitor_log_parses_to_the_same_rows(tmp_path):
    packed = compress(MONITOR, tmp_path / "log.monitor.zst", "zstd")
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    run_cli("parse.py", MONITOR, "-o", a, "--no-progress", check_rc=0)
    run_cli("parse.py", packed, "-o", b, "--no-progress", check_rc=0)
    assert pq.read_table(b).equals(pq.read_table(a))


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_a_cut_short_compressed_capture_is_one_line_naming_the_file_and_position(tmp_path, kind):
    packed = compress(CAPTURE, tmp_path / "whole", kind).read_bytes()
    cut = tmp_path / f"cut.pcap.{kind}"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    proc = run_cli("simulate.py", cut, "--port", CAPTURE_PORT, "--lru", "100", "--no-progress")
    assert_one_line_error(proc, str(cut), f"{kind} stream cut short at compressed byte", "bytes decompressed",
                          "lookups were read before it")


def test_corrupt_compressed_text_is_one_line_naming_the_file_and_position(tmp_path):
    packed = bytearray(compress(MONITOR, tmp_path / "whole", "zstd").read_bytes())
    at = len(packed) // 2
    packed[at:at + 32] = bytes(b ^ 0x5A for b in packed[at:at + 32])
    bad = tmp_path / "bad.monitor.zst"
    bad.write_bytes(bytes(packed))
    proc = run_cli("simulate.py", bad, "--lru", "100", "--no-progress")
    assert_one_line_error(proc, str(bad), "corrupt zstd data near compressed byte")


def test_a_compressed_parquet_file_is_refused_with_a_reason(tmp_path):
    trace = tmp_path / "t.parquet"
    run_cli("parse.py", MONITOR, "-o", trace, "--no-progress", check_rc=0)
    packed = compress(trace, tmp_path / "t.parquet.gz", "gzip")
    proc = run_cli("simulate.py", packed, "--lru", "100", "--no-progress")
    assert_one_line_error(proc, str(packed), "gzip-compressed Parquet")


def test_compression_tools_are_installed():
    """The tests above need the compressors tcpdump -z runs; CI installs them (.ci/run)."""
    for argv in COMPRESSORS.values():
        assert shutil.which(argv[0]), argv[0]
