"""Whether a trace argument names a Parquet dataset (dataset.py reads it): without importing pyarrow, which
a text trace's run never needs."""

from __future__ import annotations

import glob
import os

# Key-value metadata of a part parse.py writes: the host its capture was taken on.
PART_HOST_KEY = b"cachescope.host"


def is_dataset(spec) -> bool:
    """Whether `spec` names a dataset: a URL, a folder, or a glob pattern that names no file itself."""
    if not isinstance(spec, (str, os.PathLike)):
        return False
    spec = os.fspath(spec)
    if "://" in spec:
        return True
    if os.path.isdir(spec):
        return True
    return not os.path.exists(spec) and glob.has_magic(spec)


def is_part_file(path: str) -> bool:
    """Whether `path` is a part parse.py wrote (a shell-expanded glob of a dataset's files)."""
    if not str(path).endswith((".parquet", ".pq")) or not os.path.isfile(path):
        return False
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except (pa.ArrowException, OSError):
        return False
    return PART_HOST_KEY in meta
