#!/usr/bin/env bash
# The grader on a GPU machine: builds the grader targets, runs `ctest -R grader` (the reference worker
# graded over the public suite included), grades the stub student/ and a known-racy submission built
# from toolchain.json under compute-sanitizer, and keeps results and raw sanitizer XML in $OUT.
#   harness/grader/tests/gpu_check.sh      (needs nvcc, cmake; GoogleTest and nlohmann/json installed
#                                           or in build-grader-deps/{include,lib})
set -uo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
BUILD=build-gpu-grader
OUT=${OUT:-$BUILD/out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
step() { echo "== $*"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
command -v compute-sanitizer && compute-sanitizer --version | tail -1
extra=()
[ -f /usr/include/gtest/gtest.h ] || extra+=("-DGTEST_ROOT=$ROOT/build-grader-deps")
[ -f /usr/include/nlohmann/json.hpp ] || extra+=("-DSCANGRADE_NLOHMANN_INCLUDE=$ROOT/build-grader-deps/include")

step "build"
if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSCANGRADE_EMULATION=OFF "${extra[@]}" &&
       cmake --build "$BUILD" -j "$(nproc)" --target scangrade_judge scangrade_worker_reference \
         scangrade_worker_student scangrade_worker_racy scangrade_fake_worker scangrade_grader_tests; } >"$OUT/build.log" 2>&1; then
  tail -30 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi

step "ctest -R grader (reference over public.json on the GPU included)"
export SCANGRADE_GPU_RESULTS="$OUT/reference-public.json"
(cd "$BUILD" && ctest -R grader -j 4 --output-on-failure --timeout 900) >"$OUT/ctest.log" 2>&1
ctest_rc=$?
grep -E "tests passed|tests failed|Skipped|\*\*\*Failed|Failed  " "$OUT/ctest.log" | head -20

J="$BUILD/scangrade_judge"
step "stub student/: every hillis_steele case not_implemented"
"$J" --worker "$BUILD/scangrade_worker_student" --out "$OUT/stubs.json" --submission-name stubs \
  --submission-path student --backend gpu --suite testcases/public.json --only-slot hillis_steele
echo "stubs exit $?"

step "racy submission built from toolchain.json"
T="$BUILD/grading/toolchain.json"
python3 - "$T" "$BUILD/racy_worker" harness/grader/tests/racy/slots.cu "$OUT/racy_build.log" <<'PY'
import json, subprocess, sys
t = json.load(open(sys.argv[1])); exe, src, log = sys.argv[2], sys.argv[3], open(sys.argv[4], "w")
obj = exe + ".o"
r = subprocess.run([t["nvcc"], *t["cuda_flags"], "-c", src, "-o", obj], stdout=log, stderr=log)
r = r.returncode or subprocess.run([t["cxx"], "-o", exe, obj, *t["link"]], stdout=log, stderr=log).returncode
print("racy worker build rc", r)
PY
cat > "$OUT/sanitize-suite.json" <<'JS'
{"suite": "sanitize", "version": 1, "cases": [
 {"id": "hs.int32.n1024", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 1024,
  "values": "random", "seed": 7, "why": "full block", "sanitize": ["racecheck", "memcheck", "synccheck"]},
 {"id": "hier.int32.n100000", "slot": "hierarchical", "dtype": "int32", "kind": "exclusive", "n": 100000,
  "values": "random", "seed": 8, "why": "multi-block", "sanitize": ["memcheck"]}]}
JS
"$J" --worker "$BUILD/racy_worker" --out "$OUT/racy.json" --submission-name racy --submission-path racy \
  --backend gpu --suite "$OUT/sanitize-suite.json" --verbose
echo "racy exit $?"
"$J" --worker "$BUILD/scangrade_worker_reference" --out "$OUT/reference-sanitize.json" --submission-name reference \
  --submission-path reference --backend gpu --suite "$OUT/sanitize-suite.json" --verbose
echo "reference under sanitizer exit $?"

step "raw racecheck XML of the racy worker (format check)"
CH=$(mktemp -d)
python3 -c "import struct,sys; open(sys.argv[1]+'/in-1.bin','wb').write(struct.pack('<1024i', *range(1024)))" "$CH"
echo '{"k": 1, "nonce": "x", "mode": "check", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 1024}' |
  compute-sanitizer --tool racecheck --error-exitcode 86 --xml --save "$OUT/race.xml" --print-limit 5 \
  "$BUILD/racy_worker" --channel "$CH" 3>"$OUT/race-reply.txt" >"$OUT/race-stdout.txt" 2>&1
echo "racecheck exit $?"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for name in ("reference-public", "stubs", "racy", "reference-sanitize"):
    try: r = json.load(open(f"{out}/{name}.json"))
    except Exception as e: print(name, "no results:", e); continue
    st = {}
    for c in r["cases"]: st[c["status"]] = st.get(c["status"], 0) + 1
    print(f"{name}: exit {r['exit_code']} {r['outcome']} score {r['score']['total']:.2f}/{r['score']['max_total']:.2f} {st} sanitizer_pass={r['sanitizer_pass']}")
    for c in r["cases"]:
        if c["timing"]: t = c["timing"]; print(f"  {c['id']}: {t['median_ms']:.3f} ms ref {t['reference_ms']:.3f} cub {t['cub_ms']:.3f} reps {t['reps']} spread {t['spread']:.3f} {t['gbps']:.0f} GB/s copy {t['copy_gbps']:.0f}")
        if c["status"] != "pass" and name != "stubs": print("  ", c["id"], c["status"], c["message"][:300])
        if c["sanitizer"]: print("   sanitizer", json.dumps(c["sanitizer"])[:400])
PY
echo "ctest rc $ctest_rc"
