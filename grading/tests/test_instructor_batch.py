"""One real batch on the emulate backend with the instructor's files: four gallery entries named as
Canvas downloads them, a Canvas roster, --similarity with a planted copy; the LMS file agrees with the
gradebook (scaled to the roster column's points possible), the class summary names the hint the judge
gave, the report has every section in its order and the roster's names."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import pytest

from conftest import GRADING, REAL_BUILD, REAL_TOOLCHAIN
from test_batch import check_report, read_gradebook, write_tree, write_zip
from test_roster import ROSTERS
from test_similarity import disguise

GALLERY = GRADING / "gallery"


def files_of(entry: str, transform=lambda text: text) -> dict[str, str]:
    return {f"student/{p.name}": transform(p.read_text()) for p in (GALLERY / entry / "student").iterdir()}


def test_real_batch_with_roster_and_similarity(tmp_path):
    if not REAL_TOOLCHAIN.is_file() or "emulate" not in json.loads(REAL_TOOLCHAIN.read_text()):
        pytest.skip("no build with the emulation backend (SCANGRADE_BUILD_DIR)")
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    write_zip(subs / "doejane_1001_700001_scan.zip", files_of("correct_kogge_stone"))
    write_zip(subs / "smithjohn_12345_700002_scan.zip", files_of("wrong_inclusive_exclusive_swapped"))
    write_tree(subs / "nguyenan_2002_700003_scan", files_of("wrong_does_not_compile"))
    write_zip(subs / "stranger_555_700004_scan.zip", files_of("wrong_inclusive_exclusive_swapped", disguise))
    roster = tmp_path / "canvas.csv"
    shutil.copy(ROSTERS / "canvas_gradebook_export.csv", roster)
    r = subprocess.run([sys.executable, str(GRADING / "batch.py"), str(subs), "--out", str(out), "--build-dir",
                        str(REAL_BUILD), "--backend", "emulate", "--max-n", "70000", "--formats", "gradescope",
                        "--roster", str(roster), "--assignment", "Scan lab", "--lms-slot-columns", "--similarity"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "UNMATCHED SUBMISSION stranger_555" in r.stderr and "NO SUBMISSION Student, Test" in r.stderr
    book = read_gradebook(out)
    with open(out / "lms" / "canvas.csv", newline="") as f:
        rows = list(csv.reader(f))
    by_id = {row[1]: row for row in rows[2:]}
    possible = float(book["doejane_1001"]["max_total"])
    assert rows[0][5] == "Scan lab (20456)" and rows[1][5] == "100"     # the roster's column and its points
    for uid, sid in (("1001", "doejane_1001"), ("12345", "smithjohn_12345")):
        assert float(by_id[uid][5]) == pytest.approx(round(float(book[sid]["total"]) * 100 / possible, 2))
    assert f"batch: canvas.csv: column 'Scan lab (20456)', scores scaled to 100 points (raw out of " \
           f"{possible:g})" in r.stderr
    summary = json.loads((out / "class_summary.json").read_text())
    hier = next(s for s in summary["slots"] if s["slot"] == "hierarchical")
    hint = next(h for h in hier["hints"] if "EXCLUSIVE scan" in h["hint"])
    assert {s["id"] for s in hint["students"]} == {"smithjohn_12345"}
    # the disguised copy renames blindly (directives, members): it does not compile
    compile_errors = next(p for p in summary["build"] if p["status"] == "compile_error")
    assert {s["id"] for s in compile_errors["students"]} == {"nguyenan_2002", "stranger_555"}
    sim = json.loads((out / "similarity.json").read_text())
    assert {sim["pairs"][0]["a"], sim["pairs"][0]["b"]} == {"smithjohn_12345", "stranger_555"}
    p = check_report(out / "report.html")
    assert "students/smithjohn_12345/feedback.html" in p.links
    text = (out / "report.html").read_text()
    headings = ["Submissions", "What the class got wrong", "Roster", "Similar submissions"]
    at = [text.index(f">{heading}</h2>") for heading in headings]
    assert at == sorted(at) and text.index('id="score-histogram"') < at[0]
    # roster names: the table, who got the hint wrong, the planted pair (its unmatched half by id)
    assert '">Smith, John</a><div class="sid">smithjohn_12345</div>' in text
    assert ' title="smithjohn_12345">Smith, John</a>' in text
    assert '<span title="smithjohn_12345">Smith, John</span> <span class="sid">smithjohn_12345</span>' in text
