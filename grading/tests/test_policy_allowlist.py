"""The build-time allowlists (grading/policy_rules.json, scangrade/policy.py) on tiny sources compiled for
real: by g++ through the emulation backend's recipe (rewrite.py, then g++), and by nvcc where it is
installed (it compiles without a GPU). Each rule has a source that breaks it and the evidence it must
give; honest code (the correct gallery entries, the reference's slot files) breaks none."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NVCC, REPO
from scangrade import build, build_compile, policy, policy_includes

CXX = shutil.which("c++") or shutil.which("g++")
BINUTILS = all(shutil.which(t) for t in ("nm", "readelf", "objdump"))
needs_cxx = pytest.mark.skipif(CXX is None or not BINUTILS, reason="needs a C++ compiler and binutils")
needs_nvcc = pytest.mark.skipif(not NVCC.exists() or not BINUTILS, reason=f"nvcc not found at {NVCC}")
GALLERY = REPO / "grading" / "gallery"
EMULATION = REPO / "harness" / "emulation"


def recipe(backend: str) -> build.Recipe:
    """The grader's recipe for a backend, as CMake writes it into toolchain.json, without the sandbox."""
    tools = dict(nm=shutil.which("nm") or "nm", readelf=shutil.which("readelf") or "readelf",
                 objdump=shutil.which("objdump") or "objdump",
                 cuda_include=tuple(map(str, policy.cuda_include_roots(str(NVCC) if NVCC.exists() else None))))
    if backend == "emulate":
        rewrite = (sys.executable, str(EMULATION / "rewrite.py"), "--runtime-header",
                   str(EMULATION / "include" / "cuda_runtime.h"))
        flags = ("-std=c++17", "-O2", "-g0", f"-I{EMULATION / 'include'}", f"-I{REPO / 'harness' / 'include'}",
                 "-DSCANGRADE_EMULATED")
        return build.Recipe("emulate", (CXX,), flags, (CXX,), (), rewrite, **tools)
    flags = ("-std=c++17", "-O3", "--expt-relaxed-constexpr", "-gencode", "arch=compute_90,code=sm_90",
             f"-I{REPO / 'harness' / 'include'}")
    return build.Recipe("gpu", (str(NVCC),), flags, (CXX,), (), **tools)


def compile_student(tmp_path: Path, backend: str, files: dict[str, str], name: str = "hierarchical.cu",
                    student: Path | None = None) -> build.Unit:
    """Compile one file of a student/ folder (written from `files`) the way build.py does."""
    if student is None:
        student = tmp_path / "sub" / "student"
        student.mkdir(parents=True)
        for rel, text in files.items():
            (student / rel).parent.mkdir(parents=True, exist_ok=True)
            (student / rel).write_text(text)
    unit = build.Unit(f"student/{name}", Path("student") / name, tmp_path / "obj" / backend / f"{Path(name).stem}.o",
                      Path(name).stem if Path(name).stem in build.SLOT_FUNCTIONS else None)
    build_compile.compile_unit(recipe(backend), unit, student, student.parent, 600)
    assert unit.harness_error is None, unit.harness_error
    return unit


def evidence(unit: build.Unit) -> str:
    return "; ".join(v.evidence for v in unit.violations)


HEAD = '#include "scangrade/student_api.h"\n'
SLOT = ("namespace scangrade::student {\n"
        "void hierarchical_scan(const std::int32_t*, std::int32_t*, std::size_t, ScanKind, cudaStream_t) {}\n"
        "void hierarchical_scan(const float*, float*, std::size_t, ScanKind, cudaStream_t) {}\n}\n")

# name -> (the file's text, the backends, pieces the evidence must hold; [] : no violation at all)
CASES = {
    # included files
    # a header is not evidence: every C, C++, system and CUDA header may be included (what a slot calls
    # decides, below); students include these by habit
    "habit_headers_are_allowed": (HEAD + "#include <math.h>\n#include <stdlib.h>\n#include <stdio.h>\n"
                                  "#include <cuda.h>\n#include <sys/time.h>\n#include <time.h>\n#include <iostream>\n"
                                  "#include <assert.h>\n#include <complex.h>\n#include <fenv.h>\n" + SLOT, "both", []),
    "capability_headers_are_allowed": (HEAD + "#include <thread>\n#include <unistd.h>\n#include <dlfcn.h>\n"
                                       "#include <sys/socket.h>\n#include <fstream>\n#include <csignal>\n" + SLOT,
                                       "both", []),
    "habit_calls_are_allowed": (HEAD + "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <sys/time.h>\n"
                                "#include <unistd.h>\n#include <iostream>\n"
                                "namespace scangrade::student { double f(cudaError_t e, double x) { timeval t{}; "
                                "gettimeofday(&t, nullptr); if (e != cudaSuccess) { fprintf(stderr, \"%s\\n\", "
                                "cudaGetErrorString(e)); std::cerr << x; cudaDeviceReset(); usleep(10); exit(1); } "
                                "return ceil(x) + double(t.tv_usec); } }\n" + SLOT, "both", []),
    "dlopen_call": (HEAD + "#include <dlfcn.h>\nnamespace scangrade::student { void* f() { "
                    'return dlopen("libcupti.so", RTLD_NOW); } }\n' + SLOT, "both", ["dlopen", "dynamic loading"]),
    "library_scan_call": (HEAD + "#include <numeric>\n#include <vector>\nnamespace scangrade::student { "
                          "void f(std::vector<int>& v) {\n  std::inclusive_scan(v.begin(), v.end(), v.begin());\n} }\n"
                          + SLOT, "both", ["student/hierarchical.cu:5 calls std::inclusive_scan", "library scans"]),
    "include_cub_through_a_macro": (HEAD + "#define LIB <cub/cub.cuh>\n#include LIB\n" + SLOT, "both",
                                    # the line of the #include (nvcc's tree) or of the name (g++, where CUB
                                    # is missing and the compile stops there)
                                    ["student/hierarchical.cu:", " includes <cub/cub.cuh>", "CUB and Thrust"]),
    "include_through_a_student_header": (HEAD + '#include "detail/io.cuh"\n' + SLOT, "both",
                                         ["student/detail/io.cuh:2 includes <scangrade/suite.h> "
                                          "(through student/hierarchical.cu)", "the harness's own headers"]),
    "include_harness_header": (HEAD + '#include "scangrade/alloc_tracker.h"\n' + SLOT, "both",
                               ["includes <scangrade/alloc_tracker.h>", "the harness's own headers"]),
    "standard_library_is_allowed": (HEAD + "#include <iostream>\n#include <vector>\n#include <algorithm>\n"
                                    "#include <cstdio>\n#include <cmath>\n#include <atomic>\n#include <climits>\n"
                                    "#include <cassert>\n#include <limits>\n#include <stdint.h>\n" + SLOT,
                                    "both", []),
    "cuda_device_headers_are_allowed": (HEAD + "#include <cuda_runtime.h>\n#include <device_launch_parameters.h>\n"
                                        "#include <cooperative_groups.h>\n#include <cuda/std/atomic>\n" + SLOT,
                                        "gpu", []),
    # undefined symbols
    "pinned_memory": (HEAD + "namespace scangrade::student { void* f(std::size_t n) { void* p = nullptr; "
                      "cudaMallocHost(&p, n); return p; } }\n" + SLOT, "both", ["cudaMallocHost", "host-visible"]),
    "managed_memory": (HEAD + "namespace scangrade::student { void* f(std::size_t n) { void* p = nullptr; "
                       "cudaMallocManaged(&p, n); return p; } }\n" + SLOT, "both", ["cudaMallocManaged", "host-visible"]),
    "managed_variable": (HEAD + "__managed__ int counter;\nnamespace scangrade::student { "
                         "__global__ void k() { counter = 1; } void f() { k<<<1, 1>>>(); } }\n" + SLOT, "gpu",
                         ["__cudaRegisterManagedVar", "host-visible"]),
    "driver_entry_point": (HEAD + 'namespace scangrade::student { void* f() { void* fn = nullptr; '
                           'cudaDriverEntryPointQueryResult q{}; cudaGetDriverEntryPoint("cuMemcpy2D", &fn, '
                           'cudaEnableDefault, &q); return fn; } }\n' + SLOT, "gpu",
                           ["cudaGetDriverEntryPoint", "driver API"]),
    "driver_call_declared_by_hand": (HEAD + 'extern "C" int cuMemcpy2D_v2(const void*);\n'
                                     "namespace scangrade::student { int f() { return cuMemcpy2D_v2(nullptr); } }\n"
                                     + SLOT, "both", ["cuMemcpy2D_v2", "driver API"]),
    "cupti_declared_by_hand": (HEAD + 'extern "C" int cuptiFinalize();\n'
                               "namespace scangrade::student { int f() { return cuptiFinalize(); } }\n" + SLOT,
                               "both", ["cuptiFinalize", "CUPTI"]),
    "thread_by_hand": (HEAD + 'extern "C" int pthread_create(void*, const void*, void* (*)(void*), void*);\n'
                       "namespace scangrade::student { int f() { return pthread_create(nullptr, nullptr, nullptr, "
                       "nullptr); } }\n" + SLOT, "both", ["pthread_create", "host threads"]),
    "process_by_hand": (HEAD + 'extern "C" int fork();\nnamespace scangrade::student { int f() { return fork(); } }\n'
                        + SLOT, "both", ["fork", "processes and signals"]),
    "raw_syscall_function": (HEAD + 'extern "C" long syscall(long, ...);\n'
                             "namespace scangrade::student { long f() { return syscall(39); } }\n" + SLOT, "both",
                             ["syscall", "raw system calls"]),
    "file_by_hand": (HEAD + "#include <cstdio>\nnamespace scangrade::student { void* f() { "
                     'return std::fopen("/etc/passwd", "r"); } }\n' + SLOT, "both", ["fopen", "files, sockets"]),
    "mprotect_by_hand": (HEAD + 'extern "C" int mprotect(void*, unsigned long, int);\n'
                         "namespace scangrade::student { int f(void* p) { return mprotect(p, 4096, 7); } }\n" + SLOT,
                         "both", ["mprotect", "memory mappings"]),
    # a name is refused only when calling it is the violation: another function is judged by what it does
    "unknown_function_is_allowed": (HEAD + 'extern "C" int scan_on_the_side(int);\n'
                                    "namespace scangrade::student { int f(int x) { return scan_on_the_side(x); } }\n"
                                    + SLOT, "both", []),
    "emulator_trace": (HEAD + "namespace scangrade::student { void f() { scangrade::emu::trace_begin(); } }\n" + SLOT,
                       "emulate", ["scangrade::emu::trace_begin()", "belong to the harness"]),
    # defined symbols: not refused by name (the grader's link makes them local: test_build's interposition tests)
    "c_linkage_function_is_allowed": (HEAD + '#include <cstddef>\nextern "C" long write(int, const void*, std::size_t) '
                                      "{ return 0; }\n" + SLOT, "both", []),
    "c_linkage_global_is_allowed": (HEAD + "int counter = 1;\n__device__ unsigned int tile_counter;\n" + SLOT, "both",
                                    []),
    "reserved_namespace_is_allowed": (HEAD + "namespace std { void scan_helper(int*) {} }\n" + SLOT, "both", []),
    "global_namespace_cxx_names_are_allowed": (HEAD + "__host__ __device__ int helper(int x) { return x + 1; }\n"
                                               "__global__ void kernel(int* p) { p[0] = helper(1); }\n"
                                               "namespace { int local = 2; }\nstatic int file_local = 3;\n"
                                               "namespace scangrade::student { int used() { return local + "
                                               "file_local; } }\n" + SLOT, "both", []),
    # start-up code
    "global_object_with_a_constructor": (HEAD + "#include <vector>\nstd::vector<int> table(1024);\n" + SLOT, "both",
                                         ["runs code before main", "a static initializer", "function-local static"]),
    "constructor_attribute": (HEAD + "#include <cstdio>\n__attribute__((constructor)) static void early() "
                              '{ std::puts("early"); }\n' + SLOT, "both", ["runs code before main"]),
    "destructor_attribute": (HEAD + "#include <cstdio>\n__attribute__((destructor)) static void late() "
                             '{ std::puts("late"); }\n' + SLOT, "both", ["runs code before main", ".fini_array"]),
    "function_local_static_is_allowed": (HEAD + "#include <vector>\nnamespace scangrade::student { int f() { "
                                         "static std::vector<int> table(1024); return table[0]; } }\n" + SLOT,
                                         "both", []),
    "iostream_init_is_allowed": (HEAD + "#include <iostream>\nnamespace scangrade::student { void f() { "
                                 'std::cout << "hello" << std::endl; } }\n' + SLOT, "both", []),
    # instructions
    "syscall_instruction": (HEAD + "namespace scangrade::student { long f() { long r; "
                            'asm volatile("syscall" : "=a"(r) : "a"(39) : "rcx", "r11", "memory"); return r; } }\n'
                            + SLOT, "both", ["`syscall` in", "system-call instructions"]),
}
EXTRA_FILES = {"include_through_a_student_header": {"detail/io.cuh": "#pragma once\n#include \"scangrade/suite.h\"\n"}}


def _check(tmp_path, case, backend):
    source, backends, pieces = CASES[case]
    files = {"hierarchical.cu": source, **EXTRA_FILES.get(case, {})}
    unit = compile_student(tmp_path, backend, files)
    found = evidence(unit)
    if not pieces:
        assert unit.ok, unit.run.output
        assert unit.violations == [], found
        return
    at = 0
    for piece in pieces:
        where = found.find(piece, at)
        assert where >= 0, f"{piece!r} not in {found!r}"
        at = where + len(piece)


@needs_cxx
@pytest.mark.parametrize("case", sorted(c for c, (_, b, _) in CASES.items() if b in ("both", "emulate")))
def test_rule_on_the_emulation_backend(tmp_path, case):
    _check(tmp_path, case, "emulate")


@needs_nvcc
@pytest.mark.parametrize("case", sorted(c for c, (_, b, _) in CASES.items() if b in ("both", "gpu")))
def test_rule_on_the_gpu_backend(tmp_path, case):
    _check(tmp_path, case, "gpu")


# --- honest code breaks no rule ---------------------------------------------------------------------

SLOT_FILES = ("hillis_steele.cu", "blelloch.cu", "hierarchical.cu", "single_pass.cu")
HONEST = [(entry, f) for entry in sorted(p.name for p in GALLERY.glob("correct_*")) for f in SLOT_FILES] + [
    ("reference", f) for f in SLOT_FILES]


def honest_unit(tmp_path, backend, entry, name):
    student = REPO / "reference" if entry == "reference" else GALLERY / entry / "student"
    unit = build.Unit(f"student/{name}", Path(name), tmp_path / "obj" / f"{Path(name).stem}.o", Path(name).stem)
    build_compile.compile_unit(recipe(backend), unit, student, student, 600)
    assert unit.harness_error is None, unit.harness_error
    assert unit.ok, unit.run.output
    # the reference is the harness's: it defines its functions in scangrade::reference and, emulated, reads
    # the emulator's statistics (scangrade::emu::stats); every other rule holds for it
    return [v for v in unit.violations if not (entry == "reference" and "scangrade::" in v.rule)]


@needs_cxx
@pytest.mark.parametrize("entry, name", HONEST)
def test_honest_code_breaks_no_rule_emulated(tmp_path, entry, name):
    assert honest_unit(tmp_path, "emulate", entry, name) == []


@needs_nvcc
@pytest.mark.parametrize("entry, name", HONEST)
def test_honest_code_breaks_no_rule_with_nvcc(tmp_path, entry, name):
    assert honest_unit(tmp_path, "gpu", entry, name) == []


# --- the pieces, on text ---------------------------------------------------------------------------

def test_rules_file_has_a_reason_for_every_rule():
    import json
    doc = json.loads(policy.RULES_FILE.read_text())
    rows = [r for section in doc.values() if isinstance(section, dict) for key, value in section.items()
            if isinstance(value, list) for r in value if isinstance(r, dict)]
    assert len(rows) > 30
    assert all(r.get("why") and r.get("pattern") for r in rows), [r for r in rows if not r.get("why")]
    policy.Rules.load()   # every pattern compiles


def test_include_tree_judges_direct_includes_and_what_only_a_forbidden_header_reaches():
    cccl = "/usr/local/cuda/include/cccl"
    tree = [". /usr/include/c++/12/iostream", ".. /usr/include/c++/12/bits/gthr.h", "... /usr/include/pthread.h",
            ". /sub/student/helper.cuh", ".. /usr/include/unistd.h", "... /usr/include/x86_64-linux-gnu/bits/types.h",
            f".. {cccl}/thrust/scan.h", f"... {cccl}/thrust/detail/config.h",
            ". /usr/include/dlfcn.h", ". /usr/include/math.h"]
    roots = policy.IncludeRoots((Path("/sub/student"),), (), (), (Path(cccl),))
    sites = {"": policy.IncludeSite("student/hierarchical.cu", '#include "helper.cuh"\n#include <dlfcn.h>\n'),
             "/sub/student/helper.cuh": policy.IncludeSite("student/helper.cuh",
                                                           "#pragma once\n#include <unistd.h>\n#include <thrust/scan.h>\n")}
    found = policy.include_tree_violations(tree, roots, "emulate", sites.get)
    text = "; ".join(v.evidence for v in found)
    # headers are not evidence: system and C headers a student includes by habit or otherwise are allowed
    assert "pthread" not in text and "bits/types.h" not in text and "gthr" not in text
    assert "unistd" not in text and "dlfcn" not in text and "math.h" not in text
    # a scan library is, with the chain; what only it reaches is not judged again
    assert "student/helper.cuh:3 includes <thrust/scan.h> (through student/hierarchical.cu)" in text
    assert "config.h" not in text
    assert len(found) == 1


def test_a_course_can_keep_an_include_allowlist(monkeypatch):
    rules = policy.rules()
    tight = dataclasses.replace(rules, include_direct=(policy.Rule(re.compile("[a-z_0-9]+"), "C++ library", "c++"),),
                                include_otherwise="only the C++ library here")
    monkeypatch.setattr(policy_includes, "rules", lambda: tight)
    assert policy.header_reason("c++", "vector", "gpu") is None
    assert policy.header_reason("system", "math.h", "gpu") == "only the C++ library here"
    assert policy.header_reason("student", "mine.h", "gpu") is None


def test_a_course_can_refuse_definitions_by_name(monkeypatch):
    refusing = dataclasses.replace(policy.rules(), defined_refused=True)
    monkeypatch.setattr(policy, "rules", lambda: refusing)
    symbols = [policy.Symbol("counter", "counter", "D"), policy.Symbol("memcpy", "memcpy", "W"),
               policy.Symbol("_ZSt11scan_helperPi", "std::scan_helper(int*)", "T"),
               policy.Symbol("_ZN9scangrade7student1fEv", "scangrade::student::f()", "T")]
    found = " ".join(v.evidence for v in policy.allowlist_violations(symbols, "gpu"))
    assert "`counter`" in found and "`memcpy`" in found and "std::scan_helper(int*)" in found
    assert "scangrade::student::f()" not in found
    monkeypatch.setattr(policy, "rules", lambda: dataclasses.replace(refusing, defined_refused=False))
    assert policy.allowlist_violations(symbols, "gpu") == []


def test_the_include_tree_is_not_shown_in_the_log():
    output = (". /usr/include/c++/12/vector\n.. /usr/include/c++/12/bits/stl_vector.h\n"
              "student/x.cu:3:5: warning: unused variable 'x'\nMultiple include guards may be useful for:\n"
              "/usr/include/assert.h\n/usr/include/limits.h\n")
    tree, shown = policy.split_include_tree(output)
    assert len(tree) == 2
    assert shown == "student/x.cu:3:5: warning: unused variable 'x'\n"


def test_missing_forbidden_header_is_a_violation():
    found = policy.missing_header_violations(
        "student/hierarchical.cu:4:10: fatal error: cub/device/device_scan.cuh: No such file or directory\n", "emulate")
    assert [v.evidence for v in found] == [
        "student/hierarchical.cu:4 includes <cub/device/device_scan.cuh>: CUB and Thrust (library scans) are not "
        "allowed in this assignment"]
    assert policy.missing_header_violations("x.cu:1:10: fatal error: mine.h: No such file or directory\n",
                                            "emulate") == []


@pytest.mark.parametrize("demangled, key", [
    ("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, "
     "unsigned long)", "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create"),
    ("operator delete(void*, unsigned long)", "operator delete"),
    ("operator new[](unsigned long)", "operator new[]"),
    ("typeinfo for std::runtime_error", "typeinfo for std::runtime_error"),
    ("cudaMalloc(void**, unsigned long)", "cudaMalloc"),
    ("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&)",
     "std::vector<int, std::allocator<int> >::_M_realloc_insert<int>"),
    ("write", "write"),
])
def test_symbol_key(demangled, key):
    assert policy.symbol_key(demangled) == key


def test_allowlists_can_be_turned_off_for_the_sandbox_tests(monkeypatch, tmp_path):
    """SCANGRADE_BUILD_ALLOWLISTS=off leaves only the denylist (the exploit gallery's tests of the sandbox)."""
    import json
    tc = tmp_path / "grading" / "toolchain.json"
    tc.parent.mkdir(parents=True)
    tc.write_text(json.dumps({"nvcc": "/bin/true", "sandbox": "/bin/true"}))
    toolchain = build.read_toolchain(tmp_path)
    assert build.Recipe.from_toolchain(toolchain, "gpu", sandbox="off").allowlists
    monkeypatch.setenv(build.ALLOWLISTS_ENV, "off")
    assert not build.Recipe.from_toolchain(toolchain, "gpu", sandbox="off").allowlists
