"""The nvcc flags student code is compiled with: one list in CMakeLists.txt (SCANGRADE_STUDENT_CUDA_FLAGS)
for `make test` and for grading (toolchain.json's cuda_flags), every flag listed in grading/docs/grading.md
"Compiler flags", and device code calling std::numeric_limits<T> (constexpr host functions: needs
--expt-relaxed-constexpr) compiling through build.py on both backends and running emulated."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import NVCC, REAL_TOOLCHAIN, REPO, fake_sandbox, make_submission, starter_files
from scangrade import build
from scangrade.build import Recipe, read_toolchain
from scangrade.submission import load_submission

# A Hillis-Steele slot whose kernel calls std::numeric_limits<T>::max() and ::lowest() in device code.
NUMERIC_LIMITS_HS = r"""
#include <limits>
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void hs_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T buf[2][1024];
  const unsigned t = threadIdx.x;
  // never true for the n this slot gets: calls to constexpr host functions from device code
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()) || std::numeric_limits<T>::lowest() > T(0)) return;
  int cur = 0;
  buf[cur][t] = t < n ? in[t] : T(0);
  __syncthreads();
  for (unsigned d = 1; d < blockDim.x; d <<= 1) {
    T v = buf[cur][t];
    if (t >= d) v += buf[cur][t - d];
    buf[1 - cur][t] = v;
    __syncthreads();
    cur = 1 - cur;
  }
  if (t < n) out[t] = buf[cur][t];
}

template <typename T>
void hs(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  hs_kernel<T><<<1, 1024, 0, stream>>>(d_in, d_out, n);
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hs(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hs(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
"""


def student_cuda_flags() -> list[str]:
    """SCANGRADE_STUDENT_CUDA_FLAGS as CMakeLists.txt sets it."""
    text = (REPO / "CMakeLists.txt").read_text()
    m = re.search(r"^set\(SCANGRADE_STUDENT_CUDA_FLAGS ([^)]*)\)", text, re.MULTILINE)
    assert m, "CMakeLists.txt sets SCANGRADE_STUDENT_CUDA_FLAGS"
    return m.group(1).split()


def readme_compiler_flags() -> str:
    """The 'Compiler flags' section of grading/docs/grading.md (moved there from README.md)."""
    text = (REPO / "grading" / "docs" / "grading.md").read_text()
    m = re.search(r"^#+ Compiler flags\n(.*?)(?=^#)", text, re.MULTILINE | re.DOTALL)
    assert m, "grading/docs/grading.md has a 'Compiler flags' section"
    return m.group(1)


def numeric_limits_submission(root):
    files = starter_files()
    files["student/hillis_steele.cu"] = NUMERIC_LIMITS_HS
    return make_submission(root, files)


def build_with(toolchain_dir, sub_path, out, backend):
    recipe = Recipe.from_toolchain(read_toolchain(toolchain_dir), backend)
    with load_submission(sub_path) as sub:
        return build.build(sub, recipe, out, jobs=2)


# --- one list, used everywhere, documented ------------------------------------------------------------

def test_student_flags_are_one_list_used_by_make_test_and_grading():
    flags = student_cuda_flags()
    assert "-lineinfo" in flags and "--expt-relaxed-constexpr" in flags
    cmake = (REPO / "CMakeLists.txt").read_text()
    assert re.search(r"target_compile_options\(scangrade_student PRIVATE [^)]*\$\{SCANGRADE_STUDENT_CUDA_FLAGS\}", cmake)
    # one function makes the whole nvcc command line: the grader's toolchain.json and the handout's
    # nvcc check (nvcc-check.json) both take it
    function = (REPO / "harness" / "cmake" / "student_nvcc_flags.cmake").read_text()
    assert re.search(r"set\(flags -std=c\+\+17 -O3 \$\{SCANGRADE_STUDENT_CUDA_FLAGS\}\)", function)
    grader = (REPO / "grading" / "grader.cmake").read_text()
    line = next(l for l in grader.splitlines() if '\\"cuda_flags\\"' in l)
    assert "${scangrade_cuda_flags_json}" in line, "toolchain.json's cuda_flags carry the same list"
    assert "scangrade_student_nvcc_flags(scangrade_cuda_flags)" in grader
    assert re.search(r"scangrade_student_nvcc_flags\(scangrade_check_flags\)[^\n]*\n[^\n]*scangrade_json_list"
                     r"\(scangrade_check_flags[^\n]*\n\s*file\(WRITE \"\$\{CMAKE_BINARY_DIR\}/nvcc-check.json\"", cmake)


def test_readme_lists_every_flag_the_grader_uses():
    section = readme_compiler_flags()
    for flag in ["-std=c++17", "-O3", "-gencode", *student_cuda_flags()]:
        assert f"`{flag}" in section, f"grading/docs/grading.md 'Compiler flags' does not list {flag}"


def emulated_student_flags() -> list[str]:
    """SCANGRADE_EMU_STUDENT_FLAGS as harness/emulation/CMakeLists.txt sets it."""
    text = (REPO / "harness" / "emulation" / "CMakeLists.txt").read_text()
    m = re.search(r"^set\(SCANGRADE_EMU_STUDENT_FLAGS\n(.*?)\n  CACHE", text, re.MULTILINE | re.DOTALL)
    assert m, "harness/emulation/CMakeLists.txt sets SCANGRADE_EMU_STUDENT_FLAGS"
    return m.group(1).split()


def test_emulated_flags_are_one_list_used_by_make_test_and_grading():
    flags = emulated_student_flags()
    assert "-fwrapv" in flags and any(f.startswith("-fsanitize=shift-exponent") for f in flags), flags
    emulation = (REPO / "harness" / "emulation" / "CMakeLists.txt").read_text()
    assert "${SCANGRADE_EMU_STUDENT_FLAGS}" in emulation, "scangrade_add_emulated_sources compiles with them"
    grader = (REPO / "grading" / "grader.cmake").read_text()
    assert "SCANGRADE_EMU_STUDENT_FLAGS" in grader and "${scangrade_emu_flags_json}" in grader
    if REAL_TOOLCHAIN.is_file() and "emulate" in json.loads(REAL_TOOLCHAIN.read_text()):
        built = json.loads(REAL_TOOLCHAIN.read_text())["emulate"]["cxx_flags"]
        for flag in flags:
            if flag.startswith("${"):  # the flags a compiler check adds (warp lockstep's instrumentation)
                continue
            assert flag in built, f"{flag} not in toolchain.json emulate cxx_flags {built}"
        # g++ 12 (the supported compiler) has the volatile-access instrumentation warp lockstep needs
        assert "--param=tsan-distinguish-volatile=1" in built, built


@pytest.mark.skipif(not REAL_TOOLCHAIN.is_file() or "nvcc" not in json.loads(REAL_TOOLCHAIN.read_text()),
                    reason=f"{REAL_TOOLCHAIN} with the GPU recipe is not built (run `make`)")
def test_real_toolchain_cuda_flags():
    flags = json.loads(REAL_TOOLCHAIN.read_text())["cuda_flags"]
    for flag in ["-std=c++17", "-O3", *student_cuda_flags()]:
        assert flag in flags, f"{flag} not in toolchain.json cuda_flags {flags}"
    assert "-G" not in flags and "-g" not in flags, "no device or host debug code in grading builds"
    gencode = [flags[i + 1] for i, f in enumerate(flags) if f == "-gencode"]
    assert len(gencode) >= 1 and all(g.startswith("arch=compute_") for g in gencode), gencode
    # grading/docs/grading.md's table names every one (options' values and include folders aside)
    section = readme_compiler_flags()
    for prev, flag in zip(["", *flags], flags):
        if prev not in ("-gencode", "--threads") and not flag.startswith("-I"):
            assert f"`{flag}" in section, f"grading/docs/grading.md 'Compiler flags' does not list {flag}"


# --- numeric_limits in device code ----------------------------------------------------------------

needs_nvcc = pytest.mark.skipif(not NVCC.exists(), reason=f"nvcc not found at {NVCC} (set SCANGRADE_NVCC)")


def nvcc_toolchain(d, extra):
    flags = ["-std=c++17", "-O3", *extra, "-arch=sm_90", f"-I{REPO / 'harness' / 'include'}"]
    (d / "grading").mkdir(parents=True)
    main = d / "main.cpp"   # nvcc links (no "cxx"): it compiles this main and adds the CUDA runtime
    main.write_text("int main() { return 0; }\n")
    (d / "grading" / "toolchain.json").write_text(json.dumps({
        "nvcc": str(NVCC), "cuda_flags": flags, "link": [str(main)],
        "judge": "/bin/false", "version": "test", "sandbox": str(fake_sandbox(d))}))
    return d


@needs_nvcc
def test_nvcc_numeric_limits_in_device_code(tmp_path):
    sub = numeric_limits_submission(tmp_path / "s")
    with_flags = nvcc_toolchain(tmp_path / "with", student_cuda_flags())
    result = build_with(with_flags, sub, tmp_path / "out", "gpu")
    assert result.status == "ok" and result.failed_slots == [], result.log
    # the control: without --expt-relaxed-constexpr nvcc refuses the very same file
    without = nvcc_toolchain(tmp_path / "without", [f for f in student_cuda_flags() if f != "--expt-relaxed-constexpr"])
    result = build_with(without, sub, tmp_path / "out2", "gpu")
    assert result.failed_slots == ["hillis_steele"]
    assert "--expt-relaxed-constexpr" in result.log and "constexpr __host__ function" in result.log


@pytest.mark.skipif(not REAL_TOOLCHAIN.is_file() or "nvcc" not in json.loads(REAL_TOOLCHAIN.read_text()),
                    reason=f"{REAL_TOOLCHAIN} with the GPU recipe is not built (run `make`)")
def test_real_toolchain_gpu_compiles_numeric_limits(tmp_path):
    result = build_with(REAL_TOOLCHAIN.parent.parent, numeric_limits_submission(tmp_path / "s"), tmp_path / "out", "gpu")
    assert "student/hillis_steele.cu: compile" not in result.log, result.log   # the compile, whatever the link says
    assert (tmp_path / "out" / "obj" / "student" / "hillis_steele.o").is_file()


emulate_toolchain = pytest.mark.skipif(
    not REAL_TOOLCHAIN.is_file() or "emulate" not in json.loads(REAL_TOOLCHAIN.read_text()),
    reason="the real toolchain.json with the emulation backend is not built (run `make`)")


@emulate_toolchain
def test_emulate_numeric_limits_in_device_code_compiles_and_passes(tmp_path):
    """Emulated, __device__ is host code: numeric_limits needs no flag. The slot is graded on the
    public suite's small cases and passes them."""
    sub = numeric_limits_submission(tmp_path / "s")
    result = build_with(REAL_TOOLCHAIN.parent.parent, sub, tmp_path / "build", "emulate")
    assert result.status == "ok" and result.failed_slots == [], result.log
    out = tmp_path / "graded"
    run = subprocess.run([sys.executable, str(REPO / "grading" / "grade.py"), str(sub), "--backend", "emulate",
                          "--build-dir", str(REAL_TOOLCHAIN.parent.parent), "--out", str(out), "--formats", "none",
                          "--max-n", "1024", "--quiet"], capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    doc = json.loads((out / "results.json").read_text())
    hs = [c for c in doc["cases"] if c["slot"] == "hillis_steele"]
    assert hs and all(c["status"] == "pass" for c in hs), [(c["id"], c["status"], c["message"]) for c in hs]
