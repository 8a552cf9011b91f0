"""The HTML report (`simulate.py --report`), rendered by a real headless Chromium from a capture, a Parquet trace
and a text trace: every section is there (or says what its trace lacks), the page loads nothing and logs
nothing, and no key of the traffic is printed whole."""

import re

import numpy as np
import pytest

import cachescope

from chromium import open_page
from conftest import REPO, run_cli

CAPTURE = REPO / "sample_traces" / "feature_store.pcap"
PACED = REPO / "sample_traces" / "feature_store_paced.pcap"
NAMES = REPO / "sample_traces" / "feature_store.names.txt"
SECTIONS = ("answer", "input", "anatomy", "sizing", "timeline", "fleets", "limits")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    run_cli("parse.py", CAPTURE, "--port", "16379", "-o", d / "trace.parquet", check_rc=0)
    run_cli("parse.py", CAPTURE, "--port", "16379", "-o", d / "trace.txt", check_rc=0)
    return d


def _report(traces, name, trace, *args):
    out = traces / f"{name}.html"
    proc = run_cli("simulate.py", trace, *args, "--report", out, "--no-progress", check_rc=0)
    assert f"wrote the report to {out}" in proc.stderr
    return out


def _sections(dom: str) -> dict:
    """Each section's text (tags stripped), by id."""
    out = {}
    for sid in SECTIONS:
        m = re.search(rf'<(section|div)[^>]* id="{sid}"[^>]*>(.*?)</\1>', dom, re.S)
        assert m, f"section {sid} missing from the rendered page"
        out[sid] = re.sub(r"<[^>]+>", " ", m.group(2))
    return out


def _check_page(path):
    html = path.read_text()
    assert "<script" not in html
    assert not re.findall(r'(?:src|href)\s*=\s*"(?!#)', html), "the page refers to something outside itself"
    dom, console = open_page(str(path))
    assert console == [], console
    texts = _sections(dom)
    for sid, text in texts.items():
        assert len(text.split()) > 12, (sid, text)
    return html, dom, texts


def test_report_from_a_capture(traces, tmp_path):
    # the command, on the paced capture of real traffic
    out = _report(traces, "capture", PACED, "--port", "16380", "--lru", "1e3,1e4", "--curve", "lru,wtinylfu",
                  "--target", "55%", "--pods", "1,8", "--route", "random,entity", "--window", "2000",
                  "--feature-names", NAMES)
    html, dom, texts = _check_page(out)
    assert "packets" in texts["input"] and "losses" in texts["input"] and "3.3 min" in texts["input"]
    assert "LRU for 55%" in texts["answer"] and "W-TinyLFU" in texts["answer"] and "warms up in" in texts["answer"]
    assert re.search(r"LRU 10k x8 entity\s+[\d.]+%\s+[\d.]+%\s+[\d.]+ s", texts["timeline"])
    assert re.search(r"Zipf exponent\s+s = \d", texts["anatomy"])
    # every field id of the capture is one of the generator's features, and the dictionary names them all
    m = re.search(r"The dictionary named ([\d,]+) of the ([\d,]+) field ids", texts["anatomy"])
    assert m and m.group(1) == m.group(2) and int(m.group(1).replace(",", "")) > 50
    assert "daf_" in texts["anatomy"] and "Allow-list:" in texts["anatomy"]
    # the allow-list itself, one name a line, ready for --allow-list
    listed = re.search(r"<pre>(.*?)</pre>", dom, re.S).group(1).split("\n")
    kept = int(re.search(r"Allow-list:\s*</b>\s*([\d,]+) of", dom).group(1).replace(",", ""))
    assert len(listed) == kept and all(name.startswith(("daf_", "rtf_")) for name in listed)
    assert "entity" in texts["fleets"] and "random" in texts["fleets"] and dom.count("<svg") >= 6
    assert "Assumptions" in texts["sizing"] and "168 bytes" in texts["sizing"]
    # keys reach the page only as their prefix
    keys = cachescope.parse_capture(str(PACED), ports=(16380,))["key"].unique()
    for key in np.random.default_rng(1).choice(keys, 200):
        assert key not in html
    shot = tmp_path / "capture.png"
    open_page(str(out), screenshot=str(shot))
    from PIL import Image

    image = np.asarray(Image.open(shot).convert("L"))
    assert image.shape[1] == 1200 and image.std() > 10  # drawn, not blank


def test_report_from_a_parquet_trace(traces):
    out = _report(traces, "parquet", traces / "trace.parquet", "--curve", "lru,s3fifo", "--target", "50%",
                  "--lru", "5000")
    _, _, texts = _check_page(out)
    assert "not a capture" in texts["input"]
    assert "bytes share" in texts["anatomy"]  # a Parquet trace from a capture has value sizes
    assert "No pods were asked for" in texts["fleets"]
    assert "S3-FIFO" in texts["limits"]  # a sampled curve says so


def test_report_from_a_dataset_folder(traces):
    """A folder of Parquet parts (what parse.py writes of a rotated capture) is read again for the anatomy, its
    parts merged in time: the same section as the one-file trace's. It failed after the simulation, the
    folder opened as one file, and named as a failure to write the report."""
    part = traces / "dataset" / "host=a" / "part-0000.parquet"
    part.parent.mkdir(parents=True, exist_ok=True)
    part.write_bytes((traces / "trace.parquet").read_bytes())
    args = ("--curve", "lru", "--lru", "5000")
    _, _, folder = _check_page(_report(traces, "dataset", traces / "dataset", *args))
    _, _, one_file = _check_page(_report(traces, "one_file", traces / "trace.parquet", *args))
    assert "bytes share" in folder["anatomy"]
    made = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+")  # when its figures were drawn (their SVG metadata)
    assert made.sub("", folder["anatomy"]) == made.sub("", one_file["anatomy"])


def test_a_trace_gone_before_the_report_is_said_in_its_section(tmp_path):
    """The trace is read again for the anatomy: one that is gone by then leaves that section saying so, and
    the rest of the report is written."""
    trace = tmp_path / "trace.keys"
    trace.write_text("".join(f"GET k{i % 50}\n" for i in range(2000)))
    result = cachescope.simulate_trace(str(trace), lru=[10])
    trace.unlink()
    out = result.report(str(tmp_path / "r.html"))
    assert "reading the trace again failed" in open(out).read()


def test_report_from_a_text_trace(traces):
    out = _report(traces, "text", traces / "trace.txt", "--lru", "1e3,1e4")
    _, _, texts = _check_page(out)
    assert "no clock" in texts["timeline"] and "no clock" in texts["limits"]
    assert "No curve was asked for" in texts["sizing"]
    assert "field id" in texts["anatomy"]  # no dictionary: features by their ids
    # Its reader's counters (lines, bytes) are shown, and its losses are not taken for a capture's none.
    assert "not a capture" in texts["input"] and "packet losses before this trace" in texts["limits"]


def test_report_from_python(tmp_path):
    result = cachescope.simulate_trace(str(CAPTURE), ports=[16379], lru="1e4")
    path = result.report(str(tmp_path / "r.html"), feature_names=["daf_st_p7d_sum_dasher_wait_cat"])
    html = (tmp_path / "r.html").read_text()
    assert path == str(tmp_path / "r.html") and 'id="timeline"' in html
    assert "The dictionary named 1 of the" in html and "daf_st_p7d_sum_dasher_wait_cat" in html


def test_a_merge_reports_each_input_as_parse_does(tmp_path):
    """Several captures merged: the input section lists each capture's counters (not one line of zeros)."""
    other = tmp_path / "host2.pcap"
    other.write_bytes(PACED.read_bytes())
    result = cachescope.simulate_trace([str(PACED), str(other)], ports=[16380], lru="1e4")
    html = (open(result.report(str(tmp_path / "r.html")))).read()
    section = re.search(r'<section id="input">(.*?)</section>', html, re.S).group(1)
    assert section.count("1,792 packets") == 2 and "host2.pcap: 1,792 packets" in section
    assert " 0 packets" not in section


def test_bad_feature_names_is_one_line(tmp_path):
    bad = tmp_path / "names.txt"
    bad.write_bytes(b"\xff\xfe\x00")
    proc = run_cli("simulate.py", REPO / "sample_traces" / "feature_store.monitor", "--lru", "1e3",
                   "--feature-names", bad, "--report", tmp_path / "r.html", check_rc=2)
    assert proc.stderr.count("\n") == 1 and "names.txt" in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_fleet_section_tolerates_round_trips_or_their_absence():
    """A trace may or may not know its batches: without, each command is a round trip (`round_trips` equals
    `commands`), and the fleet table shows round trips saved only when they differ."""
    from types import SimpleNamespace

    from cachescope.report.sections import fleet_section

    row = {"policy": "lru", "capacity": 1000, "capacity_unit": "entries", "pods": 4, "route": "entity",
           "hit_rate": 0.5, "commands": 40, "commands_served": 10, "command_hit_rate": 0.25, "round_trips": 40,
           "round_trips_saved": 10, "round_trips_saved_rate": 0.25, "pod_hit_rate_min": 0.4,
           "pod_hit_rate_median": 0.5, "pod_hit_rate_max": 0.6, "load_imbalance": 1.2,
           "fleet_capacity_entries": 4000}
    batched = {**row, "round_trips": 8, "round_trips_saved": 1, "round_trips_saved_rate": 0.125}
    for rows, column in (([row], False), ([batched], True)):
        result = SimpleNamespace(summary_records=lambda rows=rows: rows)
        html = fleet_section(SimpleNamespace(result=result))
        assert ("round trips saved" in html) == column and "commands served" in html and "entity" in html
        assert "25.0%" in html and ("12.5%" in html) == column


def test_curves_alone_still_draw_the_hit_rate_over_time_at_the_answer(tmp_path):
    result = cachescope.simulate_trace(str(PACED), ports=[16380], curve="lru", target="55%", window=2000)
    html = open(result.report(str(tmp_path / "r.html"))).read()
    timeline = re.search(r'<section id="timeline">(.*?)</section>', html, re.S).group(1)
    assert "<svg" in timeline and "for 55%" in timeline and "end of warm-up" in timeline


def test_a_parquet_trace_without_command_names_says_so(tmp):
    """A Parquet trace needs only keys and ops: the report of one without `cmd` or `req` says commands by type
    are unknown (it raised a KeyError)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp / "bare.parquet"
    pq.write_table(pa.table({"op": ["read"] * 4, "key": ["a", "b", "a", "a"]}), path)
    out = tmp / "bare.html"
    proc = run_cli("simulate.py", path, "--lru", "2", "--report", out)
    assert proc.returncode == 0, proc.stderr
    assert "The trace does not name its commands" in out.read_text()
