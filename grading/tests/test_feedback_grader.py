"""tools/feedback_grader.py: the grader tree students' feedback CI checks out holds no model answer,
no gallery submission and no suite but the public one, and still builds (without reference/: the
judge, the sandbox, the emulation backend) and grades a submission."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO

sys_tools = REPO / "tools"


def test_the_tree_leaves_out_every_solution_and_secret(tmp_path):
    out = tmp_path / "grader"
    r = subprocess.run([sys.executable, str(sys_tools / "feedback_grader.py"), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    files = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()]
    assert files and not [f for f in files if f.startswith(("reference/", "grading/gallery/", "grading/docs/", "harness/emulation/tests/"))]
    assert not [f for f in files if f.startswith("testcases/") and f not in ("testcases/public.json", "testcases/generate.py")]
    assert "grading/grader.cmake" in files and "student/hierarchical.cu" in files


@pytest.mark.skipif(not (REPO / "reference").is_dir(), reason="needs the full repository (reference/ to leave out)")
def test_the_tree_builds_without_reference_and_grades(tmp_path):
    out = tmp_path / "grader"
    subprocess.run([sys.executable, str(sys_tools / "feedback_grader.py"), "--out", str(out)], check=True,
                   capture_output=True, timeout=120)
    build = out / "build"
    for cmd in (["cmake", "-S", str(out), "-B", str(build), "-DSCANGRADE_CUDA=OFF", "-DSCANGRADE_BUILD_TESTS=OFF"],
                ["cmake", "--build", str(build), "-j2", "--target", "scangrade_grader"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    toolchain = json.loads((build / "grading" / "toolchain.json").read_text())
    assert "reference_worker" not in toolchain["emulate"] and "nvcc" not in toolchain
    r = subprocess.run([sys.executable, str(out / "grading" / "grade.py"), str(REPO / "grading" / "gallery" / "wrong_modifies_input"),
                        "--build-dir", str(build), "--backend", "emulate", "--out", str(tmp_path / "results"),
                        "--formats", "none", "--quiet"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["slots"]["blelloch"]["statuses"].get("input_modified", 0) > 0
