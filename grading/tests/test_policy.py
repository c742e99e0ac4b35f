"""The build-time policy rules (scangrade/policy.py) on small real objects, from g++ and from nvcc."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import NVCC, REPO
from scangrade import policy

CXX = shutil.which("c++") or shutil.which("g++")
needs_cxx = pytest.mark.skipif(CXX is None or shutil.which("nm") is None, reason="needs a C++ compiler and nm")
needs_nvcc = pytest.mark.skipif(not NVCC.exists(), reason=f"nvcc not found at {NVCC} (set SCANGRADE_NVCC)")


def symbols_of(obj, backend="emulate"):
    listings = [subprocess.run(["nm", *flags, "-p", str(obj)], capture_output=True, text=True, check=True).stdout
                for flags in ([], ["-C"])]
    return policy.symbol_violations(policy.parse_nm(*listings), backend)


def compile_cxx(tmp_path, source: str, name="unit"):
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    obj = tmp_path / f"{name}.o"
    subprocess.run([CXX, "-std=c++17", "-O2", "-c", str(src), "-o", str(obj)], check=True, timeout=120)
    return obj


# (source, the rule it breaks or None, a name the evidence must quote)
CXX_CASES = {
    "student_names_only": ("namespace scangrade::student { int helper(int x) { return x + 1; }\n"
                           "namespace { int local(int x) { return x; } } int use(int x) { return local(x); } }\n"
                           "static void* malloc(int) { return nullptr; }  // internal: replaces nothing\n"
                           "void* take() { return malloc(1); }\n", None, ""),
    "main": ("int main() { return 0; }\n", policy.RULE_MAIN, "`main`"),
    "cuda_malloc_c": ('#include <cstddef>\nextern "C" int cudaMalloc(void** p, std::size_t) { *p = nullptr; return 0; }\n',
                      policy.RULE_RUNTIME, "`cudaMalloc`"),
    "cuda_malloc_cxx": ("#include <cstddef>\nint cudaMalloc(void** p, std::size_t) { *p = nullptr; return 0; }\n",
                        policy.RULE_RUNTIME, "`cudaMalloc(void**, unsigned long)`"),
    "driver": ('extern "C" int cuMemAlloc_v2(void*, unsigned long) { return 0; }\n', policy.RULE_RUNTIME, "cuMemAlloc_v2"),
    "cupti": ('extern "C" int cuptiSubscribe(void*, void*, void*) { return 0; }\n', policy.RULE_RUNTIME, "cuptiSubscribe"),
    "malloc": ('#include <cstddef>\nextern "C" void* malloc(std::size_t) { return nullptr; }\n', policy.RULE_ALLOCATOR,
               "`malloc`"),
    "dlsym": ('extern "C" void* dlsym(void*, const char*) { return nullptr; }\n', policy.RULE_ALLOCATOR, "`dlsym`"),
    "operator_new": ("#include <new>\n#include <cstdlib>\nvoid* operator new(std::size_t n) { return std::malloc(n); }\n",
                     policy.RULE_ALLOCATOR, "operator new"),
    "instrumentation_hook": ('extern "C" void __tsan_init() {}\n', policy.RULE_INSTRUMENTATION, "`__tsan_init`"),
    "ubsan_handler": ('extern "C" void __ubsan_handle_shift_out_of_bounds(void*, void*, void*) {}\n',
                      policy.RULE_INSTRUMENTATION, "__ubsan_handle_shift_out_of_bounds"),
    "harness": ("#include <cstddef>\nnamespace scangrade { std::size_t tracked_device_bytes() { return 0; } }\n",
                policy.RULE_HARNESS, "`scangrade::tracked_device_bytes()`"),
    "harness_reference": ("namespace scangrade::reference { void hierarchical_scan(const int*, int*, unsigned long) {} }\n",
                          policy.RULE_HARNESS, "scangrade::reference::hierarchical_scan"),
    "lookalike_namespace": ("namespace scangrade::student_helpers { int f() { return 1; } }\n", policy.RULE_HARNESS,
                            "scangrade::student_helpers::f()"),
    "calls_cub": ("namespace cub { namespace CUB_300000_SM_900 { void InclusiveSum(int*, int*, int); } }\n"
                  "void f(int* a, int n) { cub::CUB_300000_SM_900::InclusiveSum(a, a, n); }\n",
                  policy.RULE_LIBRARY, "calls `cub::CUB_300000_SM_900::InclusiveSum(int*, int*, int)`"),
    "defines_thrust": ("namespace thrust { void inclusive_scan(int*) {} }\n", policy.RULE_LIBRARY,
                       "defines `thrust::inclusive_scan(int*)`"),
    "std_partial_sum": ("#include <numeric>\n#include <vector>\n"
                        "template int* std::partial_sum<int*, int*>(int*, int*, int*);\n",
                        policy.RULE_LIBRARY, "std::partial_sum"),
    "cudpp": ('extern "C" int cudppScan(void*, void*, const void*, unsigned long);\n'
              "int f(void* p) { return cudppScan(p, p, p, 1); }\n", policy.RULE_LIBRARY, "calls `cudppScan`"),
}


@needs_cxx
@pytest.mark.parametrize("case", sorted(CXX_CASES))
def test_rules_on_gxx_objects(tmp_path, case):
    source, rule, quoted = CXX_CASES[case]
    found = symbols_of(compile_cxx(tmp_path, source))
    if rule is None:
        assert found == []
        return
    assert [v.rule for v in found] == [rule], found
    assert quoted in found[0].evidence and found[0].evidence.endswith(": " + rule)


@needs_cxx
def test_contract_inline_names_are_allowed_weak_and_refused_strong(tmp_path):
    weak = compile_cxx(tmp_path, '#include <stdexcept>\n#include <string>\nnamespace scangrade {\n'
                                 'struct NotImplemented : std::logic_error { using std::logic_error::logic_error; };\n'
                                 '[[noreturn]] inline void not_implemented(const char* s) { throw NotImplemented(s); }\n'
                                 '}\nvoid (*keep)(const char*) = scangrade::not_implemented;\n', "weak")
    assert symbols_of(weak) == []
    strong = compile_cxx(tmp_path, "namespace scangrade { void not_implemented(const char*) {} }\n", "strong")
    assert [v.rule for v in symbols_of(strong)] == [policy.RULE_HARNESS]


def test_contract_inline_matches_the_contract_header():
    """CONTRACT_INLINE lists exactly the names the contract header declares in namespace scangrade."""
    header = (REPO / "harness" / "include" / "scangrade" / "student_api.h").read_text()
    body = re.search(r"^namespace scangrade \{$(.*?)^\}  // namespace scangrade$", header, re.S | re.M).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    names = set(re.findall(r"\b(?:struct|class|enum class|enum)\s+(\w+)", body))
    names |= set(re.findall(r"\binline\b[^;{(=]*?\b(\w+)\s*[=(]", body))
    assert names == set(policy.CONTRACT_INLINE)


def test_emulated_runtime_templates_are_allowed_only_weak_and_only_emulated():
    weak = policy.Symbol("_ZN9scangrade3emu6detail4workIiEEvv", "void scangrade::emu::detail::work<int>()", "W")
    strong = policy.Symbol("_ZN9scangrade3emu12bytes_in_useEv", "scangrade::emu::bytes_in_use()", "T")
    assert policy.symbol_violations([weak], "emulate") == []
    assert [v.rule for v in policy.symbol_violations([weak], "gpu")] == [policy.RULE_HARNESS]
    assert [v.rule for v in policy.symbol_violations([strong], "emulate")] == [policy.RULE_HARNESS]


CALLS_REFERENCE = """
#include <cstddef>
#include <cstdint>
namespace scangrade { enum class ScanKind { Inclusive, Exclusive }; }
struct CUstream_st;
namespace scangrade::reference {
void hierarchical_scan(const std::int32_t*, std::int32_t*, std::size_t, scangrade::ScanKind, CUstream_st*);
}
namespace scangrade::student {
void helper(int*);
void hierarchical_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, ScanKind kind, CUstream_st* s) {
  int x = 0;
  helper(&x);   // another student file's function: allowed
  scangrade::reference::hierarchical_scan(in, out, n, kind, s);
}
}
"""


@needs_cxx
@pytest.mark.parametrize("backend", ["emulate", "gpu"])
def test_calling_the_reference_by_name_is_a_violation(tmp_path, backend):
    found = symbols_of(compile_cxx(tmp_path, CALLS_REFERENCE, "calls_reference"), backend)
    assert [v.rule for v in found] == [policy.RULE_HARNESS_USE], found
    assert found[0].evidence == ("it uses `scangrade::reference::hierarchical_scan(int const*, int*, unsigned long, "
                                 "scangrade::ScanKind, CUstream_st*)`, which belongs to the reference solution / "
                                 "harness: it is not linked into your program")


def test_undefined_harness_names_allowed_only_for_the_contract_and_the_emulator():
    emu = policy.Symbol("_ZN9scangrade3emu6detail10run_launchERKNS1_12LaunchConfigEPKciPFvPvES8_",
                        "scangrade::emu::detail::run_launch(...)", "U")
    inline = policy.Symbol("_ZTIN9scangrade14NotImplementedE", "typeinfo for scangrade::NotImplemented", "U")
    student = policy.Symbol("_ZN9scangrade7student6helperEPi", "scangrade::student::helper(int*)", "U")
    tracked = policy.Symbol("_ZN9scangrade20tracked_device_bytesEv", "scangrade::tracked_device_bytes()", "U")
    assert policy.symbol_violations([emu, inline, student], "emulate") == []
    assert [v.rule for v in policy.symbol_violations([emu], "gpu")] == [policy.RULE_HARNESS_USE]
    two = policy.symbol_violations([tracked, emu], "gpu")
    assert [v.rule for v in two] == [policy.RULE_HARNESS_USE]
    assert two[0].evidence.endswith("which belong to the reference solution / harness: they are not linked into "
                                    "your program")


def test_placement_new_is_not_an_allocator():
    """<new>'s inline placement new/delete (nvcc emits them as weak symbols) replace nothing."""
    placement = [policy.Symbol("_ZnwmPv", "operator new(unsigned long, void*)", "W"),
                 policy.Symbol("_ZdlPvS_", "operator delete(void*, void*)", "W")]
    assert policy.symbol_violations(placement, "gpu") == []
    replaced = policy.Symbol("_Znwm", "operator new(unsigned long)", "T")
    assert [v.rule for v in policy.symbol_violations([replaced], "gpu")] == [policy.RULE_ALLOCATOR]


def test_runtime_header_template_wrappers_are_not_entry_points():
    """cuda_runtime.h's inline template cudaMalloc<T>(T**, size_t), when not inlined, is not the runtime's."""
    template = policy.Symbol("_Z10cudaMallocIiE9cudaErrorPPT_m", "cudaError cudaMalloc<int>(int**, unsigned long)", "W")
    assert policy.symbol_violations([template], "emulate") == []


def test_name_path():
    assert policy.name_path("_ZN9scangrade7student3fooEv") == (["scangrade", "student", "foo"], False)
    assert policy.name_path("_ZGVZN9scangrade7student3fooEvE1x")[0][:2] == ["scangrade", "student"]
    assert policy.name_path("_ZTVN9scangrade14NotImplementedE") == (["scangrade", "NotImplemented"], False)
    assert policy.name_path("_Z10cudaMallocIiE9cudaErrorPPT_m") == (["cudaMalloc"], True)
    assert policy.name_path("malloc@GLIBC_2.2.5") == (["malloc"], False)


def test_include_scan_follows_student_headers_and_ignores_comments(tmp_path):
    student = tmp_path / "student"
    student.mkdir()
    (student / "scan.cuh").write_text("// #include <thrust/scan.h> in a comment is fine\n/* and\n#include <cub/cub.cuh>\n*/\n"
                                      "#include <thrust/device_vector.h>\n")
    (student / "hierarchical.cu").write_text('#include "scangrade/student_api.h"\n#include "scan.cuh"\n'
                                             "#include <cuda/std/cstdint>\n")
    found = policy.include_violations(student / "hierarchical.cu", student, tmp_path)
    assert [v.evidence for v in found] == [f"student/scan.cuh:5 includes <thrust/device_vector.h>: {policy.RULE_LIBRARY}"]
    (student / "clean.cu").write_text('#include <cuda_runtime.h>\n#include "scan_helpers.cuh"\n')
    assert policy.include_violations(student / "clean.cu", student, tmp_path) == []


NVCC_THRUST = r"""
#include <thrust/execution_policy.h>
#include <thrust/scan.h>
#include <cstddef>
void scan(const int* in, int* out, std::size_t n, cudaStream_t s) {
  thrust::inclusive_scan(thrust::cuda::par.on(s), in, in + n, out);
}
"""

NVCC_CUB = r"""
#include <cub/device/device_scan.cuh>
#include <cstddef>
void scan(const int* in, int* out, std::size_t n, void* temp, std::size_t& bytes, cudaStream_t s) {
  cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, n, s);
}
"""

NVCC_CLEAN = r"""
#include <cstddef>
namespace scangrade::student {
namespace { __global__ void k(int* out, std::size_t n) { if (threadIdx.x < n) out[threadIdx.x] = 1; } }
void run(int* out, std::size_t n, cudaStream_t s) { k<<<1, 32, 0, s>>>(out, n); }
}
#ifndef __CUDA_ARCH__
cudaError_t cudaMalloc(void** p, std::size_t size) { return cudaMallocAsync(p, size, nullptr); }
#endif
"""


def compile_nvcc(tmp_path, source, name):
    src = tmp_path / f"{name}.cu"
    src.write_text(source)
    obj = tmp_path / f"{name}.o"
    r = subprocess.run([str(NVCC), "-std=c++17", "-O3", "-arch=sm_90", "-c", str(src), "-o", str(obj)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return obj


@needs_nvcc
@pytest.mark.parametrize("name,source", [("thrust", NVCC_THRUST), ("cub", NVCC_CUB)])
def test_nvcc_host_object_shows_library_scans(tmp_path, name, source):
    """Even past the #include scan, nvcc's host object names the library (kernel stubs, instantiations)."""
    found = symbols_of(compile_nvcc(tmp_path, source, name), "gpu")
    assert [v.rule for v in found] == [policy.RULE_LIBRARY], found
    assert re.search(r"`(cub|thrust)::", found[0].evidence), found[0].evidence


@needs_nvcc
def test_nvcc_object_kernel_in_student_namespace_passes_and_runtime_definition_is_found(tmp_path):
    found = symbols_of(compile_nvcc(tmp_path, NVCC_CLEAN, "clean"), "gpu")
    assert [v.evidence for v in found] == [f"it defines `cudaMalloc`: {policy.RULE_RUNTIME}"]
