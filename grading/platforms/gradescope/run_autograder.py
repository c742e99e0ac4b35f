#!/usr/bin/env python3
"""Gradescope entrypoint: grade /autograder/submission on the CPU emulation backend and write
/autograder/results/results.json (Gradescope's format, grading/exporters.py's export).

    PYTHONPATH=/autograder/source/grading python3 run_autograder.py   (what /autograder/run_autograder runs)

Gradescope's graders have no GPU, so the backend is `emulate` (cases above 2^22 + 1 elements are
not graded there, and there are no performance points). Paths:

    $AUTOGRADER_ROOT (default /autograder)
      submission/                  the student's upload (any layout scangrade.platforms.common.stage_submission reads)
      source/                      the unpacked bundle (make_bundle.py): the ScanGrade sources (no
                                   reference/), build/, scangrade-bundle.json, hidden/ (hidden suites
                                   and the secret: made root's alone, 0700, before grading)
      submission_metadata.json     Gradescope's; the submission id names the graded folder
      results/results.json         written here: first a provisional "did not finish" result, then
                                   the real one; never left missing

Overrides (for tests and debugging): SCANGRADE_GRADE_PY (grade.py), SCANGRADE_BUILD_DIR (the CMake
build folder, default source/build), SCANGRADE_BACKEND (default emulate).

Gradescope's container usually keeps bubblewrap out: student code then runs as an unprivileged uid
without a mount namespace and reads whatever "others" may read. hidden/ and the suites and secret
the settings name are made the grader's alone first; hidden suites that student code could still
read (the grader not root, no bubblewrap) are not graded: score 0, "misconfigured", not the
student's fault.

Exit status: 0 when a results.json was written (whatever the score), 1 when even that failed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

CODE = Path(__file__).resolve().parents[3]          # the ScanGrade tree this script belongs to
from scangrade.platforms.common import (GradeRun, exposed_to_student, fault_message, grade_command, make_private,
                                        read_json, run_grade, sandbox_isolation, stage_submission,
                                        write_json_atomic)

BUNDLE_CONFIG = "scangrade-bundle.json"
DEFAULTS = {"suites": ["testcases/public.json"], "hidden_suites": [], "secret_file": None,
            "max_n": None, "budget_s": 480, "timeout_s": None}


def score_zero(message: str, details: str = "", seconds: float = 0.0) -> dict:
    """The result for a run that produced no export: score 0, and why, for the student."""
    output = message + (f"\n\n{details.strip()}" if details.strip() else "")
    return {"score": 0, "execution_time": int(round(seconds)), "output": output, "output_format": "text",
            "stdout_visibility": "hidden", "tests": []}


def usable_export(doc: dict | None) -> bool:
    """Gradescope's minimum: an object with a numeric score or a list of tests with scores."""
    if doc is None:
        return False
    if isinstance(doc.get("score"), (int, float)) and not isinstance(doc.get("score"), bool):
        return True
    tests = doc.get("tests")
    return isinstance(tests, list) and bool(tests) and all(
        isinstance(t, dict) and isinstance(t.get("score"), (int, float)) for t in tests)


def load_config(bundle: Path) -> dict:
    config = dict(DEFAULTS)
    found = read_json(bundle / BUNDLE_CONFIG)
    if found:
        config.update({k: v for k, v in found.items() if k in DEFAULTS})
    return config


def resolve(bundle: Path, rel: str) -> Path:
    """A path from the bundle config: relative to the bundle, else to the ScanGrade tree."""
    p = Path(rel)
    if p.is_absolute():
        return p
    return bundle / p if (bundle / p).exists() or not (CODE / p).exists() else CODE / p


def submission_name(root: Path) -> str:
    meta = read_json(root / "submission_metadata.json") or {}
    sid = meta.get("id")
    return f"submission-{sid}" if isinstance(sid, (int, str)) and str(sid).isalnum() else "submission"


def grade(root: Path, started: float) -> dict:
    bundle = root / "source"
    config = load_config(bundle)
    grade_py = Path(os.environ.get("SCANGRADE_GRADE_PY", CODE / "grading" / "grade.py"))
    build_dir = Path(os.environ.get("SCANGRADE_BUILD_DIR", bundle / "build"))
    backend = os.environ.get("SCANGRADE_BACKEND", "emulate")
    budget_s = float(config["budget_s"])
    timeout_s = float(config["timeout_s"] or budget_s + 420)   # compiles, the judge's grace, exports
    hidden = [resolve(bundle, s) for s in config["hidden_suites"]]
    secret = resolve(bundle, config["secret_file"]) if config["secret_file"] else None
    private = [bundle / "hidden", *hidden, *([secret] if secret else [])]
    make_private([p for p in private if p.exists()])
    exposed = exposed_to_student(private, sandbox_isolation(build_dir)) if hidden else []
    if exposed:
        return score_zero("The autograder is misconfigured (not your fault): it cannot keep its hidden tests "
                          "from submitted code on this machine. Please tell your instructor.",
                          f"readable by student code: {', '.join(map(str, exposed))} (run the autograder "
                          "as root, or where bubblewrap can make its namespaces)", time.monotonic() - started)

    work = Path(tempfile.mkdtemp(prefix="scangrade-gs-"))
    # the sandbox's compiles run as an unprivileged uid: without namespaces (inside the platform's
    # container) they reach the staged files through this folder, so it must be traversable
    # (not listable); the suites under it are read by the judge, as root
    os.chmod(work, 0o711)
    try:
        staged = stage_submission(root / "submission", work / "staged", submission_name(root))
        out = work / "out"
        cmd = grade_command(
            grade_py, staged.path, build_dir=build_dir, out=out, backend=backend, formats="gradescope",
            suites=[resolve(bundle, s) for s in config["suites"]], hidden_suites=hidden, secret_file=secret,
            max_n=config["max_n"], budget_s=budget_s)
        run: GradeRun | None = None
        if grade_py.is_file():
            run = run_grade(cmd, timeout_s)
        doc = read_json(out / "gradescope.json") if run and run.returncode in (0, 1) else None  # 0, 1: graded; anything else is never published
        if not usable_export(doc):
            head, detail = fault_message(run, grade_py, "Gradescope")
            return score_zero(head, detail, time.monotonic() - started)
        assert doc is not None
        if staged.notes:
            doc["output"] = doc.get("output", "") + "\n" + "\n".join(f"note: {n}" for n in staged.notes)
        doc.setdefault("stdout_visibility", "hidden")
        return doc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    started = time.monotonic()
    root = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    results_path = root / "results" / "results.json"
    try:
        write_json_atomic(results_path, score_zero(
            "Grading started but did not finish: the autograder was stopped before it wrote results "
            "(not your fault). Please resubmit; if this persists, tell your instructor."))
        doc = grade(root, started)
    except Exception as exc:   # any fault of ours: the student still gets a result that says so
        doc = score_zero("The grader failed (internal error, not your fault): please report it. "
                         "This score is not final.", f"{type(exc).__name__}: {exc}", time.monotonic() - started)
    try:
        write_json_atomic(results_path, doc)
    except OSError as exc:
        print(f"run_autograder: cannot write {results_path}: {exc}", file=sys.stderr)
        return 1
    print(f"run_autograder: wrote {results_path} (score {doc.get('score')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
