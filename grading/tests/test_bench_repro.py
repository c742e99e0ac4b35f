"""tools/bench_repro.py: the perf ratio's spread over several gradings of one submission. Its GPU
runs are the lead's; here: the emulated and dry-run modes exit cleanly without grading, and the
summary's numbers on synthetic results."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import bench_repro   # tools/ is on the path (pytest.ini)

TOOL = Path(bench_repro.__file__)


def results(backend: str, ratios: dict[str, float | None]) -> dict:
    return {"backend": backend, "slots": {slot: {"perf_ratio": r} for slot, r in ratios.items()}}


def write(root: Path, docs: list[dict]) -> Path:
    for i, doc in enumerate(docs):
        (root / f"s{i}").mkdir(parents=True)
        (root / f"s{i}" / "results.json").write_text(json.dumps(doc))
    return root


def test_emulated_backend_says_there_are_no_timings(tmp_path):
    sub = tmp_path / "sub"
    (sub / "student").mkdir(parents=True)
    r = subprocess.run([sys.executable, str(TOOL), str(sub), "--backend", "emulate", "--work", str(tmp_path / "w")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "has no timings" in r.stdout
    assert not (tmp_path / "w").exists()   # nothing graded


def test_dry_run_prints_the_batch_and_the_alone_runs(tmp_path):
    sub = tmp_path / "sub"
    (sub / "student").mkdir(parents=True)
    r = subprocess.run([sys.executable, str(TOOL), str(sub), "--backend", "gpu", "--dry-run", "--copies", "4",
                        "--alone", "2", "--work", str(tmp_path / "w")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("$ ")]
    assert len(lines) == 3 and "batch.py" in lines[0] and all("grade.py" in ln for ln in lines[1:]), r.stdout
    assert "dry run, nothing graded" in r.stdout


def test_emulated_results_have_no_timings(tmp_path):
    root = write(tmp_path / "r", [results("emulate", {"hierarchical": None, "single_pass": None})] * 2)
    r = subprocess.run([sys.executable, str(TOOL), "--results-from", str(root)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "no timings" in r.stdout and "backend emulate" in r.stdout


def test_spread_numbers():
    docs = [results("gpu", {"hierarchical": r, "single_pass": 1.0}) for r in (0.5, 0.55, 0.6)]
    s = bench_repro.spreads(docs)
    assert set(s) == {"hierarchical", "single_pass"}
    h = s["hierarchical"]
    assert h.mean == pytest.approx(0.55)
    assert h.max_over_min == pytest.approx(1.2)
    assert h.cv == pytest.approx((0.05 * (2 / 3) ** 0.5) / 0.55)
    assert "OUTSIDE target" in h.line("alone", "hierarchical")
    assert s["single_pass"].cv == 0 and "within target" in s["single_pass"].line("alone", "single_pass")
