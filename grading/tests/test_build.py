"""Compiling submissions: with a fake compiler (always), with the real nvcc (when installed), and with
the real toolchain.json (when `make` has built it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import NVCC, REAL_TOOLCHAIN, REPO, assert_valid, fake_sandbox, load_schema, make_submission, starter_files
from scangrade import build, build_compile, build_tools
from scangrade.build import Recipe, ToolchainError, read_toolchain, stub_source
from scangrade.submission import load_submission
from scangrade.vocab import SLOTS

GOOD = "// compiles\n"


def run_build(sub_path, build_dir, out, backend="gpu", **kw):
    recipe = Recipe.from_toolchain(read_toolchain(build_dir), backend)
    with load_submission(sub_path) as sub:
        assert sub.layout_error is None, sub.layout_error
        result = build.build(sub, recipe, out, **kw)
    doc = json.loads((out / "build.json").read_text())
    assert_build_json_valid(doc)
    return result, doc


def assert_build_json_valid(doc):
    """build.json is exactly results.json's `build` object (the judge copies it)."""
    schema = load_schema("results")
    wrapper = {"$defs": schema["$defs"], **schema["properties"]["build"]}
    assert_valid_with(doc, wrapper)


def assert_valid_with(doc, schema):
    import jsonschema
    jsonschema.Draft202012Validator(schema).validate(doc)


# --- fake compiler ----------------------------------------------------------------------------------

def test_one_slot_with_a_syntax_error(tmp_path, fake_build_dir):
    files = {f"student/{s}.cu": GOOD for s in SLOTS}
    files["student/blelloch.cu"] = "line 1\nline 2\n  int x = 3 SYNTAX_ERROR\n"
    sub = make_submission(tmp_path / "s", files)
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert doc["status"] == "compile_error"
    assert doc["failed_slots"] == ["blelloch"] and doc["missing_slots"] == []
    assert "student/blelloch.cu:3: error" in doc["log"], "nvcc's file(line) is shown as file:line"
    assert result.worker is not None and result.worker.exists()
    stub = (tmp_path / "out" / "stubs" / "blelloch.cu").read_text()
    assert stub.count('not_implemented("blelloch_exclusive")') == 2
    assert "did not compile" in stub


def test_missing_slots_get_stubs(tmp_path, fake_build_dir):
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": GOOD})
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert doc["status"] == "ok"
    assert doc["missing_slots"] == ["blelloch", "hierarchical", "single_pass"]
    assert doc["failed_slots"] == []
    for slot in doc["missing_slots"]:
        assert (tmp_path / "out" / "obj" / "stubs" / f"{slot}.o").exists()
    assert result.worker is not None


def test_failing_helper_fails_every_slot(tmp_path, fake_build_dir):
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": GOOD, "student/blelloch.cu": GOOD,
                                           "student/util.cu": "SYNTAX_ERROR\n"})
    _, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert doc["status"] == "compile_error"
    assert doc["failed_slots"] == ["hillis_steele", "blelloch"]
    assert doc["missing_slots"] == ["hierarchical", "single_pass"]
    assert "helper file did not compile" in doc["log"] and "student/util.cu:1: error" in doc["log"]


def test_link_failure_is_pinned_on_the_slot(tmp_path, fake_build_dir):
    files = {f"student/{s}.cu": GOOD for s in SLOTS}
    files["student/hierarchical.cu"] = "calls a function defined nowhere LINK_FAIL\n"
    sub = make_submission(tmp_path / "s", files)
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert doc["failed_slots"] == ["hierarchical"] and doc["status"] == "compile_error"
    assert "undefined reference" in doc["log"]
    assert result.worker is not None


def test_compiler_timeout(tmp_path, fake_build_dir):
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": GOOD, "student/blelloch.cu": "SLEEP_FOREVER"})
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out", timeout=2)
    assert doc["failed_slots"] == ["blelloch"]
    assert "compiler timed out" in doc["log"]
    assert doc["seconds"] < 60


def test_warnings_counted_and_logged(tmp_path, fake_build_dir):
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": "WARN_HERE\nWARN_HERE\n"})
    _, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert doc["status"] == "ok" and doc["warnings"] == 2
    assert "student/hillis_steele.cu:1:5: warning" in doc["log"]


def test_log_is_trimmed_keeping_first_errors(tmp_path, fake_build_dir):
    noisy = "WARN_HERE\n" * 2000 + "SYNTAX_ERROR\n"
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": GOOD, "student/blelloch.cu": noisy,
                                           "student/hierarchical.cu": "SYNTAX_ERROR\n"})
    _, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert len(doc["log"]) <= build.LOG_CAP + 200
    assert "student/hierarchical.cu:1: error" in doc["log"], "a second file's first error survives the trim"
    assert "trimmed" in doc["log"]


def test_emulate_recipe_rewrites_then_compiles(tmp_path, fake_build_dir):
    sub = make_submission(tmp_path / "s", {f"student/{s}.cu": GOOD for s in SLOTS})
    recipe = Recipe.from_toolchain(read_toolchain(fake_build_dir), "emulate")
    assert recipe.rewrite is not None and recipe.backend == "emulate"
    steps = recipe.compile_steps(tmp_path / "a.cu", tmp_path / "a.o", tmp_path)
    assert steps[0][-2:] == [str(tmp_path / "a.cu"), str(tmp_path / "a.cpp")]
    assert steps[1][-4:] == ["-c", str(tmp_path / "a.cpp"), "-o", str(tmp_path / "a.o")]
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out", backend="emulate")
    assert doc["status"] == "ok" and result.worker is not None
    assert (tmp_path / "out" / "obj" / "student" / "blelloch.cpp").read_text().startswith("// rewritten")


def test_toolchain_errors(tmp_path, fake_build_dir):
    with pytest.raises(ToolchainError, match="run `make` first"):
        read_toolchain(tmp_path / "nowhere")
    with pytest.raises(ToolchainError, match="no CPU emulation backend"):
        Recipe.from_toolchain({"nvcc": "nvcc", "cuda_flags": [], "link": []}, "emulate")
    with pytest.raises(ToolchainError, match="'nvcc'"):
        Recipe.from_toolchain({"cuda_flags": []}, "gpu")


def test_layout_error_build_json(tmp_path):
    result = build.write_layout_error(tmp_path, "the submission is empty")
    doc = json.loads((tmp_path / "build.json").read_text())
    assert_build_json_valid(doc)
    assert doc["status"] == "layout_error" and doc["log"] == "the submission is empty"
    assert result.worker is None


def test_stub_signatures_match_the_contract():
    header = (REPO / "harness" / "include" / "scangrade" / "student_api.h").read_text()
    for slot, (fn, extra) in build.SLOT_FUNCTIONS.items():
        src = stub_source(slot, "test")
        for t in ("std::int32_t", "float"):
            decl = re.search(rf"void {fn}\(const {re.escape(t)}\* d_in, {re.escape(t)}\* d_out, std::size_t n, "
                             rf"(ScanKind kind, )?cudaStream_t stream\);", header)
            assert decl, f"{fn}({t}) not in the contract"
            assert bool(decl.group(1)) == bool(extra)
            assert f"void {fn}(const {t}*, {t}*, std::size_t, {extra}cudaStream_t)" in src


# --- the real nvcc ----------------------------------------------------------------------------------

needs_nvcc = pytest.mark.skipif(not NVCC.exists(), reason=f"nvcc not found at {NVCC} (set SCANGRADE_NVCC)")

MAIN_CU = r"""
#include "scangrade/student_api.h"
#include <cstdio>
using namespace scangrade;
using namespace scangrade::student;
// takes the address of every overload (the link fails if a stub's signature is wrong), then calls
// each slot with n = 0 and reports which ones are not implemented
template <typename F> void probe(const char* name, F f) {
  try { f(); std::printf("%s ok\n", name); } catch (const NotImplemented&) { std::printf("%s not_implemented\n", name); }
}
int main() {
  probe("hillis_steele", [] { hillis_steele_inclusive((const std::int32_t*)nullptr, nullptr, 0, nullptr);
                              hillis_steele_inclusive((const float*)nullptr, nullptr, 0, nullptr); });
  probe("blelloch", [] { blelloch_exclusive((const std::int32_t*)nullptr, nullptr, 0, nullptr);
                         blelloch_exclusive((const float*)nullptr, nullptr, 0, nullptr); });
  probe("hierarchical", [] { hierarchical_scan((const std::int32_t*)nullptr, nullptr, 0, ScanKind::Inclusive, nullptr);
                             hierarchical_scan((const float*)nullptr, nullptr, 0, ScanKind::Exclusive, nullptr); });
  probe("single_pass", [] { single_pass_inclusive((const std::int32_t*)nullptr, nullptr, 0, nullptr);
                            single_pass_inclusive((const float*)nullptr, nullptr, 0, nullptr); });
}
"""

IMPLEMENTED_HS = r"""
#include "scangrade/student_api.h"
namespace scangrade::student {
void hillis_steele_inclusive(const std::int32_t*, std::int32_t*, std::size_t n, cudaStream_t) { if (n) throw 1; }
void hillis_steele_inclusive(const float*, float*, std::size_t n, cudaStream_t) { if (n) throw 1; }
}
"""


@pytest.fixture(scope="module")
def nvcc_build_dir(tmp_path_factory):
    """A toolchain.json for the real nvcc whose link step adds a small main that probes every slot."""
    d = tmp_path_factory.mktemp("nvcc_build")
    flags = ["-std=c++17", "-arch=sm_90", "-I", str(REPO / "harness" / "include")]
    (d / "main.cu").write_text(MAIN_CU)
    r = subprocess.run([str(NVCC), *flags, "-c", str(d / "main.cu"), "-o", str(d / "main.o")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (d / "grading").mkdir()
    (d / "grading" / "toolchain.json").write_text(json.dumps({
        "nvcc": str(NVCC), "cuda_flags": flags, "link": [str(d / "main.o")], "judge": "/bin/false",
        "reference_worker": "/bin/false", "version": "test", "sandbox": str(fake_sandbox(d))}))
    return d


@needs_nvcc
def test_nvcc_syntax_error_and_missing_slots(tmp_path, nvcc_build_dir):
    files = starter_files()
    files["student/hillis_steele.cu"] = IMPLEMENTED_HS
    files["student/blelloch.cu"] = files["student/blelloch.cu"].replace(
        "void blelloch(const T* d_in", "void blelloch(const T* d_in,,")
    del files["student/single_pass.cu"]
    sub = make_submission(tmp_path / "s", files)
    result, doc = run_build(sub, nvcc_build_dir, tmp_path / "out")
    assert doc["status"] == "compile_error"
    assert doc["failed_slots"] == ["blelloch"]
    assert doc["missing_slots"] == ["single_pass"]
    line = next(i for i, l in enumerate(files["student/blelloch.cu"].splitlines(), 1) if ",," in l)
    assert re.search(rf"student/blelloch\.cu:{line}: error", doc["log"]), doc["log"]
    # the worker links: the stubs have the contract's signatures, and report not implemented
    assert result.worker is not None
    run = subprocess.run([str(result.worker)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:4] == ["hillis_steele ok", "blelloch not_implemented",
                                          "hierarchical not_implemented", "single_pass not_implemented"]


# --- the real toolchain.json (written by CMake) ----------------------------------------------------

@pytest.mark.skipif(not REAL_TOOLCHAIN.is_file(),
                    reason=f"{REAL_TOOLCHAIN} not found: the grader is not built (run `make`)")
def test_real_toolchain_builds_the_starter_files(tmp_path):
    sub = make_submission(tmp_path / "s", starter_files())
    backend = "gpu" if "nvcc" in json.loads(REAL_TOOLCHAIN.read_text()) else "emulate"   # SCANGRADE_CUDA=OFF
    result, doc = run_build(sub, REAL_TOOLCHAIN.parent.parent, tmp_path / "out", backend=backend)
    assert doc["status"] == "ok", doc["log"]
    assert doc["failed_slots"] == [] and doc["missing_slots"] == []
    assert result.worker is not None and result.worker.exists()


# --- policy: the gallery's policy entries and known-correct entries, both recipes --------------------

GALLERY = REPO / "grading" / "gallery"
CORRECT_ENTRIES = sorted(p.name for p in GALLERY.glob("correct_*"))
# the entries whose violation the build finds (the others are caught at run time by the worker's monitor)
RUNTIME_POLICY_ENTRIES = {"policy_host_compute_copy", "policy_host_compute_mapped", "policy_host_compute_managed",
                          "policy_two_block_hillis_steele"}
POLICY_ENTRIES = sorted(p.name for p in GALLERY.glob("policy_*") if p.name not in RUNTIME_POLICY_ENTRIES)


def expected_policy(entry: str) -> tuple[str, list[str]]:
    """The slot a policy entry's expected.json charges, and the pieces its evidence must hold (in order)."""
    from scangrade import policy
    spec = json.loads((GALLERY / entry / "expected.json").read_text())
    slots = [s for s, v in spec["verdicts"].items() if v == "policy_violation"]
    assert spec["kind"] == "policy" and len(slots) == 1, spec
    pieces = {
        "policy_thrust_scan": ["student/hierarchical.cu:5 includes <thrust/execution_policy.h>, "
                               "student/hierarchical.cu:6 includes <thrust/scan.h>: " + policy.RULE_LIBRARY],
        "policy_cub_scan": ["student/hierarchical.cu:5 includes <cub/device/device_scan.cuh>: " + policy.RULE_LIBRARY],
        "policy_defines_cuda_malloc": ["student/alloc_hooks.cu (a helper file linked with every slot): it defines `cudaFree",
                                       "`cudaMalloc", ": " + policy.RULE_RUNTIME],
        "policy_defines_harness_symbol": ["it defines `scangrade::", "tracked_device_bytes()", ": " + policy.RULE_HARNESS],
        "policy_defines_main": ["it defines `main`: " + policy.RULE_MAIN],
        "policy_defines_instrumentation_hook": ["it defines `__tsan_init", ": " + policy.RULE_INSTRUMENTATION],
        "policy_calls_reference": ["it uses `scangrade::reference::hierarchical_scan(",
                                   "which belong to the reference solution / harness: they are not linked into your "
                                   "program"],
    }[entry]
    return slots[0], pieces


def assert_policy_build(doc: dict, entry: str) -> None:
    slot, pieces = expected_policy(entry)
    assert doc["status"] == "ok", doc["log"]
    assert doc["failed_slots"] == []
    assert list(doc["policy_violations"]) == [slot], doc["policy_violations"]
    evidence = doc["policy_violations"][slot]
    at = 0
    for piece in pieces:
        found = evidence.find(piece, at)
        assert found >= 0, f"{piece!r} not in {evidence!r}"
        at = found + len(piece)
    if entry == "policy_defines_harness_symbol":
        assert "bytes_in_use()" in evidence and "pool_bytes_in_use()" in evidence
    assert "breaks a rule of the assignment (not linked)" in doc["log"]


def gallery_submission(tmp_path, entry):
    import shutil
    root = tmp_path / entry
    shutil.copytree(GALLERY / entry / "student", root / "student")
    return root


emulate_toolchain = pytest.mark.skipif(
    not REAL_TOOLCHAIN.is_file() or "emulate" not in json.loads(REAL_TOOLCHAIN.read_text()),
    reason="the real toolchain.json with the emulation backend is not built (run `make`)")


@emulate_toolchain
@pytest.mark.parametrize("entry", POLICY_ENTRIES)
def test_emulate_policy_entries_get_their_evidence(tmp_path, entry):
    result, doc = run_build(gallery_submission(tmp_path, entry), REAL_TOOLCHAIN.parent.parent, tmp_path / "out",
                            backend="emulate", jobs=2)
    assert_policy_build(doc, entry)
    slot, _ = expected_policy(entry)
    stub = (tmp_path / "out" / "stubs" / f"{slot}.cu").read_text()
    assert "breaks a rule of the assignment" in stub, "the violating slot is linked as a stub"
    assert result.worker is not None and result.worker.exists()


@emulate_toolchain
@pytest.mark.parametrize("entry", CORRECT_ENTRIES)
def test_emulate_correct_entries_break_no_rule(tmp_path, entry):
    _, doc = run_build(gallery_submission(tmp_path, entry), REAL_TOOLCHAIN.parent.parent, tmp_path / "out",
                       backend="emulate", jobs=2)
    assert doc["status"] == "ok" and doc["policy_violations"] == {}, doc


INTERPOSERS = sorted(p.name for p in GALLERY.glob("exploit_interposes_*_library_symbols")) + [
    "exploit_interposes_by_asm_label"]
HOOKED = ("memcpy", "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_appendEPKcm")


def defined_symbols(binary) -> dict[str, set[str]]:
    """nm's type letters of each name the binary defines (T global, t local, W weak, i ifunc...)."""
    out = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    found: dict[str, set[str]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            found.setdefault(parts[2], set()).add(parts[1])
    return found


def test_the_interposition_entries_are_three():
    assert len(INTERPOSERS) == 3 and all((GALLERY / e).is_dir() for e in INTERPOSERS), INTERPOSERS


@emulate_toolchain
@pytest.mark.parametrize("entry", INTERPOSERS)
def test_emulate_student_definitions_of_library_names_are_local(tmp_path, entry):
    """A student's memcpy or std::string member (weak, strong, alias, assembler label, ifunc) is
    linked as a local symbol: it cannot bind the worker's or the libraries' calls."""
    result, doc = run_build(gallery_submission(tmp_path, entry), REAL_TOOLCHAIN.parent.parent, tmp_path / "out",
                            backend="emulate", jobs=2)
    assert doc["status"] == "ok" and doc["policy_violations"] == {}, doc
    symbols = defined_symbols(result.worker)
    for name in HOOKED:
        assert symbols.get(name) and symbols[name] <= {"t", "i"}, (name, symbols.get(name))
    assert symbols["_ZN9scangrade7student17hierarchical_scanEPKfPfmNS_8ScanKindEP11CUstream_st"] == {"T"}


TO_STRING_SLOT = r"""
#include <string>
#include "scangrade/student_api.h"
namespace scangrade::student {
namespace { std::string label(unsigned n) { return "n=" + std::to_string(n); } }
void hillis_steele_inclusive(const std::int32_t*, std::int32_t*, std::size_t n, cudaStream_t) {
  if (label(static_cast<unsigned>(n)).empty()) throw 1;
}
void hillis_steele_inclusive(const float*, float*, std::size_t n, cudaStream_t) {
  if (label(static_cast<unsigned>(n)).empty()) throw 1;
}
}
"""


@emulate_toolchain
def test_emulate_a_unique_symbol_the_worker_also_has_links(tmp_path):
    """std::to_string's digit table is a GNU unique symbol (nm `u`) in the student's object and in the
    worker's: the join makes the student's copy local instead of a second definition."""
    files = starter_files()
    files["student/hillis_steele.cu"] = TO_STRING_SLOT
    result, doc = run_build(make_submission(tmp_path / "s", files), REAL_TOOLCHAIN.parent.parent, tmp_path / "out",
                            backend="emulate", jobs=2)
    assert doc["status"] == "ok" and doc["failed_slots"] == [], doc["log"]
    kinds = defined_symbols(result.worker)["_ZZNSt8__detail18__to_chars_10_implIjEEvPcjT_E8__digits"]
    assert "r" in kinds, kinds


@needs_nvcc
@pytest.mark.parametrize("entry", INTERPOSERS)
def test_nvcc_student_definitions_of_library_names_bind_nothing_outside(tmp_path, nvcc_build_dir, entry):
    """Each hook traps when called: the worker (its main, the C and C++ libraries) runs undisturbed."""
    result, doc = run_build(gallery_submission(tmp_path, entry), nvcc_build_dir, tmp_path / "out", jobs=2)
    assert doc["status"] == "ok" and doc["policy_violations"] == {}, doc
    run = subprocess.run([str(result.worker)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == ["hillis_steele not_implemented", "blelloch not_implemented",
                                       "hierarchical ok", "single_pass not_implemented"], run.stdout


@needs_nvcc
@pytest.mark.parametrize("entry", POLICY_ENTRIES)
def test_nvcc_policy_entries_get_their_evidence(tmp_path, nvcc_build_dir, entry):
    result, doc = run_build(gallery_submission(tmp_path, entry), nvcc_build_dir, tmp_path / "out", jobs=2)
    assert result.harness_errors == []
    assert_policy_build(doc, entry)
    # the worker links (the helper's cudaMalloc is not in it) and the violating slot is a stub
    run = subprocess.run([str(result.worker)], capture_output=True, text=True, timeout=60)
    slot, _ = expected_policy(entry)
    assert f"{slot} not_implemented" in run.stdout.splitlines(), run.stdout + run.stderr


@needs_nvcc
@pytest.mark.parametrize("entry", CORRECT_ENTRIES)
def test_nvcc_correct_entries_break_no_rule(tmp_path, nvcc_build_dir, entry):
    _, doc = run_build(gallery_submission(tmp_path, entry), nvcc_build_dir, tmp_path / "out", jobs=2)
    assert doc["status"] == "ok" and doc["policy_violations"] == {}, doc


def test_policy_violation_is_not_a_failed_slot_and_a_helper_charges_every_slot(tmp_path, fake_build_dir):
    files = {f"student/{s}.cu": GOOD for s in SLOTS}
    files["student/blelloch.cu"] = "#include <thrust/scan.h>\n  SYNTAX_ERROR\n"   # policy wins over the error
    sub = make_submission(tmp_path / "s", files)
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert doc["status"] == "ok" and doc["failed_slots"] == []
    assert doc["policy_violations"] == {"blelloch": "student/blelloch.cu:1 includes <thrust/scan.h>: CUB and Thrust "
                                                    "(and other library scans) are not allowed in this assignment"}
    assert result.worker is not None
    files["student/util.cu"] = "// a helper\n#include <cub/cub.cuh>\n"
    files["student/blelloch.cu"] = "  SYNTAX_ERROR\n"
    sub = make_submission(tmp_path / "s2", files)
    _, doc = run_build(sub, fake_build_dir, tmp_path / "out2")
    assert doc["status"] == "ok", "every slot present is charged the helper's violation, none failed"
    assert sorted(doc["policy_violations"]) == sorted(SLOTS)
    assert all(v.startswith("student/util.cu (a helper file linked with every slot): student/util.cu:2 includes "
                            "<cub/cub.cuh>") for v in doc["policy_violations"].values())


def _fake_nm(tmp_path, failures: int):
    """An nm that fails silently `failures` times, then lists one defined symbol."""
    count = tmp_path / "nm-calls"
    nm = tmp_path / "nm"
    nm.write_text("#!/bin/sh\n"
                  f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}\n"
                  f"[ \"$n\" -lt {failures} ] && exit 1\n"
                  "echo '0000000000000000 T _ZN9scangrade7student11scan_helperEv'\n")
    nm.chmod(0o755)
    obj = tmp_path / "slot.o"
    obj.write_bytes(b"\x7fELF" + bytes(60))
    recipe = Recipe(backend="emulate", compiler=("g++",), flags=(), linker=("g++",), link=(), nm=str(nm),
                    readelf="/bin/true", objdump="/bin/true")
    return recipe, obj, count


def test_scan_object_reads_an_object_whose_first_nm_failed(tmp_path):
    recipe, obj, count = _fake_nm(tmp_path, failures=1)
    assert build.scan_object(recipe, obj, tmp_path, 30) == []
    assert count.read_text().strip() == "3"  # the failed read, its retry, the demangled listing


def test_scan_object_names_the_status_when_nm_fails_twice(tmp_path):
    recipe, obj, _ = _fake_nm(tmp_path, failures=2)
    with pytest.raises(ToolchainError, match=r"nm could not read slot\.o \(exit status 1, twice\)"):
        build.scan_object(recipe, obj, tmp_path, 30)


def test_a_stub_that_failed_silently_once_is_compiled_again(tmp_path, fake_build_dir):
    """A generated stub always compiles; one failed, with no output, on a loaded machine (make check,
    2026-11-23). It is compiled once more before the build is called broken."""
    toolchain_path = fake_build_dir / "grading" / "toolchain.json"
    toolchain = json.loads(toolchain_path.read_text())
    flaky = tmp_path / "tools" / "flakycc"
    flaky.write_text("#!/bin/sh\n"
                     "for a in \"$@\"; do case \"$a\" in */stubs/*.cu)\n"
                     f"  mark={tmp_path}/failed-once-$(basename \"$a\")\n"
                     "  [ -e \"$mark\" ] || { touch \"$mark\"; exit 1; };; esac; done\n"
                     f"exec {toolchain['nvcc']} \"$@\"\n")
    flaky.chmod(0o755)
    toolchain["nvcc"] = str(flaky)
    toolchain_path.write_text(json.dumps(toolchain))
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": GOOD})
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.glob("failed-once-*")) == ["failed-once-blelloch.cu",
                                                                      "failed-once-hierarchical.cu",
                                                                      "failed-once-single_pass.cu"]
    assert doc["status"] == "ok" and result.harness_errors == []
    assert result.worker is not None


def test_a_compile_killed_from_outside_is_run_again(tmp_path, fake_build_dir):
    """A compiler killed by SIGKILL (the out-of-memory killer under a batch's load) is not the
    student's compile error: the file is compiled once more."""
    toolchain_path = fake_build_dir / "grading" / "toolchain.json"
    toolchain = json.loads(toolchain_path.read_text())
    killed = tmp_path / "tools" / "killedcc"
    killed.write_text("#!/bin/sh\n"
                      "for a in \"$@\"; do case \"$a\" in */student/hillis_steele.cu|student/hillis_steele.cu)\n"
                      f"  [ -e {tmp_path}/killed-once ] || {{ touch {tmp_path}/killed-once; kill -9 $$; }};; esac; done\n"
                      f"exec {toolchain['nvcc']} \"$@\"\n")
    killed.chmod(0o755)
    toolchain["nvcc"] = str(killed)
    toolchain_path.write_text(json.dumps(toolchain))
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": GOOD})
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out")
    assert (tmp_path / "killed-once").exists(), "the fake compiler never ran on the slot file"
    assert doc["status"] == "ok" and doc["failed_slots"] == [], doc["log"]
    assert result.worker is not None


def test_scan_object_does_not_read_again_after_a_timeout(tmp_path, monkeypatch):
    recipe, obj, _ = _fake_nm(tmp_path, failures=0)
    calls = []

    def timed_out(cmd, *args, **kw):
        calls.append(cmd)
        return build.Run(None, "", 30.0)

    monkeypatch.setattr(build_tools, "run_tool", timed_out)
    with pytest.raises(ToolchainError, match=r"nm could not read slot\.o \(timed out after 30 s\)"):
        build.scan_object(recipe, obj, tmp_path, 30)
    assert len(calls) == 1, "a read that timed out is not tried again (it would spend the time twice)"


def test_a_stub_that_timed_out_is_not_compiled_again(tmp_path, fake_build_dir, monkeypatch):
    """A timed-out stub compile is not tried again (that would only spend the submission's time twice)."""
    compiled = []
    real = build_compile.compile_unit

    def stubs_time_out(recipe, unit, *args):
        if not unit.stub:
            return real(recipe, unit, *args)
        compiled.append(unit.display)
        unit.run = build.Run(None, "compiler timed out\n", 1.0)
        return unit

    monkeypatch.setattr(build_compile, "compile_unit", stubs_time_out)
    sub = make_submission(tmp_path / "s", {f"student/{s}.cu": GOOD for s in SLOTS if s != "blelloch"})
    result, _ = run_build(sub, fake_build_dir, tmp_path / "out")
    assert result.harness_errors, "a stub that never compiles is a broken toolchain"
    assert len(compiled) == 1, compiled


# --- the compile budget and the cap on helper files ------------------------------------------------

def test_a_spent_compile_budget_names_the_budget(tmp_path, fake_build_dir):
    """No time left: no student file is compiled, each says why; the generated stubs still are."""
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": GOOD, "student/blelloch.cu": GOOD})
    result, doc = run_build(sub, fake_build_dir, tmp_path / "out", budget_s=0)
    assert doc["status"] == "compile_error"
    assert doc["failed_slots"] == ["hillis_steele", "blelloch"]
    assert doc["log"].count("not compiled: the submission's compile budget (0 s for all its files together) "
                            "was spent") == 2, doc["log"]
    assert result.worker is not None, "the stubs are not charged to the submission's budget"


def test_a_compile_stopped_by_the_budget_names_the_budget(tmp_path, fake_build_dir):
    """A compile that the budget (not the per-file timeout) stops says so."""
    sub = make_submission(tmp_path / "s", {"student/hillis_steele.cu": "SLEEP_FOREVER\n"})
    _, doc = run_build(sub, fake_build_dir, tmp_path / "out", budget_s=1)
    assert doc["failed_slots"] == ["hillis_steele"]
    assert "compile budget (1 s for all its files together) was spent" in doc["log"], doc["log"]


def test_too_many_helper_files(tmp_path, fake_build_dir):
    files = {"student/hillis_steele.cu": GOOD, **{f"student/util{i}.cu": GOOD for i in range(3)}}
    sub = make_submission(tmp_path / "s", files)
    _, doc = run_build(sub, fake_build_dir, tmp_path / "out", max_helpers=2)
    assert doc["status"] == "compile_error" and doc["failed_slots"] == ["hillis_steele"]
    assert ("not compiled: student/ has 3 helper .cu files besides the slot files; at most 2 are compiled: "
            "merge some of them") in doc["log"], doc["log"]
    _, doc = run_build(sub, fake_build_dir, tmp_path / "out2", max_helpers=3)
    assert doc["status"] == "ok"


def test_budget_and_cap_defaults_come_from_the_rules_file():
    rules = json.loads((REPO / "grading" / "policy_rules.json").read_text())["budget"]
    assert build.COMPILE_BUDGET_S == rules["compile_budget_s"] >= 2 * build.COMPILE_TIMEOUT_S
    assert build.MAX_HELPER_FILES == rules["max_helper_files"] == 16


# --- the build-time exploit entries: refused before anything runs, on both backends -----------------

# the exploit entries of the policy kind that the build refuses (the ones whose evidence is taken at run
# time, "evidence": "run time", reach the worker's monitor: test_gallery and the gallery check them)
BUILD_TIME_EXPLOITS = sorted(p.name for p in GALLERY.glob("exploit_*")
                             if json.loads((p / "expected.json").read_text()).get("kind") == "policy"
                             and json.loads((p / "expected.json").read_text()).get("evidence") != "run time")


def assert_refused(doc: dict, entry: str, backend: str) -> None:
    spec = json.loads((GALLERY / entry / "expected.json").read_text())
    hints = {**spec.get("hints", {}), **(spec.get("emulation_hints", {}) if backend == "emulate" else {})}
    assert doc["status"] == "ok", doc["log"]
    assert list(doc["policy_violations"]) == ["hierarchical"], doc
    assert hints["hierarchical"] in doc["policy_violations"]["hierarchical"], doc["policy_violations"]


def test_build_time_exploit_entries_are_the_policy_kind():
    assert len(BUILD_TIME_EXPLOITS) == 8, BUILD_TIME_EXPLOITS


@emulate_toolchain
@pytest.mark.parametrize("entry", BUILD_TIME_EXPLOITS)
def test_emulate_build_time_exploits_are_refused(tmp_path, entry):
    result, doc = run_build(gallery_submission(tmp_path, entry), REAL_TOOLCHAIN.parent.parent, tmp_path / "out",
                            backend="emulate", jobs=2)
    assert_refused(doc, entry, "emulate")
    assert result.worker is not None


@needs_nvcc
@pytest.mark.parametrize("entry", [e for e in BUILD_TIME_EXPLOITS if e != "exploit_calls_emulator_trace"])
def test_nvcc_build_time_exploits_are_refused(tmp_path, nvcc_build_dir, entry):
    result, doc = run_build(gallery_submission(tmp_path, entry), nvcc_build_dir, tmp_path / "out", jobs=2)
    assert result.harness_errors == []
    assert_refused(doc, entry, "gpu")


def test_a_folder_the_sandbox_uid_cannot_enter_is_named():
    """As root without bubblewrap's namespaces, student commands run as uid 65534 on the real
    filesystem: a project under a 0700 folder (root's home) would fail every compile, stubs too, and
    read as a broken toolchain. The grader names the folder instead (build_tools.check_reachable)."""
    import tempfile
    from scangrade.build_tools import blocked_folder
    with tempfile.TemporaryDirectory(dir="/tmp") as top:   # pytest's own tmp_path sits under a 0700 folder
        os.chmod(top, 0o755)
        check_blocked_folder(Path(top) / "home", blocked_folder)


def check_blocked_folder(home: Path, blocked_folder) -> None:
    (home / "project" / "build").mkdir(parents=True)
    home.chmod(0o700)
    nobody = 65534
    if os.stat(home).st_uid == nobody:
        pytest.skip("this test's files belong to uid 65534 itself")
    assert blocked_folder(nobody, [home / "project" / "build"]) == home
    home.chmod(0o711)     # passing through is enough: nothing needs to list it
    assert blocked_folder(nobody, [home / "project" / "build"]) is None
    if os.getuid() == 0:  # the group's bit counts when the folder's group is the uid's number
        os.chown(home, 0, nobody)
        home.chmod(0o710)
        assert blocked_folder(nobody, [home / "project"]) is None
