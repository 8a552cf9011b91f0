"""The feature dictionary: a feature store writes each feature under the decimal xxHash32 of its name, so a
list of names (one a line) is enough to name every field id of a trace that the list covers."""

from __future__ import annotations

from cachescope import _native
from cachescope.simulate.options import read_feature_file


def read_feature_names(source) -> dict:
    """{field id as the trace spells it (decimal xxHash32): name}, from a file of names (one a line, `#`
    comments) or an iterable of names."""
    if isinstance(source, str):
        names = read_feature_file(source, "no feature names in it")
    else:
        names = [str(n).strip() for n in source if str(n).strip()]
    return {str(_native.xxh32(name.encode())): name for name in names}
