#!/usr/bin/env bash
# Compare tunings of the reference single-pass scan on this GPU: each VARIANT is
# THREADS:ITEMS:MIN_BLOCKS (MIN_BLOCKS 0: no launch bounds), built into build-tune/<variant> (only
# scangrade_bench_reference) and timed by tools/bench_reference.py over N (default 2^24,2^26,2^28).
#   tools/bench_reference_variants.sh [-n 2^24,2^26,2^28] VARIANT...
set -uo pipefail
cd "$(dirname "$0")/.."
NS="2^24,2^26,2^28"
[ "${1:-}" = -n ] && { NS=$2; shift 2; }
[ $# -gt 0 ] || { echo "usage: $0 [-n N,...] THREADS:ITEMS:MIN_BLOCKS..." >&2; exit 2; }
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p build-tune
jobs=$(( $(nproc) / $# )); [ "$jobs" -ge 1 ] || jobs=1
for v in "$@"; do
  IFS=: read -r t i m <<<"$v"
  dir="build-tune/$t-$i-$m"
  ( cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DSCANGRADE_EMULATION=OFF \
      -DCMAKE_CUDA_FLAGS="-DSCANGRADE_SINGLE_PASS_THREADS=$t -DSCANGRADE_SINGLE_PASS_ITEMS=$i -DSCANGRADE_SINGLE_PASS_MIN_BLOCKS=$m" \
      >"$dir.log" 2>&1 && cmake --build "$dir" -j "$jobs" --target scangrade_bench_reference >>"$dir.log" 2>&1 \
      || echo "variant $v: build failed (see $dir.log)" ) &
done
wait
for v in "$@"; do
  IFS=: read -r t i m <<<"$v"
  echo "== variant threads $t, items $i, min blocks $m"
  python3 tools/bench_reference.py --build-dir "build-tune/$t-$i-$m" --n "$NS" | sed -n '2,/^details/p' | grep -v '^details'
done
