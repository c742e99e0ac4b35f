#!/usr/bin/env bash
# Compare tunings of the reference single-pass scan on this GPU: each VARIANT is
# THREADS:ITEMS:MIN_BLOCKS[:MACRO+MACRO...] (MIN_BLOCKS 0: no launch bounds; the macros are defined
# for the build), built into build-tune/<variant> (only scangrade_bench_reference) and timed by
# tools/bench_reference.py over N (default 2^24,2^26,2^28).
#   tools/bench_reference_variants.sh [-n 2^24,2^26,2^28] VARIANT...
set -uo pipefail
cd "$(dirname "$0")/.."
NS="2^24,2^26,2^28"
[ "${1:-}" = -n ] && { NS=$2; shift 2; }
[ $# -gt 0 ] || { echo "usage: $0 [-n N,...] THREADS:ITEMS:MIN_BLOCKS..." >&2; exit 2; }
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p build-tune
jobs=$(( $(nproc) / $# )); [ "$jobs" -ge 1 ] || jobs=1
dir_of() { echo "build-tune/$(echo "$1" | tr ':+' '--')"; }
for v in "$@"; do
  IFS=: read -r t i m x <<<"$v"
  dir=$(dir_of "$v")
  extra=""
  for d in ${x//+/ }; do extra="$extra -D$d"; done
  ( cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DSCANGRADE_EMULATION=OFF \
      -DCMAKE_CUDA_FLAGS="-DSCANGRADE_SINGLE_PASS_THREADS=$t -DSCANGRADE_SINGLE_PASS_ITEMS=$i -DSCANGRADE_SINGLE_PASS_MIN_BLOCKS=$m$extra" \
      >"$dir.log" 2>&1 && cmake --build "$dir" -j "$jobs" --target scangrade_bench_reference >>"$dir.log" 2>&1 \
      || echo "variant $v: build failed (see $dir.log)" ) &
done
wait
for v in "$@"; do
  IFS=: read -r t i m x <<<"$v"
  echo "== variant threads $t, items $i, min blocks $m${x:+, $x}"
  python3 tools/bench_reference.py --build-dir "$(dir_of "$v")" --n "$NS" | sed -n '2,/^details/p' | grep -v '^details'
done
