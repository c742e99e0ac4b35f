#!/usr/bin/env bash
# Compare tunings of the reference single-pass scan on this GPU: each VARIANT is
# THREADS:ITEMS:MIN_BLOCKS[:MACRO+MACRO...] (MIN_BLOCKS 0: no launch bounds; the macros are defined
# for the build), built into build-tune/<variant> (only scangrade_bench_reference) and timed by
# tools/bench_reference.py over N (default 2^24,2^26,2^28). With -r R the variants are timed in R
# interleaved rounds (variant 1, 2, ..., 1, 2, ...), so that drift of the machine touches each alike,
# and a last table gives each variant's median single-pass x copy and x CUB over the rounds.
#   tools/bench_reference_variants.sh [-n 2^24,2^26,2^28] [-r ROUNDS] VARIANT...
set -uo pipefail
cd "$(dirname "$0")/.."
NS="2^24,2^26,2^28"
ROUNDS=1
while [ $# -gt 0 ]; do
  case "$1" in
    -n) NS=$2; shift 2;;
    -r) ROUNDS=$2; shift 2;;
    *) break;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-n N,...] [-r ROUNDS] THREADS:ITEMS:MIN_BLOCKS..." >&2; exit 2; }
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
if [ "$ROUNDS" -le 1 ]; then
  for v in "$@"; do
    IFS=: read -r t i m x <<<"$v"
    echo "== variant threads $t, items $i, min blocks $m${x:+, $x}"
    python3 tools/bench_reference.py --build-dir "$(dir_of "$v")" --n "$NS" | sed -n '2,/^details/p' | grep -v '^details'
  done
  exit 0
fi
for r in $(seq "$ROUNDS"); do
  for v in "$@"; do
    python3 tools/bench_reference.py --build-dir "$(dir_of "$v")" --n "$NS" --out "$(dir_of "$v")/round-$r" >/dev/null \
      || echo "variant $v: round $r failed"
  done
done
python3 - "$ROUNDS" "$@" <<'PY'
import json, statistics, subprocess, sys
from pathlib import Path
rounds, variants = int(sys.argv[1]), sys.argv[2:]
def dir_of(v):
    return Path("build-tune") / v.replace(":", "-").replace("+", "-")
print(f"single-pass over {rounds} interleaved rounds: median (min-max) of x copy, and median x CUB")
for v in variants:
    rows = {}
    for r in range(1, rounds + 1):
        f = dir_of(v) / f"round-{r}" / "bench-reference.json"
        if not f.is_file():
            continue
        for row in json.loads(f.read_text())["rows"]:
            key = (row["n"], row["dtype"])
            rows.setdefault(key, []).append((row["copy_ms"] / row["single_pass_ms"], row["cub_ms"] / row["single_pass_ms"]))
    cells = []
    for (n, dtype), vals in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        xc = [a for a, _ in vals]
        cells.append(f"2^{n.bit_length() - 1} {dtype}: {statistics.median(xc):.3f} ({min(xc):.3f}-{max(xc):.3f}) "
                     f"{statistics.median(b for _, b in vals):.2f}x CUB")
    print(f"{v}\n  " + "\n  ".join(cells))
PY
