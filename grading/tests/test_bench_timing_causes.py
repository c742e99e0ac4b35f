"""tools/bench_timing_causes.py: what each cause contributes to the ratio's noise. Its GPU runs are
the lead's; here: the emulated and dry-run modes grade nothing, each cause's variation reaches the
judge's environment, and the table's numbers on synthetic results."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bench_timing_causes as causes   # tools/ is on the path (pytest.ini)

TOOL = Path(causes.__file__)


def submission(tmp_path: Path) -> Path:
    sub = tmp_path / "sub"
    (sub / "student").mkdir(parents=True)
    return sub


def test_emulated_backend_grades_nothing(tmp_path):
    r = subprocess.run([sys.executable, str(TOOL), str(submission(tmp_path)), "--backend", "emulate",
                        "--work", str(tmp_path / "w")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "has no timings" in r.stdout
    assert not (tmp_path / "w").exists()


def test_dry_run_names_every_cause_and_its_variation(tmp_path):
    r = subprocess.run([sys.executable, str(TOOL), str(submission(tmp_path)), "--backend", "gpu", "--dry-run",
                        "--runs", "2", "--work", str(tmp_path / "w")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("$ ")]
    assert "grade.py" in lines[0] and "--suite" in lines[0]
    judged = lines[1:]
    assert len(judged) == 2 * len(causes.CAUSES)
    for cause in causes.CAUSES:
        mine = [ln for ln in judged if f"--submission-name {cause.name}-" in ln]
        assert len(mine) == 2, cause.name
        for ln in mine:
            assert (f"SCANGRADE_BENCH_TIMING={cause.variation} " in ln) == bool(cause.variation), ln
            assert (f"[{cause.background} load]" in ln) == bool(cause.background), ln
    # the suite: only the perf cases of the two slots, at the chosen n
    import json
    suite = json.loads((tmp_path / "w" / "perf-suite.json").read_text())
    assert suite["cases"] and all(c["perf"] and c["slot"] in causes.SLOTS and c["n"] == 1 << 24
                                  for c in suite["cases"])
    assert {c["slot"] for c in suite["cases"]} == set(causes.SLOTS)


def test_unknown_cause_is_a_usage_error(tmp_path):
    r = subprocess.run([sys.executable, str(TOOL), str(submission(tmp_path)), "--causes", "baseline,moon"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "moon" in r.stderr


def doc(ratio: float, mine_ms: float, ref_ms: float) -> dict:
    return {"backend": "gpu",
            "slots": {"hierarchical": {"perf_ratio": ratio}, "single_pass": {"perf_ratio": None}},
            "cases": [{"id": "h1", "slot": "hierarchical", "timing": {"median_ms": mine_ms, "reference_ms": ref_ms,
                                 "method": "...; stopped by the interval rule with the ratio's 95% interval at 0.8%"}},
                      {"id": "s1", "slot": "single_pass", "timing": None}]}


def test_table_numbers():
    rows = causes.rows_for(causes.CAUSES[0], [doc(0.5, 0.2, 0.1), doc(0.6, 0.3, 0.1)])
    hier, single = rows
    assert hier.slot == "hierarchical" and hier.ratios == [0.5, 0.6]
    assert causes.cv(hier.ratios) == pytest.approx(0.05 / 0.55)
    assert hier.student_cv == pytest.approx(0.05 / 0.25)
    assert hier.reference_cv == 0.0
    assert "1.2000" in hier.line()           # max/min
    assert hier.stops == {"the interval rule": 2} and "interval:2" in hier.line()
    assert single.ratios == [] and "no ratios" in single.line()


def test_the_variation_reaches_a_sandboxed_worker_and_nothing_else_does():
    # the worker applies default_pool and shift itself, inside the sandbox, whose environment is
    # otherwise empty: without SCANGRADE_BENCH_TIMING there the checker would shift pair 1 alone
    from conftest import REAL_BUILD
    sandbox = REAL_BUILD / "grading" / "scangrade_sandbox"
    if not sandbox.is_file() or not shutil.which("bwrap"):
        pytest.skip("needs the built scangrade_sandbox and bubblewrap")
    env = dict(os.environ, SCANGRADE_BENCH_TIMING="no_fresh", SCANGRADE_UNRELATED_SETTING="1")
    r = subprocess.run([str(sandbox), "--sandbox", "require", "--", "/usr/bin/env"], env=env, capture_output=True,
                       text=True, timeout=120)
    if r.returncode == 2:
        pytest.skip(f"this machine cannot sandbox: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert "SCANGRADE_BENCH_TIMING=no_fresh" in r.stdout.splitlines()
    assert "SCANGRADE_UNRELATED_SETTING" not in r.stdout
