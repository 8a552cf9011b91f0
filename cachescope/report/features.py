"""The feature dictionary: a feature store writes each feature under the decimal xxHash32 of its name, so a
list of names (one a line) is enough to name every field id of a trace that the list covers."""

from __future__ import annotations

from cachescope import _native
from cachescope.errors import UsageError


def read_feature_names(source) -> dict:
    """{field id as the trace spells it (decimal xxHash32): name}, from a file of names (one a line, `#`
    comments) or an iterable of names."""
    if isinstance(source, str):
        try:
            with open(source, encoding="utf-8") as f:
                names = [line.split("#", 1)[0].strip() for line in f]
        except UnicodeDecodeError:
            raise UsageError(f"{source}: not a text file of feature names") from None
        except OSError as e:
            raise UsageError(f"{source}: {e.strerror}") from None
        names = [n for n in names if n]
        if not names:
            raise UsageError(f"{source}: no feature names in it")
    else:
        names = [str(n).strip() for n in source if str(n).strip()]
    return {str(_native.xxh32(name.encode())): name for name in names}
