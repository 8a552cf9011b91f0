"""Several captures to one trace: `parse.py a.pcap b.pcap ... -o fleet.parquet` (one file, the captures merged
by time) or `-o fleet/` (a Parquet dataset, one part per capture, partitioned by host and time).

Each capture is parsed into a part (part.py), here one after another or as Dask tasks in parallel
(cluster.py); a one-file output is then the parts merged by time (timemerge.py), so a serial run and a run on
a cluster write the same rows. A capture that cannot be parsed is reported by name; the others are written."""

from __future__ import annotations

import os
import secrets
import shutil

from cachescope.cluster import (TaskFailed, check_cluster_options, dask_available, dask_client, default_workers,
                                run_tasks)
from cachescope.errors import UsageError
from cachescope.parse.clock_offset import offsets
from cachescope.parse.inputs import Capture
from cachescope.parse.output_format import is_folder_output, output_format
from cachescope.parse.part import parse_part, partial_path
from cachescope.progress import count_bar


def convert_many(caps: list[Capture], output: str, fmt: str | None = None, ports=(6379,), anonymize: bool = False,
                 progress: bool = False, workers: int | None = None, scheduler: str | None = None) -> dict:
    """Parses `caps` into `output`; returns the counters summed, with `captures` (each one's), `failed`
    (`{"input", "error"}` for each capture that could not be parsed) and `clock_offsets`.
    `workers`: None runs on a LocalCluster when Dask is installed (0: in this process)."""
    check_cluster_options(workers, scheduler)
    dataset = is_folder_output(output)
    if dataset:
        if fmt not in (None, "parquet"):
            raise UsageError(f"{output}: a folder output is a Parquet dataset; --format {fmt} writes one file")
        out_fmt = "parquet"
        _check_empty_folder(output)
        root = output
    else:
        out_fmt = output_format(output, fmt)
        root = os.path.join(os.path.dirname(os.path.abspath(output)), f".{os.path.basename(output)}.parts")
    os.makedirs(root, exist_ok=True)
    salt = secrets.randbits(64) if anonymize else None
    args = [(c, root, dataset, ports, anonymize, salt) for c in caps]
    if scheduler is None and workers is None:
        workers = default_workers(len(caps)) if dask_available() else 0
    try:
        if scheduler is not None or workers:
            with dask_client(workers, scheduler) as client:
                results = run_tasks(client, parse_part, args, [c.name for c in caps], progress=progress,
                                    what="parsing captures")
        else:
            results = []
            with count_bar(len(caps), "parsing captures", progress) as bar:
                for a in args:
                    results.append(parse_part(*a))
                    bar.update(1)
        for c in caps:  # a task killed mid-part may have left its partial file
            if os.path.exists(partial_path(root, c)):
                os.remove(partial_path(root, c))
        parsed, failed = _split(caps, results)
        if not dataset and parsed:
            _merge_parts(parsed, output, out_fmt, progress)
    finally:
        if not dataset:
            shutil.rmtree(root, ignore_errors=True)
    return _stats(caps, parsed, failed, output, out_fmt)


def _check_empty_folder(output: str) -> None:
    if os.path.isdir(output) and any(not e.name.startswith(".") for e in os.scandir(output)):
        raise UsageError(f"{output}: the folder is not empty; a dataset is written to a new or empty folder")


def _split(caps, results):
    parsed, failed = [], []
    for c, r in zip(caps, results):
        if isinstance(r, TaskFailed):
            failed.append({"input": c.path, "host": c.host, "error": f"{c.path}: {r.message}"})
        elif "error" in r:
            failed.append({"input": c.path, "host": c.host, "error": r["error"]})
        else:
            parsed.append(r)
    return parsed, failed


def _merge_parts(parsed: list[dict], output: str, out_fmt: str, progress: bool) -> None:
    from cachescope.parse.writers import TraceWriter
    from cachescope.trace.dataset import part_streams
    from cachescope.trace.timemerge import merge_streams

    files = [r["part"] for r in parsed if r["part"]]
    total = sum(r["rows_written"] for r in parsed)
    with count_bar(total, f"merging into {output}", progress) as bar, TraceWriter(output, out_fmt) as writer:
        for rb in merge_streams(part_streams(files)):
            writer.write(rb)
            bar.update(rb.num_rows)


def _stats(caps, parsed, failed, output, out_fmt) -> dict:
    """The captures' counters summed (numbers, and counts by name; ports listed once)."""
    total: dict = {}
    per_capture = []
    for r in parsed:
        one = {k: v for k, v in r.items() if k not in ("signatures",)}
        per_capture.append(one)
        for k, v in one.items():
            if k in ("input", "host", "name", "part", "first_ts", "last_ts"):
                continue
            if isinstance(v, bool):
                total[k] = total.get(k, False) or v
            elif isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
            elif isinstance(v, dict):
                into = total.setdefault(k, {})
                for name, n in v.items():
                    into[name] = into.get(name, 0) + n
            elif isinstance(v, list):
                into = total.setdefault(k, [])
                into += [x for x in v if x not in into]
    total["rows"] = total.pop("rows_written", 0)
    clock = offsets({r["input"]: r["signatures"] for r in parsed})
    return {**total, "input": " + ".join(c.path for c in caps), "output": output, "format": out_fmt,
            "captures": per_capture, "failed": failed, "clock_offsets": clock}
