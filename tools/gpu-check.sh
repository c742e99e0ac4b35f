#!/usr/bin/env bash
# The GPU check: run on a machine with an NVIDIA GPU (the project's device machine, a GPU runner).
#   1. build in build-gpu/ (the emulation backend is skipped where Boost.Context is missing)
#   2. ctest: CPU tests, GPU tests (planted bugs, CUB's order), the reference kernel tests, the
#      grader's tests (the reference worker graded over the public suite, a racy submission under
#      compute-sanitizer); the Python tests and the gallery run separately (below / in CI)
#   3. the reference over the public suite, and a fresh student/ (the four stubs), as `make test`
#   4. a full grade of a bundled submission on the GPU (timings, × reference, × CUB), and the
#      reference scans against the copy and CUB (tools/bench_reference.py: table and plot, and what
#      a single-pass call is made of: --parts)
#   5. the whole gallery graded on the GPU, every verdict compared with the expected one, and every
#      case's status with the emulated snapshot (tools/bench_fidelity.py: the agreement table; the
#      fresh GPU statuses go to $OUT/gpu_statuses.json for grading/fidelity/)
#   6. (batch) the gallery's submissions graded as a class with grading/batch.py, and the sandbox's
#      exploit entries (beside two honest ones) as a second class with the build-time allowlists off,
#      the sandbox required, a hidden suite and a secret: the gradebook's verdicts
#      compared with the expected ones, timing with the GPU to one judge; then the exploit checks (the
#      secret in no output, no process or loot left) and what the sandbox costs (tools/bench_sandbox.py)
#   7. (bench) the batch benchmark: 100 submissions made from the gallery (tools/bench_batch.py),
#      wall time and where it went, every copy's verdicts compared with its gallery entry's
#   8. (repro) the timing tests on the GPU (fresh input per call, the paired reference), what the fresh
#      input costs, and tools/bench_repro.py: one submission as 16 copies in a class and 5 times alone,
#      then tools/bench_timing_causes.py: the ratio's noise under each cause varied alone (<= 4 min)
#   tools/gpu-check.sh [all|core|gallery|batch|final|bench|repro]   (REFERENCE_BENCH=0 skips the reference scans)
#      core: 1-4; gallery: 1 and 5; batch: 1 and 6; final: 1-4 and 6; bench: 1 and 7;
#      repro: 1 and 8; all: 1-5 (default)
#   PROBE_OUTSIDE=1 also prints what a process outside the worker sees of a child's GPU memory (NVML)
#   and CPU time (tools/probe_outside.cu), plainly and under bubblewrap with a pid namespace.
#   GALLERY_ENTRIES=a,b,... grades only those gallery entries (gallery phase); CLASS_DIR=folder also
#   grades that folder of submissions as a class on the GPU (any phase) and prints each one's slot
#   verdicts and points (a course's calibration set, kept outside the repository).
# Prints a summary last; logs and results go to $OUT (default: build-gpu/logs).
# Needs: nvcc, cmake, GoogleTest; nlohmann/json installed or in .deps/include/nlohmann/; bubblewrap
# installed or unpacked in .deps/bwrap-root/ (apt-get download bubblewrap && dpkg -x ... .deps/bwrap-root).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build-gpu
PHASE=${1:-all}
case "$PHASE" in all|core|gallery|batch|final|bench|repro) ;; *) echo "usage: $0 [all|core|gallery|batch|final|bench|repro]" >&2; exit 2;; esac
run_core() { [ "$PHASE" = all ] || [ "$PHASE" = core ] || [ "$PHASE" = final ]; }
run_gallery() { [ "$PHASE" = all ] || [ "$PHASE" = gallery ]; }
run_batch() { [ "$PHASE" = batch ] || [ "$PHASE" = final ]; }
run_bench() { [ "$PHASE" = bench ]; }
run_repro() { [ "$PHASE" = repro ]; }
ctest_rc=- selftest_rc=- student_rc=- demo_rc=- gallery_rc=- batch_rc=- verdicts_rc=- exploits_rc=- bench_rc=- repro_rc=-
output_check_rc=- single_rc=- reference_rc=- fidelity_rc=-
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS"
export PATH="/usr/local/cuda/bin:$PATH"
[ -x .deps/bwrap-root/usr/bin/bwrap ] && export PATH="$PWD/.deps/bwrap-root/usr/bin:$PATH"   # carried bubblewrap
step() { echo "== $*"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$LOGS/device.txt"
(command -v compute-sanitizer >/dev/null && compute-sanitizer --version | tail -1 || echo "compute-sanitizer: not found") \
  | tee -a "$LOGS/device.txt"

step "build"
if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j "$(nproc)"; } >"$LOGS/build.log" 2>&1; then
  tail -40 "$LOGS/build.log"
  echo "GPU CHECK: BUILD FAILED"
  exit 1
fi

if run_core; then
"$BUILD/grading/scangrade_sandbox" --probe | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"])' \
  | tee "$LOGS/sandbox.txt"

step "ctest (one process per test)"
(cd "$BUILD" && ctest -j 8 -E "^(gallery|python/)" --output-on-failure --timeout 900) >"$LOGS/ctest.log" 2>&1
ctest_rc=$?
grep -E "tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout" "$LOGS/ctest.log" | head -20

step "reference and student stubs over the public suite (make test)"
"$BUILD/scangrade_selftest" >"$LOGS/selftest.log" 2>&1
selftest_rc=$?
"$BUILD/scangrade_student_test" >"$LOGS/student.log" 2>&1
student_rc=$?

step "grade a bundled submission on the GPU (make demo)"
python3 grading/grade.py grading/gallery/correct_brent_kung --build-dir "$BUILD" --backend gpu \
  --out "$LOGS/demo" --formats all >"$LOGS/demo.log" 2>&1
demo_rc=$?
fi

if run_gallery; then
step "gallery on the GPU"
python3 grading/gallery.py --backend gpu --build-dir "$BUILD" --out "$LOGS/gallery" --jobs 4 \
  ${GALLERY_ENTRIES:+--entries "$GALLERY_ENTRIES"} --json "$LOGS/gallery.json" >"$LOGS/gallery.log" 2>&1
gallery_rc=$?
step "fidelity: the GPU's case statuses vs the emulated snapshot"
python3 tools/bench_fidelity.py "$LOGS/gallery" grading/fidelity/emulated_statuses.json \
  --write-snapshot "$LOGS/gpu_statuses.json" --note "gpu-check gallery on $(head -1 "$LOGS/device.txt")" \
  --json "$LOGS/fidelity.json" >"$LOGS/fidelity.log" 2>&1
fidelity_rc=$?
fi

if run_batch; then
step "batch: the gallery's submissions graded as a class"
rm -rf "$LOGS/class" "$LOGS/batch" "$LOGS/class-exploits" "$LOGS/batch-exploits"
mkdir -p "$LOGS/class" "$LOGS/class-exploits"
# the sandbox's attacks ("kind": "exploit") are a class of their own, beside two honest submissions, graded
# with the build-time allowlists off (SCANGRADE_BUILD_ALLOWLISTS=off): the build would refuse them first
for entry in grading/gallery/*/; do
  [ -f "$entry/expected.json" ] || continue
  if grep -q '"kind": *"exploit"' "$entry/expected.json"; then cp -r "$entry" "$LOGS/class-exploits/"
  else cp -r "$entry" "$LOGS/class/"; fi
done
cp -r grading/gallery/correct_kogge_stone grading/gallery/wrong_modifies_input "$LOGS/class-exploits/"
secret_dir=/tmp/scangrade-exploit-secret   # where exploit_include_secret looks for it
mkdir -p "$secret_dir" && secret="sg-secret-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$secret" > "$secret_dir/secret.txt" && chmod 600 "$secret_dir/secret.txt"
rm -f /tmp/scangrade-loot* /dev/shm/scangrade-loot* /tmp/scangrade-pwned*
python3 grading/batch.py "$LOGS/class" --out "$LOGS/batch" --backend gpu --build-dir "$BUILD" \
  --budget-s 150 --formats all --sandbox require --suite testcases/public.json \
  --hidden-suite testcases/hidden.example.json --secret-file "$secret_dir/secret.txt" >"$LOGS/batch.log" 2>&1
batch_rc=$?
SCANGRADE_BUILD_ALLOWLISTS=off python3 grading/batch.py "$LOGS/class-exploits" --out "$LOGS/batch-exploits" \
  --backend gpu --build-dir "$BUILD" --budget-s 150 --formats all --sandbox require --suite testcases/public.json \
  --hidden-suite testcases/hidden.example.json --secret-file "$secret_dir/secret.txt" >>"$LOGS/batch.log" 2>&1
rc=$?; [ "$batch_rc" = 0 ] && batch_rc=$rc
python3 grading/gallery.py --backend gpu --build-dir "$BUILD" --results-from "$LOGS/batch" \
  >"$LOGS/batch-verdicts.log" 2>&1
verdicts_rc=$?
python3 grading/gallery.py --backend gpu --build-dir "$BUILD" --results-from "$LOGS/batch-exploits" \
  >>"$LOGS/batch-verdicts.log" 2>&1
rc=$?; [ "$verdicts_rc" = 0 ] && verdicts_rc=$rc
step "exploit checks"
sleep 3   # the attackers' daemons would strike now
{
  leaked=$(grep -rl -- "$secret" "$LOGS/batch" "$LOGS/batch-exploits" 2>/dev/null | wc -l)
  left=$(pgrep -c -x sg-exploit-bomb || true)
  loot=$(ls /tmp/scangrade-loot* /dev/shm/scangrade-loot* 2>/dev/null | wc -l)
  pwned=$(ls -d /tmp/scangrade-pwned* 2>/dev/null | wc -l)   # files the judge was made to create
  forged=$(find "$LOGS/batch" "$LOGS/batch-exploits" -name forged-by-exploit | wc -l)
  rows=$(($(wc -l < "$LOGS/batch/gradebook.csv") + $(wc -l < "$LOGS/batch-exploits/gradebook.csv") - 2))
  students=$(($(ls "$LOGS/class" | wc -l) + $(ls "$LOGS/class-exploits" | wc -l)))
  echo "exploit checks: gradebook rows $rows/$students, files holding the secret $leaked," \
       "sg-exploit-bomb processes left $left, loot files $loot, forged marker files $forged," \
       "files made outside the sandbox $pwned"
  [ "$leaked" = 0 ] && [ "${left:-0}" = 0 ] && [ "$loot" = 0 ] && [ "$forged" = 0 ] && [ "$pwned" = 0 ] &&
    [ "$rows" = "$students" ]
} >"$LOGS/exploits.log" 2>&1
exploits_rc=$?
rm -rf "$secret_dir"
step "sandbox cost"
python3 tools/bench_sandbox.py --backend gpu --build-dir "$BUILD" -n 30 -r "${SANDBOX_BENCH_R:-2}" \
  --json "$LOGS/sandbox-cost.json" >"$LOGS/sandbox-cost.log" 2>&1
fi

if run_repro; then
step "timing: fresh input per call, paired reference (pytest), its cost, the ratio's reproducibility"
if ! python3 -c 'import jsonschema' 2>/dev/null && ls .deps/whl/*.whl >/dev/null 2>&1; then   # carried wheels (no network)
  python3 -m pip install -q --no-index --no-deps --target "$BUILD/site" .deps/whl/*.whl >/dev/null 2>&1 \
    && export PYTHONPATH="$PWD/$BUILD/site${PYTHONPATH:+:$PYTHONPATH}"
fi
SCANGRADE_BUILD_DIR="$PWD/$BUILD" python3 -m pytest -q -rs -p no:cacheprovider grading/tests/test_gpu_timing.py >"$LOGS/gpu-timing.log" 2>&1
repro_rc=$?
"$BUILD/scangrade_bench_fresh_input" >"$LOGS/fresh-input.log" 2>&1 || repro_rc=1
python3 tools/bench_repro.py "${REPRO_SUBMISSION:-grading/gallery/correct_recursive_malloc_async}" --backend gpu \
  --build-dir "$BUILD" --copies "${REPRO_COPIES:-16}" --alone "${REPRO_ALONE:-5}" --work "$BUILD/repro" \
  >"$LOGS/repro.log" 2>&1 || repro_rc=1
python3 tools/bench_timing_causes.py "${REPRO_SUBMISSION:-grading/gallery/correct_recursive_malloc_async}" \
  --backend gpu --build-dir "$BUILD" --runs "${CAUSES_RUNS:-3}" --max-s "${CAUSES_MAX_S:-180}" \
  --work "$BUILD/causes" >"$LOGS/causes.log" 2>&1 || repro_rc=1
fi

if run_core && [ "${REFERENCE_BENCH:-1}" != 0 ]; then
step "reference scans against the copy and CUB (tools/bench_reference.py)"
python3 tools/bench_reference.py --build-dir "$BUILD" --out "$LOGS/reference" --rounds 3 >"$LOGS/reference.log" 2>&1 &&
  python3 tools/bench_reference.py --build-dir "$BUILD" --out "$LOGS/reference" --parts --n 2^24,2^26,2^28 --dtype int32 \
    >"$LOGS/reference-parts.log" 2>&1
reference_rc=$?
fi

if run_bench; then
step "bench: one submission alone (grade.py, public suite, sanitizer on)"
(cd "$BUILD" && ctest -R "grader/OutputCheck" --output-on-failure) >"$LOGS/output-check.log" 2>&1
output_check_rc=$?
s=$(date +%s%N)
python3 grading/grade.py grading/gallery/correct_brent_kung --build-dir "$BUILD" --backend gpu --out "$LOGS/single" \
  --quiet >"$LOGS/single.log" 2>&1
single_rc=$?
single_ms=$(( ($(date +%s%N) - s) / 1000000 ))
python3 - "$LOGS/single/results.json" "$single_ms" >"$LOGS/single-phases.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["phases"]
print(f"single submission (correct_brent_kung, public suite, sanitizer on): {int(sys.argv[2]) / 1000:.1f} s wall; "
      f"build {r['build']['seconds']:.1f} s, functional {p['correctness_s']:.1f} s, timing {p['timing_s']:.1f} s "
      f"(inputs {p['prepare_s']:.1f} s), sanitizer {p['sanitizer_s']:.1f} s, {p.get('worker_starts', 0)} worker start(s) "
      f"{p.get('worker_start_s', 0):.1f} s, checker start {p.get('checker_start_s', 0):.1f} s; "
      f"score {r['score']['total']:g}/{r['score']['max_total']:g}")
PY
step "bench: 100 submissions from the gallery"
python3 tools/bench_sample.py --out "$LOGS/bench-machine.json" -- \
  python3 tools/bench_batch.py -n "${BENCH_N:-100}" --backend gpu --build-dir "$BUILD" --work "$BUILD/bench" \
  ${BENCH_JUDGES:+--judges-per-gpu "$BENCH_JUDGES"} >"$LOGS/bench.log" 2>"$LOGS/bench.err"
bench_rc=$?
grep -A3 "^machine use over" "$LOGS/bench.err" >"$LOGS/bench-machine.txt"
tail -3 "$LOGS/bench.err"
mkdir -p "$LOGS/bench"   # the numbers and the report, not the 100 submissions and their workers
cp "$BUILD/bench/bench.json" "$BUILD/bench/out/batch.json" "$BUILD/bench/out/gradebook.csv" \
  "$BUILD/bench/out/report.html" "$LOGS/bench/" 2>/dev/null
fi

if [ "${PROBE_OUTSIDE:-0}" = 1 ]; then
step "what a process outside the worker sees of its GPU use (tools/probe_outside.cu: NVML, CPU time)"
{ nvcc -O2 -o "$BUILD/probe_outside" tools/probe_outside.cu -lcuda -ldl && "$BUILD/probe_outside" &&
  { ! command -v bwrap >/dev/null || "$BUILD/probe_outside" --wrap bwrap --unshare-pid --die-with-parent \
      --dev-bind / / --proc /proc; }; } >"$LOGS/outside.log" 2>&1
fi

class_rc=-
if [ -n "${CLASS_DIR:-}" ]; then
step "a class folder on the GPU: $CLASS_DIR"
python3 grading/batch.py "$CLASS_DIR" --out "$LOGS/class" --build-dir "$BUILD" --backend gpu --quiet \
  >"$LOGS/class-batch.log" 2>&1
class_rc=$?
python3 tools/slot_verdicts.py "$LOGS/class" >"$LOGS/class.log" 2>&1 || class_rc=1
fi

echo
echo "================ GPU check summary ================"
cat "$LOGS/device.txt" "$LOGS/sandbox.txt" 2>/dev/null
if run_core; then
  sed -n '/^ScanGrade summary/,$p' "$LOGS/selftest.log"
  sed -n '/^ScanGrade summary/,$p' "$LOGS/student.log" | head -6
  sed -n '/^ScanGrade results/,$p' "$LOGS/demo.log"
  grep -E "tests passed" "$LOGS/ctest.log" | sed 's/^/ctest: /'
  grep -v "^details" "$LOGS/reference.log" 2>/dev/null
  tail -n +2 "$LOGS/reference-parts.log" 2>/dev/null
fi
run_gallery && cat "$LOGS/gallery.log" "$LOGS/fidelity.log"
if run_batch; then
  grep -E "^batch: [0-9]+ submission" "$LOGS/batch.log"
  cut -d, -f1,4,11-13 "$LOGS/batch/gradebook.csv" | column -s, -t 2>/dev/null || cut -d, -f1,4,11-13 "$LOGS/batch/gradebook.csv"
  cat "$LOGS/batch-verdicts.log" "$LOGS/exploits.log" "$LOGS/sandbox-cost.log"
fi
if run_repro; then
  tail -3 "$LOGS/gpu-timing.log" | sed 's/^/gpu timing tests: /'
  cat "$LOGS/fresh-input.log" "$LOGS/repro.log" "$LOGS/causes.log"
fi
if run_bench; then
  grep -E "tests passed|tests failed" "$LOGS/output-check.log" | sed 's/^/output check (device vs host rule): /'
  cat "$LOGS/single-phases.txt"
  cat "$LOGS/bench.log" "$LOGS/bench-machine.txt"
fi
[ "${PROBE_OUTSIDE:-0}" = 1 ] && cat "$LOGS/outside.log"
[ -n "${CLASS_DIR:-}" ] && { grep -E "^batch: [0-9]+ submission" "$LOGS/class-batch.log"; cat "$LOGS/class.log"; }
printf 'class=%s ' "$class_rc"
printf 'exit codes: ctest=%s selftest=%s student_stubs=%s demo=%s gallery=%s batch=%s batch_verdicts=%s exploits=%s bench=%s output_check=%s single=%s reference=%s fidelity=%s repro=%s\n' \
  "$ctest_rc" "$selftest_rc" "$student_rc" "$demo_rc" "$gallery_rc" "$batch_rc" "$verdicts_rc" "$exploits_rc" "$bench_rc" \
  "$output_check_rc" "$single_rc" "$reference_rc" "$fidelity_rc" "$repro_rc"
ok() { [ "$1" = 0 ] || [ "$1" = - ]; }
ok "$ctest_rc" && ok "$selftest_rc" && ok "$demo_rc" && ok "$gallery_rc" && ok "$batch_rc" && ok "$verdicts_rc" &&
  ok "$exploits_rc" &&
  ok "$bench_rc" && ok "$repro_rc" && ok "$output_check_rc" && ok "$single_rc" && ok "$reference_rc" && ok "$fidelity_rc" &&
  { ! run_core || grep -q "NOT IMPLEMENTED" "$LOGS/student.log"; }
