"""The feature dictionary (`--feature-names`): a list of names names the decimal xxHash32 field ids of a trace."""

import re

import pytest

from cachescope.errors import UsageError
from cachescope.report.features import read_feature_names
from conftest import REPO, run_cli

SAMPLES = REPO / "sample_traces"


def test_the_dictionary_names_every_field_of_the_bundled_sample():
    names = read_feature_names(str(SAMPLES / "feature_store.names.txt"))
    text = (SAMPLES / "feature_store.monitor").read_text()
    fields = set()
    for args in re.findall(r'"HMGET" ("[^"]*"(?: "[^"]*")*)', text):
        fields.update(a.strip('"') for a in args.split(" ")[1:])
    assert len(fields) > 200
    assert fields <= set(names), sorted(fields - set(names))[:5]
    assert all(k.isdigit() and int(k) < 2**32 for k in names)


def test_names_from_a_list_and_comments():
    names = read_feature_names(["daf_st_p28d_cnt_prep_time_float", "  ", "rtf_st_l1h_avg_delivery_time_float"])
    assert sorted(names.values()) == ["daf_st_p28d_cnt_prep_time_float", "rtf_st_l1h_avg_delivery_time_float"]


def test_the_generator_writes_the_committed_dictionary(tmp_path):
    out = tmp_path / "names.txt"
    run_cli(SAMPLES / "make_feature_store_trace.py", "-o", tmp_path / "t.monitor", "--requests", "1",
            "--names", out, check_rc=0)
    assert out.read_text() == (SAMPLES / "feature_store.names.txt").read_text()


@pytest.mark.parametrize("content", [b"", b"# only a comment\n\n"])
def test_an_empty_dictionary_is_refused(tmp_path, content):
    path = tmp_path / "names.txt"
    path.write_bytes(content)
    with pytest.raises(UsageError, match="names.txt: no feature names"):
        read_feature_names(str(path))
