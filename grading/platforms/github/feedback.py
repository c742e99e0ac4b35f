#!/usr/bin/env python3
"""The grading step of the student feedback workflow (tools/handout/feedback.yml): grade a checked-out
student repository's student/*.cu and student/*.cuh with THIS grader tree (the one the instructor
pinned) and its public suite, and write a job summary labelled "feedback, not the grade".

    PYTHONPATH=grader/grading python3 grader/grading/platforms/github/feedback.py submission \\
        --build-dir grader/build --out feedback-results [--backend auto|gpu|emulate] [--min-score F]

Nothing else of the student's repository is used: its grading/, testcases/, harness/, Makefile and
workflows are ignored (only regular files directly in student/ with those suffixes are copied to a
fresh folder). The suite is this grader's testcases/public.json; there is never a hidden suite or a
secret here.

Exit status: summary.py's (0 at or above --min-score, default 0: feedback never fails a job on the
score; 1 below it; 2 no results; 3 the grader failed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GRADER = Path(__file__).resolve().parents[3]     # the pinned grader's checkout
SUFFIXES = (".cu", ".cuh")
BANNER = ("Feedback, not the grade: this ran in your repository with the grader pinned by your instructor "
          "and the public suite only. Your grade comes from the instructor's grading of your repository "
          "at the deadline (hidden cases included).")


def copy_student(repo: Path, dest: Path) -> list[str]:
    """student/*.cu and student/*.cuh of repo (regular files, no links) into dest/student/."""
    src = repo / "student"
    (dest / "student").mkdir(parents=True)
    taken = []
    if src.is_dir() and not src.is_symlink():
        for p in sorted(src.iterdir()):
            if p.suffix in SUFFIXES and p.is_file() and not p.is_symlink():
                shutil.copyfile(p, dest / "student" / p.name)
                taken.append(f"student/{p.name}")
    return taken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path, help="the student's checked-out repository")
    parser.add_argument("--build-dir", type=Path, default=GRADER / "build", help="the grader's CMake build folder")
    parser.add_argument("--out", type=Path, default=Path("feedback-results"))
    parser.add_argument("--backend", choices=["auto", "gpu", "emulate"], default="auto")
    parser.add_argument("--min-score", default="0", help="fraction of the points the job needs (default: 0)")
    parser.add_argument("--summary", type=Path, help="Markdown file (default: $GITHUB_STEP_SUMMARY, else stdout)")
    args = parser.parse_args(argv)
    toolchain = args.build_dir / "grading" / "toolchain.json"
    if args.backend == "auto" and toolchain.is_file() and "nvcc" not in json.loads(toolchain.read_text()):
        args.backend = "emulate"   # a grader built without nvcc or without reference/ grades emulated only

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scangrade-feedback-") as tmp:
        sub = Path(tmp) / "submission"
        taken = copy_student(args.repo, sub)
        print(f"feedback: grading {', '.join(taken) or 'nothing (no student/*.cu)'} with the grader at {GRADER}")
        env = dict(os.environ, PYTHONPATH=str(GRADER / "grading"))
        with open(args.out / "report.txt", "w") as report:
            rc = subprocess.run([sys.executable, str(GRADER / "grading" / "grade.py"), str(sub),
                                 "--build-dir", str(args.build_dir), "--backend", args.backend,
                                 "--suite", str(GRADER / "testcases" / "public.json"), "--out", str(args.out),
                                 "--formats", "junit"], stdout=report, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL).returncode
    sys.stdout.write((args.out / "report.txt").read_text(errors="replace"))
    if rc >= 2:
        print(f"::error title=ScanGrade feedback::grade.py exited {rc} (see report.txt)")
    summary = [sys.executable, str(Path(__file__).with_name("summary.py")), str(args.out / "results.json"),
               "--min-score", args.min_score, "--feedback", BANNER]
    if args.summary:
        summary += ["--summary", str(args.summary)]
    return subprocess.run(summary, env=env, stdin=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main())
