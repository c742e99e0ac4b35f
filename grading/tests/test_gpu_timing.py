"""The timing pass on a real GPU (skipped without one): a result cache keyed on sampled input
elements (grading/gallery/exploit_caches_sampled_input) never hits a timed call, because every timed
call gets new input values from the checker; the timing method says so."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from conftest import GRADING, REAL_BUILD, REAL_TOOLCHAIN, assert_valid
from scangrade.grade import detect_backend

GALLERY = GRADING / "gallery"

needs_gpu = pytest.mark.skipif(not REAL_TOOLCHAIN.is_file() or detect_backend() != "gpu",
                               reason="needs the grader built (make) and a GPU listed by nvidia-smi -L")


def grade_on_gpu(entry: str, out) -> dict:
    r = subprocess.run([sys.executable, str(GRADING / "grade.py"), str(GALLERY / entry), "--out", str(out),
                        "--build-dir", str(REAL_BUILD), "--backend", "gpu",
                        "--budget-s", "600"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    results = json.loads((out / "results.json").read_text())
    # grade.py read it back through load_results already; the GPU machine has no jsonschema, and the
    # CPU tests validate documents of every shape against the same schema
    if importlib.util.find_spec("jsonschema") is not None:
        assert_valid(results, "results")
    return results


@needs_gpu
def test_a_sampled_input_cache_never_hits_a_timed_call(tmp_path):
    results = grade_on_gpu("exploit_caches_sampled_input", tmp_path / "out")
    for slot in ("hierarchical", "single_pass"):
        s = results["slots"][slot]
        assert s["passed"] == s["cases"], (slot, s["statuses"])
    timed = [c for c in results["cases"] if c.get("timing")]
    assert timed, "no case was timed"
    for c in timed:
        assert "new input values" in c["timing"]["method"], c["timing"]["method"]
    # a hit prints its n: none for the timed cases' sizes (no two functional cases share samples there)
    text = (results.get("student_output") or {}).get("text") or ""
    hits = {int(n) for n in re.findall(r"sg-cache-hit n=(\d+)", text)}
    assert not hits & {c["n"] for c in timed}, sorted(hits)
