"""Peak memory on dense MGETs (issue 27, item 5): does parse.py (to Parquet, to oracleGeneral) and simulate.py
stay bounded on pipelined MGETs of 100-500 keys, whatever the capture's length?

The capture (`tests/integration/dense_mget.py`, recorded once into bench/data/): a real redis-server, 4
redis-py connections pipelining 8 MGETs of 100-500 short keys at a time, tcpdump on loopback, `--size-mb` MB
(210 by default, the size the issue measured). Three inputs made of it:
  - whole: the capture as recorded, replies included;
  - client side: its client packets only (a capture of one direction: no command is ever answered, so each
    connection holds its commands to the end and rows wait behind them);
  - quarter: the first quarter of the client side, the anchor: it reaches none of the parser's bounds.
Each command runs once per input through `peak.py` (`common.run_with_peak`: its own VmHWM at exit, start-up
included); printed: each peak, and each input's peak over the quarter's (bounded memory keeps the client
side's near 1 although it is 4x the quarter).

Usage: python bench/bench_dense_mget.py [--size-mb 210]
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import run_with_peak  # noqa: E402
from tests.integration import dense_mget  # noqa: E402


def commands(pcap: Path, port: int, out: Path):
    return {
        "parse.py -> Parquet": (HERE.parent / "parse.py", pcap, "--port", port, "-o", out / "t.parquet", "--no-progress"),
        "parse.py -> oracleGeneral": (HERE.parent / "parse.py", pcap, "--port", port, "-o", out / "t.oracleGeneral",
                                      "--no-progress"),
        "simulate.py --lru 100000": (HERE.parent / "simulate.py", pcap, "--port", port, "--lru", "100000", "--json"),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mb", type=float, default=210)
    a = p.parse_args()
    pcap, desc = dense_mget.cached(HERE / "data", a.size_mb)
    port = desc["port"]
    client, quarter = pcap.with_name(pcap.stem + "_client.pcap"), pcap.with_name(pcap.stem + "_client_q.pcap")
    if not client.exists():
        dense_mget.client_side(pcap, client, port)
    if not quarter.exists():
        dense_mget.client_side(pcap, quarter, port, 0.25)
    inputs = {"quarter": quarter, "client side": client, "whole": pcap}
    print(f"{pcap.name}: {desc['bytes'] / 1e6:.0f} MB, {desc['sent']['mget']:,} MGETs of "
          f"{desc['sent']['mget_keys']:,} keys; client side {client.stat().st_size / 1e6:.0f} MB, its first "
          f"quarter {quarter.stat().st_size / 1e6:.0f} MB")
    peaks = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in inputs.items():
            for what, argv in commands(path, port, Path(tmp)).items():
                seconds, _, peak = run_with_peak(*argv)
                peaks[(what, name)] = peak
                print(f"  {what:<28} {name:<12} {peak / 2**20:7.0f} MiB  ({seconds:.1f} s)", flush=True)
    print("peak over the quarter's (bounded: near 1 for the client side, 4x the quarter):")
    for what in commands(pcap, port, Path("/")):
        base = peaks[(what, "quarter")]
        ratios = ", ".join(f"{name} {peaks[(what, name)] / base:.2f}x" for name in ("client side", "whole"))
        print(f"  {what:<28} {ratios}")
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "dense_mget.json").write_text(json.dumps(
        {"capture": desc, "peaks_bytes": {f"{w} | {n}": v for (w, n), v in peaks.items()}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
