#!/bin/bash
# SHARDS at 1% as whole processes, cachescope against libCacheSim's mrcProfiler on the same oracleGeneral trace
# (anchors.py's cached Zipf(1) stream), alternating, REPEAT rounds; prints each run's wall seconds, the best of
# each and their ratio. Without anchors.py's exact curves (minutes at 10^8 lookups), for a quick pair.
# Usage: bench/scale/shards_pair.sh LOOKUPS UNIVERSE [REPEAT] [MRCPROFILER]
set -euo pipefail
N=$1; U=$2; R=${3:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
M=${4:-$ROOT/bench/data/libcachesim-0.3.5/src/libCacheSim/_build/bin/mrcProfiler}
T=$ROOT/bench/data/zipf_n${N}_u${U}_a1_s42.oracleGeneral
# anchors.py's 20 capacities: 1,000 entries to 40% of the universe, log-spaced.
CAPS=$(python -c "import numpy as np; print(','.join(str(c) for c in sorted({int(c) for c in np.geomspace(1000, 0.4 * $U, 20).round()})))")
cat "$T" > /dev/null  # into the page cache for both
now() { date +%s.%N; }
best_cs=999999; best_mrc=999999
uptime
for _ in $(seq "$R"); do
  s=$(now); (cd "$ROOT" && python simulate.py "$T" --format oracleGeneral --curve lru --curve-capacities "$CAPS" \
      --sample 1% --salts 1 --json --no-progress > /dev/null); e=$(now)
  cs=$(echo "$e - $s" | bc); best_cs=$(echo "if ($cs < $best_cs) $cs else $best_cs" | bc)
  s=$(now); "$M" "$T" oracleGeneral --algo=LRU --profiler=SHARDS --profiler-params=FIX_RATE,0.01,1 \
      --size="${CAPS//,/B,}B" > /dev/null; e=$(now)
  mrc=$(echo "$e - $s" | bc); best_mrc=$(echo "if ($mrc < $best_mrc) $mrc else $best_mrc" | bc)
  echo "cachescope $cs s, mrcProfiler $mrc s"
done
echo "best of $R: cachescope $best_cs s, mrcProfiler $best_mrc s: cachescope $(echo "scale=2; $best_mrc / $best_cs" | bc)x mrcProfiler's speed (target >= 1x)"
uptime
