"""What every mode of batch.py shares: the class's inputs checked (Setup), the machine's CPU slots and
GPUs, and the class's files written from its students (write_class: gradebook.csv, batch.json,
report.html) with the command's exit status. Stop ends the command with a status and a message.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from .batch_report import render_report
from .batch_seats import JUDGES_PER_GPU
from .build import Recipe, ToolchainError
from .files import visible_gpus, write_atomic
from .grade import load_grader
from .gradebook import Student, gradebook_rows, phase_totals, write_gradebook
from .lms import Entry
from . import instructor
from . import repos as repomod
from .vocab import EXIT_BAD_INPUT, EXIT_INTERNAL

EXIT_OK = 0
EXIT_REPOS_NOT_TAKEN = 1   # --repos: everything taken was graded, some repository could not be taken
EXIT_SLURM = 4              # Slurm refused the job, or some task ended before grading all its students
log = logging.getLogger(__name__)


class Stop(Exception):
    """Ends the command with an exit status and a message (batch.py's fail)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Setup:
    """What the command works with once its inputs are checked."""
    toolchain: dict
    judge: Path
    backend: str
    recipe: Recipe
    entries: list[Entry]
    intakes: list[repomod.Intake]


def resolve_jobs(args: argparse.Namespace) -> None:
    """--jobs, else the CPUs Slurm gave this job (inside an allocation), else the CPU count."""
    if args.jobs is not None:
        return
    for var in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"):
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            args.jobs = int(value)
            return
    args.jobs = os.cpu_count() or 1


def load_inputs(args: argparse.Namespace) -> tuple[dict, Path, str, Recipe]:
    """The suites and secret exist, and the grader is built: its toolchain, judge, backend and recipe."""
    for suite in [*args.suite, *args.hidden_suite]:
        if not suite.is_file():
            raise Stop(EXIT_BAD_INPUT, f"suite {suite} not found")
    if args.secret_file and not args.secret_file.is_file():
        raise Stop(EXIT_BAD_INPUT, f"secret file {args.secret_file} not found")
    try:
        return load_grader(args.build_dir, args.backend, args.sandbox, args.bwrap)
    except ToolchainError as exc:
        raise Stop(EXIT_INTERNAL, str(exc)) from None


def pick_gpus(args: argparse.Namespace, backend: str) -> list[str]:
    gpus: list[str] = []
    if backend == "gpu":
        gpus = visible_gpus() if args.gpus == "auto" else args.gpus.split(",")
        if not gpus:
            raise Stop(EXIT_INTERNAL, "--backend gpu but no GPU found (nvidia-smi -L); give --gpus 0 to force")
    if args.judges_per_gpu is None:
        args.judges_per_gpu = min(JUDGES_PER_GPU, max(1, args.jobs // len(gpus))) if gpus else args.jobs
    return gpus


def write_class(args: argparse.Namespace, students: list[Student], intakes: list[repomod.Intake], head: dict,
                n_gpus: int, not_run: frozenset[str] = frozenset()) -> int:
    """The class's files from its students: gradebook.csv, batch.json (head first) and report.html;
    a summary on stderr. Returns the exit status."""
    # a repository that could not be taken: a row saying why, nothing graded
    students = students + [
        Student(Entry(it.spec.name, args.submissions / it.spec.name, "repository", it.spec.name, "git"),
                args.out / "students" / it.spec.name, outcome="not_graded", error=it.error)
        for it in intakes if it.error]
    columns, rows = gradebook_rows(students, args.out, args.threshold)
    for row in rows:
        if row["student_id"] in not_run:
            row["run"] = "not_run"
    if intakes:   # the repository columns go last: the folder batch's columns keep their places
        by_name = {it.spec.name: it for it in intakes}
        columns = [*columns, *repomod.GRADEBOOK_COLUMNS]
        for row in rows:
            it = by_name[row["student_id"]]
            row.update(it.columns())
            if it.error:
                row["run"] = "not_taken"
    write_gradebook(args.out / "gradebook.csv", columns, rows)
    record = {**head, "suites": [str(s) for s in args.suite], "hidden_suites": [str(s) for s in args.hidden_suite],
              "max_n": args.max_n, "budget_s": args.budget_s, "threshold": args.threshold,
              "stamp": head.get("stamp"), "phase_totals": phase_totals(students, n_gpus),
              **({"repos": {"list": str(args.repos.resolve()) if args.repos else None,
                            "deadline": args.deadline.isoformat() if args.deadline else None,
                            "repositories": [it.record() for it in intakes]}} if intakes else {}),
              "students": [st.record() for st in sorted(students, key=lambda s: s.entry.student_id)]}
    instructor.write_class_files(args, students, record)   # class_summary.json, lms/, similarity.json
    write_atomic(args.out / "batch.json", json.dumps(record, indent=1) + "\n")
    write_atomic(args.out / "report.html", render_report(students, record, columns, rows))

    untaken = [it for it in intakes if it.error]
    bad = [st for st in students if st.outcome != "graded" and st.entry.kind != "repository"]
    reused = sum(st.reused for st in students)
    log.info("%d submission(s) in %s (%d reused, %d not graded)", len(students),
             tqdm.format_interval(head.get("wall_s") or 0), reused, len(bad))
    log.info("%s", args.out / "gradebook.csv")
    log.info("%s", args.out / "report.html")
    for st in bad:
        log.info("NOT GRADED %s (%s): %s", st.entry.student_id, st.entry.raw_name, st.error or "internal error")
    for it in untaken:
        log.info("NOT TAKEN %s (%s): %s", it.spec.name, it.spec.url, it.error)
    if not_run:
        log.info("%d student(s) not graded because their Slurm task ended first: run the same command again to "
                 "grade only them", len(not_run))
    return EXIT_SLURM if not_run else EXIT_INTERNAL if bad else EXIT_REPOS_NOT_TAKEN if untaken else EXIT_OK
