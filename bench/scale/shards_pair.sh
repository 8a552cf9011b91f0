#!/bin/bash
# SHARDS at 1% as whole processes, cachescope against libCacheSim's mrcProfiler on the same oracleGeneral trace
# (anchors.py's cached Zipf(1) stream), alternating, REPEAT rounds; prints each run's wall seconds and CPU
# seconds (user + system), the best wall of each and their ratio. Without anchors.py's exact curves (minutes at
# 10^8 lookups), for a quick pair. With BEFORE=DIR (another worktree, its extension built), that worktree's
# simulate.py runs in the same rounds too: a change measured against what it changed, under the same load.
# The interpreter is the one `python` resolves to, called directly: a version manager's shim (pyenv's is a
# shell script that starts more shells, 0.1-0.3 s a call here) is not cachescope's start-up; PYTHON overrides.
# Usage: [BEFORE=DIR] [PYTHON=EXE] bench/scale/shards_pair.sh LOOKUPS UNIVERSE [REPEAT] [MRCPROFILER]
set -euo pipefail
N=$1; U=$2; R=${3:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
M=${4:-$ROOT/bench/data/libcachesim-0.3.5/src/libCacheSim/_build/bin/mrcProfiler}
T=$ROOT/bench/data/zipf_n${N}_u${U}_a1_s42.oracleGeneral
PY=${PYTHON:-$(python -c 'import sys; print(sys.executable)')}
# anchors.py's 20 capacities: 1,000 entries to 40% of the universe, log-spaced.
CAPS=$("$PY" -c "import numpy as np; print(','.join(str(c) for c in sorted({int(c) for c in np.geomspace(1000, 0.4 * $U, 20).round()})))")
cat "$T" > /dev/null  # into the page cache for both
# cachescope's modules compiled, as every run of a checkout but its first finds them (where
# PYTHONDONTWRITEBYTECODE is set, as in some sandboxes, each run would otherwise compile the edited ones again).
"$PY" -m compileall -q "$ROOT/cachescope" ${BEFORE:+"$BEFORE/cachescope"}
TIMES=$(mktemp); trap 'rm -f "$TIMES"' EXIT
# Runs a command; prints "wall user+sys" of it.
timed() { /usr/bin/time -f "%e %U %S" -o "$TIMES" "$@" > /dev/null; awk '{printf "%.2f %.2f", $1, $2 + $3}' "$TIMES"; }
cachescope() { (cd "$1" && timed "$PY" simulate.py "$T" --format oracleGeneral --curve lru --curve-capacities "$CAPS" \
    --sample 1% --salts 1 --json --no-progress); }
best() { echo $1 | tr " " "\n" | sort -g | head -1; }
cs=""; mrc=""; before=""
echo "$(uptime)"
for _ in $(seq "$R"); do
  a=$(cachescope "$ROOT"); cs="$cs ${a%% *}"
  m=$(timed "$M" "$T" oracleGeneral --algo=LRU --profiler=SHARDS --profiler-params=FIX_RATE,0.01,1 --size="${CAPS//,/B,}B")
  mrc="$mrc ${m%% *}"
  line="cachescope $a | mrcProfiler $m"
  if [ -n "${BEFORE:-}" ]; then b=$(cachescope "$BEFORE"); before="$before ${b%% *}"; line="$line | before $b"; fi
  echo "$line   (wall s, cpu s)"
done
bc_=$(best "$cs"); bm=$(best "$mrc")
echo "best of $R: cachescope $bc_ s, mrcProfiler $bm s: cachescope $(echo "scale=2; $bm / $bc_" | bc)x mrcProfiler's speed (target >= 1x)"
if [ -n "${BEFORE:-}" ]; then bb=$(best "$before"); echo "before: $bb s, $(echo "scale=2; $bm / $bb" | bc)x mrcProfiler's speed"; fi
echo "$(uptime)"
