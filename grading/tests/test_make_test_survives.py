"""`make test` (tools/student_test.py, harness/tests/kernel_tests.cpp) survives whatever a slot does
(issue 39, item 5): a slot that exits, aborts, throws, faults or hangs when called with n = 0 (the
not-implemented probe's call, and the suite's n = 0 cases) is graded with a status, and the other slots
are still graded and summed up; a kernel's printf reaches a pipe; a slot that prints a CUDA error and
calls exit(1) is told so with its own message; no message names a grader path.

One emulated build folder for the module (about a minute), configured on a temporary student/ that each
test fills with the correct_kogge_stone gallery entry and one changed hillis_steele slot; each run then
rebuilds that file only. The suite is a few public cases per slot and type (n = 0 and a small n)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_BUILD, REPO

GOOD = REPO / "grading" / "gallery" / "correct_kogge_stone" / "student"
SLOTS = ("hillis_steele", "blelloch", "hierarchical", "single_pass")
# what the n = 0 case of each behaviour is (the emulated case runs in a forked child)
STATUS = {"exit": "crash", "abort": "crash", "throw": "crash", "segfault": "crash", "hang": "timeout"}

# what hillis_steele does when called with n = 0, in place of the correct file's `return`
AT_N0 = {
    "exit": 'std::fprintf(stderr, "CUDA error\\n");\n    std::exit(1);',
    "abort": "std::abort();",
    "throw": 'throw std::runtime_error("n is zero");',
    "segfault": "volatile int* volatile p = nullptr;\n    *p = 1;",
    "hang": "volatile bool spin = true;\n    while (spin) {\n    }",
}

needs_emulation = pytest.mark.skipif(
    not shutil.which("cmake") or "SCANGRADE_EMULATION:BOOL=ON" not in
    ((REAL_BUILD / "CMakeCache.txt").read_text() if (REAL_BUILD / "CMakeCache.txt").is_file() else ""),
    reason="needs CMake and a build folder with the CPU emulation backend (SCANGRADE_BUILD_DIR)")


def hillis_steele(at_n0: str = "return;", kernel_printf: bool = False) -> str:
    """The correct_kogge_stone slot with `at_n0` run when n == 0 (and a printf in its kernel)."""
    text = (GOOD / "hillis_steele.cu").read_text()
    text = text.replace('#include "kogge_stone.cuh"',
                        '#include <cstdio>\n#include <cstdlib>\n#include <stdexcept>\n\n#include "kogge_stone.cuh"')
    assert "  if (n == 0) return;\n" in text
    text = text.replace("  if (n == 0) return;\n", "  if (n == 0) {\n    " + at_n0 + "\n  }\n")
    if kernel_printf:
        text = text.replace("  const unsigned t = threadIdx.x;\n",
                            "  const unsigned t = threadIdx.x;\n"
                            '  if (t == 0) printf("kernel printf: block %d scans %d elements\\n", (int)blockIdx.x, '
                            "(int)n);\n")
        assert "kernel printf" in text
    return text


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    """A folder with student/, a small suite and a build folder configured on them (emulated only)."""
    root = tmp_path_factory.mktemp("make_test")
    (root / "student").mkdir()
    for f in GOOD.iterdir():
        shutil.copy(f, root / "student" / f.name)
    public = json.loads((REPO / "testcases" / "public.json").read_text())
    picked, seen = [], set()
    for c in public["cases"]:
        key = (c["slot"], c["dtype"], c["n"] == 0)
        if c["n"] <= 2048 and key not in seen:
            seen.add(key)
            picked.append(c)
    (root / "suite.json").write_text(json.dumps({**public, "cases": picked}))
    run = subprocess.run(["cmake", "-S", str(REPO), "-B", str(root / "build"), "-DSCANGRADE_CUDA=OFF",
                          "-DSCANGRADE_BUILD_TESTS=OFF", f"-DSCANGRADE_STUDENT_DIR={root / 'student'}"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return root


def make_test(root: Path, slot_text: str) -> tuple[int, str, str]:
    """`make test` on student/ with hillis_steele.cu replaced: its exit status, stdout and stderr, both
    read through pipes (as `make test | less` or CI reads them)."""
    (root / "student" / "hillis_steele.cu").write_text(slot_text)
    run = subprocess.run([sys.executable, str(REPO / "tools" / "student_test.py"), "--build", str(root / "build"),
                          "--backend", "emulate", "--suite", str(root / "suite.json"), "--jobs", "2"],
                         cwd=root, capture_output=True, text=True, timeout=900)
    return run.returncode, run.stdout, run.stderr


def summary_rows(out: str) -> dict[str, str]:
    """The summary's row of each slot (the text after the slot's name)."""
    assert "ScanGrade summary:" in out, out[-4000:]
    rows = {}
    for line in out.split("ScanGrade summary:", 1)[1].splitlines():
        words = line.split(None, 1)
        if len(words) == 2 and words[0] in SLOTS:
            rows[words[0]] = words[1]
    return rows


def assert_no_grader_path(text: str, root: Path) -> None:
    for path in (str(REPO), str(root), str(REAL_BUILD), "/usr/include", "harness/"):
        assert path not in text, f"{path} is named in:\n{text[-4000:]}"


@needs_emulation
@pytest.mark.parametrize("behaviour", sorted(AT_N0))
def test_a_slot_that_misbehaves_at_n0_is_graded_and_the_others_too(handout, behaviour):
    rc, out, err = make_test(handout, hillis_steele(AT_N0[behaviour]))
    rows = summary_rows(out)
    assert set(rows) == set(SLOTS), out[-4000:]
    # the probe said "implemented": the slot's cases ran, n = 0 got a status, the small case passed
    assert "NOT IMPLEMENTED" not in rows["hillis_steele"], rows
    status = STATUS[behaviour]
    assert re.fullmatch(rf"1/2 passed, 1 {status}\s+1/2 passed, 1 {status}", rows["hillis_steele"]), rows
    for slot in SLOTS[1:]:
        assert re.fullmatch(r"(\d+)/\1 passed\s+(\d+)/\2 passed", rows[slot]), rows
    assert rc == 1, out[-4000:]
    # the n = 0 case's block, with its status word first
    assert f"\n{status}: hillis_steele.int32.n0." in out, out[-4000:]
    assert "within 0 s" not in out, out  # a timeout names the case's whole deadline, not what was left of it
    assert_no_grader_path(out + err, handout)


@needs_emulation
def test_exit_on_a_cuda_error_says_so_with_the_students_message(handout):
    rc, out, err = make_test(handout, hillis_steele(AT_N0["exit"]))
    first = out[out.index("crash: hillis_steele.int32.n0"):]
    message = " ".join(first[:first.index("\n\n")].split())
    assert "the slot called exit(1)" in message, message
    assert "it wrote on stderr: CUDA error" in message, message
    # the message quotes it: not printed a second time
    assert "CUDA error" not in err, err


@needs_emulation
def test_a_kernel_printf_reaches_a_pipe_in_order(handout):
    rc, out, err = make_test(handout, hillis_steele(kernel_printf=True))
    assert rc == 0, out[-4000:] + err[-2000:]
    lines = out.splitlines()
    printed = [i for i, line in enumerate(lines) if line.startswith("kernel printf: block 0 scans ")]
    assert printed, out
    # after the slot's "testing" line, before the next slot's (each case's output when its result is in)
    start = next(i for i, line in enumerate(lines) if line.startswith("testing hillis_steele (int32)"))
    after = next(i for i, line in enumerate(lines) if line.startswith("testing blelloch"))
    assert all(start < i < after for i in printed), out
    summary = next(i for i, line in enumerate(lines) if line.startswith("ScanGrade summary"))
    assert max(printed) < summary
    assert_no_grader_path(out + err, handout)
