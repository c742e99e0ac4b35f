#!/usr/bin/env python3
"""PrairieLearn external-grader entrypoint: grade /grade/student on the CPU emulation backend and write
/grade/results/results.json (PrairieLearn's format, grading/exporters.py's student-facing export).

    PYTHONPATH=/opt/scangrade/grading python3 entrypoint.py   (what the image's `entrypoint` script runs;
                                                               see README.md here)

Inputs, as PrairieLearn mounts them under $GRADE_ROOT (default /grade):

    student/                        the submitted files (hillis_steele.cu, ... or a student/ folder)
    tests/scangrade.json            optional, per question: which suites, slots, limits (below)
    serverFilesCourse/scangrade/scangrade.json
                                    optional, course-wide, used when the question has none
    data/data.json                  PrairieLearn's; params.scangrade may override "slots" and "max_n"

scangrade.json (every key optional; relative paths are relative to the file's folder, and a path
starting with "scangrade:" to the ScanGrade install in the image):

    {"suites": ["scangrade:testcases/public.json"], "hidden_suites": ["hidden.json"],
     "secret_file": "secret.txt", "slots": ["hillis_steele"], "max_n": 65536, "budget_s": 240}

(no max_n: every case, up to the judge's emulation cap)

"slots" grades only those slots (a question per slot): the suites are filtered to their cases.
"budget_s" is grade.py's budget; grade.py is stopped at "timeout_s" (default budget_s + 420 s for
compiling and the judge's grace): set info.json's externalGradingOptions.timeout above that.

Output: results/results.json, always, under 1 MB. A submission that cannot be read (layout error)
and a grader failure are `gradable: false` with the reason in format_errors, so the student does
not lose an attempt. Exit status: 0 when results.json was written, 1 when even that failed.
Overrides (tests, debugging): SCANGRADE_GRADE_PY, SCANGRADE_BUILD_DIR, SCANGRADE_BACKEND.

What student code cannot read: PrairieLearn's container usually keeps bubblewrap out, so student code
runs as an unprivileged uid without a mount namespace. Before grading, serverFilesCourse/, tests/ and
data/ (hidden suites, the secret, the question's files, data.json's correct answers) and the hidden
suites and secret named are made the grader's alone (folders 0700, files 0600); hidden suites that
student code could still read (the grader not root, no bubblewrap) are not graded: not gradable,
"misconfigured".
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

CODE = Path(__file__).resolve().parents[3]          # the ScanGrade install this script belongs to
from scangrade.platforms.common import (GradeRun, exposed_to_student, fault_message, grade_command, make_private,
                                        read_json, run_grade, sandbox_isolation, stage_submission,
                                        write_filtered_suites, write_json_atomic)

PL_LIMIT = 1_000_000
DEFAULTS = {"suites": ["scangrade:testcases/public.json"], "hidden_suites": [], "secret_file": None,
            "slots": None, "max_n": None, "budget_s": 240, "timeout_s": None}


class ConfigError(Exception):
    """scangrade.json or data.json is unusable: the course's fault, reported as not gradable."""


def not_gradable(message: str, details: str = "") -> dict:
    output = message + (f"\n\n{details.strip()}" if details.strip() else "")
    return {"gradable": False, "message": message, "output": output, "format_errors": [message]}


def fit(doc: dict, limit: int = PL_LIMIT) -> dict:
    """Keep results.json under PrairieLearn's limit (the exporter already does; this is the guard)."""
    def size() -> int:
        return len(json.dumps(doc, ensure_ascii=False).encode("utf-8"))
    cap = 4096
    while size() > limit and cap >= 64:
        for t in doc.get("tests", []):
            for key in ("output", "message"):
                if len(t.get(key, "")) > cap:
                    t[key] = t[key][:cap] + " [trimmed]"
        if len(doc.get("output", "")) > 4 * cap:
            doc["output"] = doc["output"][:4 * cap] + " [trimmed]"
        cap //= 2
    if size() > limit:
        for t in doc.get("tests", []):
            t["output"], t["message"] = "", t.get("message", "")[:40]
    return doc


def load_config(root: Path) -> tuple[dict, Path | None]:
    config = dict(DEFAULTS)
    base = None
    for candidate in (root / "tests" / "scangrade.json", root / "serverFilesCourse" / "scangrade" / "scangrade.json"):
        if candidate.is_file():
            found = read_json(candidate)
            if found is None:
                raise ConfigError(f"{candidate.relative_to(root)} is not a JSON object")
            unknown = sorted(set(found) - set(DEFAULTS))
            if unknown:
                raise ConfigError(f"{candidate.relative_to(root)}: unknown key {unknown[0]!r} "
                                  f"(known: {', '.join(DEFAULTS)})")
            config.update(found)
            base = candidate.parent
            break
    data_path = root / "data" / "data.json"
    data = read_json(data_path) if data_path.is_file() else None
    params = ((data or {}).get("params") or {}).get("scangrade")
    if isinstance(params, dict):
        config.update({k: v for k, v in params.items() if k in ("slots", "max_n")})
    if config["hidden_suites"] and not config["secret_file"]:
        raise ConfigError("hidden_suites need a secret_file in scangrade.json")
    return config, base


def resolve(rel: str, base: Path | None) -> Path:
    if rel.startswith("scangrade:"):
        return CODE / rel[len("scangrade:"):]
    p = Path(rel)
    if p.is_absolute():
        return p
    if base is None:
        raise ConfigError(f"relative path {rel!r} without a scangrade.json to be relative to")
    return base / p


def grade(root: Path, started: float) -> dict:
    config, base = load_config(root)
    grade_py = Path(os.environ.get("SCANGRADE_GRADE_PY", CODE / "grading" / "grade.py"))
    build_dir = Path(os.environ.get("SCANGRADE_BUILD_DIR", CODE / "build"))
    backend = os.environ.get("SCANGRADE_BACKEND", "emulate")
    budget_s = float(config["budget_s"])
    work = Path(tempfile.mkdtemp(prefix="scangrade-pl-"))
    # the sandbox's compiles run as an unprivileged uid: without namespaces (inside the platform's
    # container) they reach the staged files through this folder, so it must be traversable
    # (not listable); the suites under it are read by the judge, as root
    os.chmod(work, 0o711)
    try:
        suites = [resolve(s, base) for s in config["suites"]]
        hidden = [resolve(s, base) for s in config["hidden_suites"]]
        for s in [*suites, *hidden]:
            if not s.is_file():
                raise ConfigError(f"suite {s} not found")
        secret = resolve(config["secret_file"], base) if config["secret_file"] and hidden else None
        private = [root / "serverFilesCourse", root / "tests", root / "data", *hidden, *([secret] if secret else [])]
        make_private([p for p in private if p.exists()])
        exposed = exposed_to_student(private, sandbox_isolation(build_dir)) if hidden else []
        if exposed:
            raise ConfigError(f"student code could read {', '.join(map(str, exposed))} here: run the grader "
                              "as root (PrairieLearn's default), or where bubblewrap can make its namespaces")
        try:
            suites = write_filtered_suites(suites, config["slots"], work / "suites")
            hidden = write_filtered_suites(hidden, config["slots"], work / "hidden")
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot filter the suites by slot: {exc}") from None
        if not suites:
            # grade.py would fall back to the whole public suite; it has no way to grade hidden suites alone
            raise ConfigError(f"no (non-hidden) suite has a case for the slots {config['slots']}")
        staged = stage_submission(root / "student", work / "staged", "student-submission",
                                  top_level_note=False)   # PrairieLearn always puts the files there
        out = work / "out"
        cmd = grade_command(grade_py, staged.path, build_dir=build_dir, out=out, backend=backend,
                            formats="prairielearn", suites=suites, hidden_suites=hidden, secret_file=secret,
                            max_n=config["max_n"], budget_s=budget_s)
        run: GradeRun | None = run_grade(cmd, float(config["timeout_s"] or budget_s + 420)) if grade_py.is_file() else None
        doc = read_json(out / "prairielearn.json") if run and run.returncode in (0, 1) else None  # 0, 1: graded; anything else is never published
        if doc is None or not ("score" in doc or doc.get("gradable") is False):
            head, detail = fault_message(run, grade_py, "PrairieLearn")
            return not_gradable(head, detail)
        if config["slots"]:     # a question for some slots: the others' files are not expected
            doc["output"] = "\n".join(line for line in doc.get("output", "").splitlines()
                                      if not line.startswith("missing slot files"))
        if staged.notes:
            doc["output"] = doc.get("output", "") + "\n" + "\n".join(f"note: {n}" for n in staged.notes)
        return doc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    started = time.monotonic()
    root = Path(os.environ.get("GRADE_ROOT", "/grade"))
    results_path = root / "results" / "results.json"
    try:
        doc = grade(root, started)
    except ConfigError as exc:
        doc = not_gradable("The question's autograder is misconfigured (not your fault): please tell your "
                           "instructor.", str(exc))
    except Exception as exc:   # any fault of ours: still a result, and no attempt lost
        doc = not_gradable("The grader failed (internal error, not your fault): please report it.",
                           f"{type(exc).__name__}: {exc}")
    try:
        write_json_atomic(results_path, fit(doc))
    except OSError as exc:
        print(f"entrypoint: cannot write {results_path}: {exc}", file=sys.stderr)
        return 1
    print(f"entrypoint: wrote {results_path} (gradable {doc.get('gradable', True)}, score {doc.get('score')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
