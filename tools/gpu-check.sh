#!/usr/bin/env bash
# The GPU check: run on a machine with an NVIDIA GPU (the project's device machine, a GPU runner).
# Builds in build-gpu/, runs `make check`'s suite with the GPU present (ctest), the reference
# solutions over the public suite, a fresh student checkout's `make test` (the stubs), and prints a
# short summary table last. Logs go to $OUT (default: build-gpu/logs).
#
#   tools/gpu-check.sh            full check
# Needs: nvcc, cmake, GoogleTest; nlohmann/json installed or in .deps/include/nlohmann/json.hpp.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build-gpu
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS"
export PATH="/usr/local/cuda/bin:$PATH"

step() { echo "== $*"; }
step "device"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$LOGS/device.txt"

step "build"
if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j "$(nproc)"; } >"$LOGS/build.log" 2>&1; then
  tail -40 "$LOGS/build.log"
  echo "GPU CHECK: BUILD FAILED"
  exit 1
fi

step "ctest (cpu, gpu and reference kernel tests, one process per test)"
(cd "$BUILD" && ctest -j 8 --output-on-failure) >"$LOGS/ctest.log" 2>&1
ctest_rc=$?
grep -E "tests passed|tests failed|Skipped|\*\*\*Failed" "$LOGS/ctest.log" | head -20

step "reference over the public suite (one process)"
"$BUILD/scangrade_selftest" >"$LOGS/selftest.log" 2>&1
selftest_rc=$?

step "fresh student checkout: make test must report the four stubs"
"$BUILD/scangrade_student_test" >"$LOGS/student.log" 2>&1
student_rc=$?

echo
echo "================ GPU check summary ================"
head -1 "$LOGS/device.txt"
sed -n '/^ScanGrade summary/,$p' "$LOGS/selftest.log"
sed -n '/^ScanGrade summary/,$p' "$LOGS/student.log"
grep -E "tests passed" "$LOGS/ctest.log" | sed 's/^/ctest: /'
printf 'exit codes: ctest=%s selftest=%s student_stubs=%s\n' "$ctest_rc" "$selftest_rc" "$student_rc"
[ "$ctest_rc" = 0 ] && [ "$selftest_rc" = 0 ] && grep -q "NOT IMPLEMENTED" "$LOGS/student.log"
