"""make test's driver (tools/student_test.py) runs the grader's build-time policy on what make built: a
student file that breaks a rule is reported with the grader's own message and its slot is handed to the
test program as a policy violation (0 points), a clean file is not, and a scan that cannot run is a note,
never a crash. Objects are compiled here with g++ (a few hundred milliseconds); no CMake build."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import student_test   # tools/, on the path by pytest.ini
from scangrade.submission import load_submission

PROGRAM = "scangrade_student_test_emu"

# a slot that starts a process (the 'undefined' allowlist refuses fork) and one that breaks no rule
FORKS = """\
#include <unistd.h>
namespace scangrade::student {
int spawn() { return fork(); }
}  // namespace scangrade::student
"""
CLEAN = """\
namespace scangrade::student {
int twice(int x) { return 2 * x; }
}  // namespace scangrade::student
"""

needs_tools = pytest.mark.skipif(not all(shutil.which(t) for t in ("g++", "nm", "readelf", "objdump")),
                                 reason="compiles objects with g++ and reads them with binutils")


def compile_object(source: Path, obj: Path) -> Path:
    obj.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["g++", "-std=c++17", "-O2", "-x", "c++", "-c", str(source), "-o", str(obj)], check=True)
    return obj


def emulated_object(build: Path, student: Path, name: str) -> Path:
    """Where the handout's CMake build puts the emulated object of student/<name>.cu."""
    digest = hashlib.md5(str(student).encode()).hexdigest()[:8]
    return (build / "CMakeFiles" / f"{PROGRAM}.dir" / "emulated" / PROGRAM / f"{name}.{digest}"
            / f"{name}.cpp.o")


@pytest.fixture
def built(tmp_path):
    """student/ with a slot that calls fork and a clean one, and a build folder holding their objects
    where make puts them."""
    root = tmp_path / "handout"
    student = root / "student"
    student.mkdir(parents=True)
    (student / "hillis_steele.cu").write_text(FORKS)
    (student / "blelloch.cu").write_text(CLEAN)
    build = root / "build"
    for name in ("hillis_steele", "blelloch"):
        compile_object(student / f"{name}.cu", emulated_object(build, student, name))
    return root, student, build


@needs_tools
def test_a_forbidden_call_is_the_graders_violation_and_a_clean_file_has_none(built):
    root, student, build = built
    files = [student_test.PolicyFile(name, student / f"{name}.cu",
                                     student_test.build_objects(build, student, name, PROGRAM, cuda=False))
             for name in ("hillis_steele", "blelloch")]
    assert [f.objects for f in files] == [[("emulate", emulated_object(build, student, n))]
                                          for n in ("hillis_steele", "blelloch")]
    found, notes = student_test.policy_findings(files, root, student)
    assert notes == []
    assert set(found) == {"hillis_steele"}, found
    [violation] = found["hillis_steele"]
    assert "`fork`" in violation.evidence and violation.rule in violation.evidence, violation
    # the judge's message (grading/judge/functional.cpp) with the grader's own evidence (build._Verdicts)
    messages, helper = student_test.policy_verdicts(found, ["hillis_steele", "blelloch"])
    assert helper is None
    assert messages == {"hillis_steele": f"student/hillis_steele.cu breaks a rule of the assignment: "
                                         f"{violation.evidence}"}


@needs_tools
def test_make_tests_path_reports_the_finding_and_hands_the_slot_to_the_test_program(built, tmp_path, capsys):
    root, student, build = built
    sub = load_submission(student)
    messages, violating, helper = student_test.check_policy(build, sub, student, PROGRAM, False, "", {})
    assert violating == {"hillis_steele"} and helper is None and set(messages) == {"hillis_steele"}
    out = capsys.readouterr().out
    assert "policy violation in student/hillis_steele.cu: the grader does not link it" in out, out
    assert "scores 0 (policy_violation)" in out and "`fork`" in out and "blelloch" not in out, out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    # the test program is told, one slot a line (the message may hold ';'), beside the compile errors
    dump = tmp_path / "env.txt"
    program = tmp_path / "fake_test_program"
    program.write_text(f"#!{sys.executable}\nimport os\nopen({str(dump)!r}, 'w').write("
                       "os.environ['SCANGRADE_POLICY_VIOLATIONS'] + '\\0' + os.environ['SCANGRADE_COMPILE_ERRORS'])\n")
    program.chmod(0o755)
    args = student_test.argparse.Namespace(jobs=1, suite=None, gtest=[])
    rc = student_test.run_tests(program, args, {"blelloch": "it does not compile"}, messages)
    assert rc == student_test.EXIT_FAILED, "a slot that breaks a rule fails make test even when every case passed"
    assert dump.read_text() == f"hillis_steele={messages['hillis_steele']}\0blelloch=it does not compile"


@needs_tools
def test_a_helper_breaks_every_slot_present(built, capsys):
    root, student, build = built
    (student / "scan_helpers.cu").write_text("#include <thrust/scan.h>\n" + CLEAN.replace("twice", "thrice"))
    sub = load_submission(student)
    messages, violating, helper = student_test.check_policy(build, sub, student, PROGRAM, False, "", {})
    assert violating == {"hillis_steele", "scan_helpers"}
    assert helper.startswith("student/scan_helpers.cu (a helper file linked with every slot): "
                             "student/scan_helpers.cu:1 includes <thrust/scan.h>: "), helper
    # its own violation for the slot that has one, the helper's for the other slot present
    assert "`fork`" in messages["hillis_steele"]
    assert messages["blelloch"] == f"student/blelloch.cu breaks a rule of the assignment: {helper}"
    out = capsys.readouterr().out
    flat = " ".join(out.split())   # wrapped at 80 columns
    assert "policy violation in student/scan_helpers.cu, a helper file linked with every slot" in flat, out
    assert all(len(line) <= 80 for line in out.splitlines()), out


@needs_tools
def test_a_failed_compile_is_scanned_for_its_missing_header_not_its_old_object(built, capsys):
    """A compile that stopped at a forbidden header is the grader's violation (not a compile error); the
    object left from an earlier build of that file is not scanned."""
    root, student, build = built
    # an object left from an earlier build of blelloch.cu, one that calls fork
    compile_object(student / "hillis_steele.cu", emulated_object(build, student, "blelloch"))
    output = ("In file included from student/blelloch.cu:1:\n"
              "student/scan.cuh:2:10: fatal error: cub/device/device_scan.cuh: No such file or directory\n"
              "gmake[2]: *** [CMakeFiles/scangrade_student_test_emu.dir/build.make:90: CMakeFiles/scangrade_student_"
              "test_emu.dir/emulated/scangrade_student_test_emu/blelloch.35d701a8/blelloch.cpp.o] Error 1\n")
    assert student_test.fatal_errors(output, "blelloch").startswith("student/scan.cuh:2:10: fatal error:")
    assert student_test.fatal_errors(output, "hillis_steele") == ""
    messages, violating, _ = student_test.check_policy(build, load_submission(student), student, PROGRAM, False,
                                                       output, {})
    assert violating == {"hillis_steele", "blelloch"}
    assert "student/scan.cuh:2 includes <cub/device/device_scan.cuh>" in messages["blelloch"], messages
    assert "fork" not in messages["blelloch"], messages
    # ... and it is not also a compile error: only the violating files broke the build
    assert student_test.compile_errors(output, {}, violating) == ({}, None)


@needs_tools
def test_a_scan_that_cannot_run_is_a_note(built, monkeypatch, capsys):
    root, student, build = built
    monkeypatch.setattr(student_test.shutil, "which", lambda tool, *a, **k: None)
    found, notes = student_test.policy_findings(
        [student_test.PolicyFile("hillis_steele", student / "hillis_steele.cu",
                                 [("emulate", emulated_object(build, student, "hillis_steele"))])], root, student)
    assert found == {} and len(notes) == 1 and notes[0].startswith("nm, readelf, objdump not found"), notes
    # a policy that fails in any other way is a note too, and make test goes on without it
    monkeypatch.setattr(student_test, "policy_findings", lambda *a: 1 / 0)
    assert student_test.check_policy(build, load_submission(student), student, PROGRAM, False, "", {}) == \
        ({}, set(), None)
    assert capsys.readouterr().out.startswith("note: the grader's policy scans failed (ZeroDivisionError")


NVCC = Path(os.environ.get("SCANGRADE_NVCC", "/usr/local/cuda/bin/nvcc"))


@needs_tools
@pytest.mark.skipif(not NVCC.is_file(), reason="needs nvcc (the CUDA toolkit)")
def test_an_nvcc_object_is_scanned_as_the_gpu_grader_scans_it(tmp_path):
    """make test's nvcc check leaves nvcc objects (nvcc-check/<name>/): scanned with the gpu backend, on
    which nvcc's kernel registration before main is the toolkit's own; the fork call is still found."""
    student = tmp_path / "student"
    student.mkdir()
    kernel = "__global__ void k(int* p) { p[threadIdx.x] = 1; }\n"
    launches = kernel + "int spawn() { k<<<1, 1>>>(nullptr);"
    (student / "hillis_steele.cu").write_text(FORKS.replace("int spawn() {", launches))
    (student / "blelloch.cu").write_text(CLEAN.replace("int twice", kernel + "int twice"))
    build = tmp_path / "build"
    files = []
    for name in ("hillis_steele", "blelloch"):
        obj = build / "nvcc-check" / name / f"{name}.o"
        obj.parent.mkdir(parents=True)
        subprocess.run([str(NVCC), "-std=c++17", "-c", str(student / f"{name}.cu"), "-o", str(obj)], check=True)
        objects = student_test.build_objects(build, student, name, PROGRAM, cuda=False)
        assert objects == [("gpu", obj)]
        files.append(student_test.PolicyFile(name, student / f"{name}.cu", objects))
    found, notes = student_test.policy_findings(files, tmp_path, student)
    assert notes == [] and set(found) == {"hillis_steele"}, found
    assert [v.evidence.split(":")[0] for v in found["hillis_steele"]] == ["it calls `fork`"], found
