"""A hang in one slot costs only that slot: a submission whose bonus single_pass spins forever
(wrong_hangs_spin's) next to three correct slots (correct_kogge_stone's), graded end to end with a
small budget, keeps full marks in the three; single_pass times out, and once three of its cases in a
row have timed out (or its share of the budget is spent) its remaining cases are not run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import REAL_BUILD, REAL_TOOLCHAIN, REPO

GALLERY = REPO / "grading" / "gallery"
needs_build = pytest.mark.skipif(not REAL_TOOLCHAIN.is_file(), reason=f"{REAL_TOOLCHAIN} not built (make)")


@needs_build
def test_a_hanging_bonus_slot_costs_the_other_slots_nothing(tmp_path):
    student = tmp_path / "hangs_in_single_pass" / "student"
    shutil.copytree(GALLERY / "correct_kogge_stone" / "student", student)
    shutil.copy(GALLERY / "wrong_hangs_spin" / "student" / "single_pass.cu", student / "single_pass.cu")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(REPO / "grading" / "grade.py"), str(student.parent), "--out", str(out),
                        "--build-dir", str(REAL_BUILD), "--backend", "emulate", "--budget-s", "150",
                        "--formats", "none", "--quiet"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    for slot in ("hillis_steele", "blelloch", "hierarchical"):
        info = results["slots"][slot]
        assert info["points"] == info["max_points"] > 0, (slot, info)
    hangs = [c for c in results["cases"] if c["slot"] == "single_pass" and c["status"] != "pass"]
    assert hangs and all(c["status"] == "timeout" for c in hangs), [c["status"] for c in hangs]
    assert any("not run: the 3 previous cases" in c["message"] or "slot time budget exhausted" in c["message"]
               for c in hangs), [c["message"] for c in hangs]
    assert not any("submission time budget exhausted" in c["message"] for c in results["cases"])
