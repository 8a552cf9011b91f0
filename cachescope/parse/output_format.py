"""The output formats of `parse.py` and how an output's name picks one; apart from the writers so that
`parse.py --help` imports no pyarrow."""

from __future__ import annotations

import os

from cachescope.errors import UsageError

OUTPUT_FORMATS = ("parquet", "commands", "monitor", "oracleGeneral")
_BY_EXTENSION = {".parquet": "parquet", ".pq": "parquet", ".txt": "commands", ".commands": "commands",
                 ".monitor": "monitor", ".oraclegeneral": "oracleGeneral", ".bin": "oracleGeneral"}


def output_format(path: str, forced: str | None) -> str:
    if forced is not None:
        if forced not in OUTPUT_FORMATS:
            raise UsageError(f"unknown output format {forced!r}; choose from {', '.join(OUTPUT_FORMATS)}")
        return forced
    fmt = _BY_EXTENSION.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise UsageError(f"{path}: cannot tell the output format from the extension; give --format "
                         f"({', '.join(OUTPUT_FORMATS)})")
    return fmt


def is_folder_output(output: str) -> bool:
    """`-o fleet/` (a trailing slash) or an existing folder: a dataset."""
    return output.endswith(("/", os.sep)) or os.path.isdir(output)
