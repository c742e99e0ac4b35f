"""The table printed at the end of grade.py (and by report.py for an existing results.json)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import GRADING
from scangrade.report import HEADERS, render


def test_table_has_every_column_and_slot(results_doc):
    text = render(results_doc)
    header = text.splitlines()[1]
    for h in HEADERS:
        assert h in header
    for slot in results_doc["slots"]:
        assert any(line.startswith(slot) for line in text.splitlines())
    assert any(line.startswith("total") for line in text.splitlines())
    assert "\033[" not in text


def test_gpu_timings_and_methodology(doc_named):
    doc = doc_named("all_pass_gpu")
    text = render(doc)
    row = [l for l in text.splitlines() if l.startswith("hierarchical")][0]
    # the largest perf case: n = 2^24 at 0.8 ms
    assert "0.8 ms" in row and "1.2" in row and "4/5" in row
    assert "timings: median of 20+ repetitions" in text
    assert "backend: gpu, NVIDIA H200" in text
    assert "= 33/34" in text  # 24 correctness + 9 perf


def test_emulated_says_no_timings(doc_named):
    text = render(doc_named("emulated"))
    assert "(emulated: no timings)" in text
    assert "ms" not in text.split("backend:")[0].split("\n", 2)[2]
    assert "NOT IMPLEMENTED" in text


def test_notes(doc_named):
    text = render(doc_named("mixed"), results_path="out/results.json")
    assert "COMPILE ERROR" in text
    assert "note: missing (graded as not implemented): student/single_pass.cu" in text
    assert "note: did not compile: blelloch" in text
    assert "1 crash" in text and "1 timeout" in text and "1 internal error" in text
    assert text.rstrip().endswith("results: out/results.json")
    assert "layout error: found hillis_steele.cu" in render(doc_named("layout_error"))
    assert "NOT GRADED" in render(doc_named("not_graded"))


def test_color_only_when_asked(doc_named):
    assert "\033[32m" in render(doc_named("all_pass_gpu"), color=True)


def test_cli(tmp_path, doc_named):
    src = tmp_path / "results.json"
    src.write_text(json.dumps(doc_named("mixed")))
    r = subprocess.run([sys.executable, str(GRADING / "report.py"), str(src)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "\033[" not in r.stdout          # not a tty
    assert str(src) in r.stdout
    r = subprocess.run([sys.executable, str(GRADING / "report.py"), str(tmp_path / "nope.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_the_total_says_which_cases_it_leaves_out(doc_named):
    """Emulated, the suite's cases above the emulation cap are not graded: the line under the total
    says how many and why, as make test's points line does; a --max-n of the instructor's says so too."""
    doc = doc_named("emulated")
    graded = len(doc["cases"])
    doc["suites"] = [{"name": "public", "cases": graded + 10}]
    doc["max_n"] = 2**22 + 1
    lines = render(doc).splitlines()
    total = next(i for i, l in enumerate(lines) if l.startswith("total"))
    assert lines[total + 1] == (f"not in the total: 10 of {graded + 10} cases, above the emulation cap of "
                                "2^22 + 1 (GPU only)"), lines
    assert len(lines[total + 1]) <= 80
    doc["max_n"] = 70000
    assert "cases, n > 70000 (--max-n)" in render(doc)
    doc["suites"] = [{"name": "public", "cases": graded}]
    assert "not in the total" not in render(doc)
