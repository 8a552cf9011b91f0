"""Start-up: the commands import pandas, pyarrow, matplotlib and tqdm only where they use them (pandas alone
took most of `simulate.py --help`'s 0.35 s). Each command runs in a fresh interpreter, as a user runs it, and
reports the heavy libraries it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from script_prelude import run_then

HEAVY = ("pandas", "pyarrow", "pyarrow.compute", "matplotlib", "tqdm", "numpy.ma")
PCAP = REPO / "sample_traces" / "feature_store.pcap"
PORT = json.loads((REPO / "sample_traces" / "feature_store.truth.json").read_text())["port"]

_PROBE = run_then("""
pool = sys.modules["pyarrow"].default_memory_pool().backend_name if "pyarrow" in sys.modules else None
print(json.dumps({"code": code, "heavy": sorted(m for m in sys.modules if m in %r), "pool": pool}), file=sys.stderr)
""" % (HEAVY,), argv="json.loads(sys.argv[1])")


def probe(*argv, env=None) -> dict:
    """What `python argv...` imported and the allocator pyarrow used, if imported (it must succeed)."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps([str(a) for a in argv])], cwd=REPO,
                          capture_output=True, text=True, env=env)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), proc.stderr
    return report


def imported(*argv) -> list[str]:
    """The heavy libraries `python argv...` imported (it must succeed)."""
    return probe(*argv)["heavy"]


@pytest.mark.parametrize("command", ["simulate.py", "parse.py", "capture.py"])
def test_help_imports_none_of_the_heavy_libraries(command):
    assert imported(command, "--help") == []


@pytest.mark.parametrize("ext", ["txt", "monitor", "oracleGeneral"])
def test_parse_to_text_or_binary_imports_no_pandas_matplotlib_or_tqdm(tmp, ext):
    assert imported("parse.py", PCAP, "-o", tmp / f"t.{ext}", "--port", PORT, "--no-progress") == ["pyarrow"]


def test_simulate_without_plot_imports_no_matplotlib():
    heavy = imported("simulate.py", REPO / "sample_traces" / "feature_store.monitor", "--lru", "1e3",
                     "--no-progress")
    assert "matplotlib" not in heavy and "tqdm" not in heavy


def parsed_sample(tmp_path_factory, name: str):
    """The bundled capture parsed to `name` (its extension picks the format)."""
    out = tmp_path_factory.mktemp("trace") / name
    subprocess.run([sys.executable, "parse.py", str(PCAP), "-o", str(out), "--port", str(PORT), "--no-progress"],
                   cwd=REPO, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def commands_trace(tmp_path_factory):
    return parsed_sample(tmp_path_factory, "t.txt")


def test_simulate_on_a_trace_without_clock_imports_no_pandas(commands_trace):
    """The summary of a `commands` trace (no clock: no recovery columns) is printed from the rows; the frames
    are built only when asked for."""
    assert imported("simulate.py", commands_trace, "--lru", "1e2,1e3", "--lfu", "1e3", "--no-progress") == []


def test_summary_rows_are_the_frames_records(commands_trace):
    import cachescope

    for caps in (["1e2", "1e3"], ["1e2", "64KiB"]):  # the same columns in every row, and not
        result = cachescope.simulate_trace(str(commands_trace), lru=caps, assume_value_size=100)
        records = result.summary_records()
        assert len(records) == 2 and records[0]["lookups"] > 1000
        frame = result.summary.to_dict("records")
        assert repr(records) == repr(frame)


def test_a_sampled_curve_of_an_object_trace_imports_nothing_heavy(tmp_path_factory):
    """The sampled curve of an oracleGeneral trace (auto capacities: numpy.ma, 20 ms, came with np.unique), a
    run whose whole time at 10^7 lookups is a few tenths of a second."""
    trace = parsed_sample(tmp_path_factory, "t.oracleGeneral")
    assert imported("simulate.py", trace, "--curve", "lru", "--sample", "1%", "--json", "--no-progress") == []


@pytest.fixture(scope="module")
def parquet_trace(tmp_path_factory):
    return parsed_sample(tmp_path_factory, "t.parquet")


def test_simulate_on_a_parquet_trace_imports_no_pandas_nor_arrows_compute(parquet_trace):
    """A Parquet trace parse.py wrote (dictionary-encoded strings, a clock) is read from Arrow's buffers:
    no pandas (0.3 s), and no Arrow cast or filter, which would import pyarrow.compute (0.07 s)."""
    assert imported("simulate.py", parquet_trace, "--lru", "1e2,1e3", "--json", "--no-progress") == ["pyarrow"]


def test_simulate_json_on_a_trace_without_clock_imports_no_pandas(commands_trace):
    """`--json` writes the results from the rows too (the benchmarks' and scripts' way of reading hits)."""
    assert imported("simulate.py", commands_trace, "--lru", "1e2,1e3", "--json", "--no-progress") == []


def test_json_results_leave_out_the_cells_the_frame_leaves_empty(commands_trace):
    """Rows with different columns (an entry and a byte capacity): each JSON result holds exactly the
    frame's non-empty cells."""
    import pandas as pd

    import cachescope

    result = cachescope.simulate_trace(str(commands_trace), lru=["1e2", "64KiB"], assume_value_size=100)
    expected = [{k: v for k, v in row.items() if not pd.isna(v)} for row in result.summary.to_dict("records")]
    results = result.to_json()["results"]
    assert [sorted(r) for r in results] == [sorted(r) for r in expected]
    assert "byte_hit_rate" in results[1] and "byte_hit_rate" not in results[0]
    assert results == json.loads(json.dumps(expected, default=lambda v: v.item()))


def test_commands_read_and_write_parquet_with_the_c_allocator(parquet_trace, tmp):
    """pyarrow's own allocator (mimalloc) takes fresh memory for every batch where the C allocator reuses the
    last one's (45 MiB more at the peak of this command on bench_parse.py's trace); a user's choice stands."""
    assert probe("simulate.py", parquet_trace, "--lru", "1e2", "--json", "--no-progress")["pool"] == "system"
    assert probe("parse.py", PCAP, "-o", tmp / "t.parquet", "--port", PORT, "--no-progress")["pool"] == "system"
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}
    assert probe("simulate.py", parquet_trace, "--lru", "1e2", "--json", "--no-progress", env=env)["pool"] == "mimalloc"


_HEAD_START = """
import json, sys
from cachescope.parse.input_rows import open_rows
path, port, head_start = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rows = open_rows(path, [port], head_start=head_start)
started_before_pyarrow = "pyarrow" not in sys.modules
batches = list(rows.record_batches())
table = [b.to_pydict() for b in batches]
print(json.dumps({"before": started_before_pyarrow, "rows": table, "stats": rows.stats}, default=str))
"""


def test_parse_starts_the_capture_parser_before_importing_pyarrow_with_the_same_rows():
    """parse.py's capture parser starts on its first batches before numpy and pyarrow are imported (their
    imports then overlap the parse), and gives the same rows and counters as without the head start."""
    run = lambda head: json.loads(subprocess.run(  # noqa: E731
        [sys.executable, "-c", _HEAD_START, str(PCAP), str(PORT), head], cwd=REPO, capture_output=True, text=True,
        check=True).stdout)
    ahead, plain = run("1"), run("0")
    assert ahead["before"] and plain["before"]
    assert ahead["rows"] == plain["rows"] and sum(len(b["key"]) for b in ahead["rows"]) > 0
    assert ahead["stats"] == plain["stats"]


@pytest.fixture(scope="module")
def oracle_trace(tmp_path_factory):
    return parsed_sample(tmp_path_factory, "t.oracleGeneral")


def test_a_sampled_curve_alone_imports_no_pandas(oracle_trace):
    """`--curve lru --sample 1% --json` (bench/scale/anchors.py's run against mrcProfiler) writes its curve
    from the core's arrays: pandas was most of its start-up."""
    assert imported("simulate.py", oracle_trace, "--curve", "lru", "--sample", "1%", "--json",
                    "--no-progress") == []


@pytest.mark.parametrize("asks", [dict(sample="1%"), dict(sample="10%", salts=3, curve_capacities="10,100,1k"),
                                  dict(sample_keys=64)])
def test_sampled_curves_json_is_the_frames(oracle_trace, asks):
    """The JSON of sampled curves made from their columns is the JSON made from their frame."""
    import cachescope

    result = cachescope.simulate_trace(str(oracle_trace), curve="lru,fifo", **asks)
    from_columns = result.to_json()
    assert result._curves is None, "no frame built before it is asked for"
    result.curves = result.curves  # the frame, built, and read as before
    from_frame = result.to_json()
    assert from_columns["curves"] and len(from_columns["curves"][0]["points"]) > 1
    assert json.dumps(from_columns) == json.dumps(from_frame)
