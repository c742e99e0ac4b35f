#!/usr/bin/env python3
"""What each cause of noise contributes to the performance ratio: one submission's timed cases
graded several times under each of a set of controlled variations, then one table:

    cause | what was varied | slot | runs | mean ratio | CV of the ratio | max/min |
    student-time CV | reference-time CV | clocks before -> after

    python3 tools/bench_timing_causes.py [SUBMISSION] [--build-dir build] [--runs 3] [--n 16777216]
                                         [--causes baseline,pool,...] [--max-s 300] [--work DIR]
                                         [--backend auto|gpu|emulate] [--dry-run]

The submission (default: grading/gallery/correct_recursive_malloc_async, whose slots allocate
their workspace with cudaMallocAsync in every call) is compiled once by grading/grade.py on a
suite of the public suite's perf cases of the hierarchical and single-pass slots with n = --n;
then the judge grades that worker --runs times per cause (the judge's own command line, as
grade.py builds it). Causes (each compared with `baseline`, grading's own method):

    baseline   nothing varied
    pool       the worker keeps the runtime's default memory pool (trims at every synchronization)
    alignment  pair 1's buffers shifted by 4352 bytes (the pairs differ in alignment)
    gpu_load   another process uses the GPU meanwhile (build/scangrade_bench_fresh_input in a loop)
    host_load  one busy process per CPU core meanwhile
    stopping   a fixed 30 pairs instead of the interval rule
    fresh      the case's own input restored before every call instead of fresh values

The variations inside the grader go through SCANGRADE_BENCH_TIMING (grading/protocol/
timing_method.h: benchmark-only, never set when grading; every timing's method names it). The GPU's
clocks, temperature and throttle reasons are read with nvidia-smi before and after each cause (the
tool changes no GPU setting). CV: population standard deviation over mean across the runs; student
and reference CV: of each timed case's median time across the runs, averaged over the slot's cases.

Timings exist only on a GPU: on the emulation backend the tool says so and exits 0. --dry-run
prints the commands and exits 0. Exit status: 0 done, 1 a run failed or a results file is missing,
2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRADING = REPO / "grading"
import grader_package  # noqa: E402,F401  (the grader's package, grading/scangrade; sys.path left alone)

SLOTS = ("hierarchical", "single_pass")
DEFAULT_SUBMISSION = GRADING / "gallery" / "correct_recursive_malloc_async"
ENV = "SCANGRADE_BENCH_TIMING"


@dataclass
class Cause:
    name: str
    varied: str
    variation: str = ""          # SCANGRADE_BENCH_TIMING for the grader's processes
    background: str = ""         # "gpu" or "host": load started by the tool while grading


CAUSES = [
    Cause("baseline", "nothing (grading's method)"),
    Cause("pool", "student: runtime's default pool (trims)", "default_pool"),
    Cause("alignment", "pair 1 shifted by 4352 bytes", "shift=4352"),
    Cause("gpu_load", "another CUDA process running", background="gpu"),
    Cause("host_load", "one busy process per core", background="host"),
    Cause("stopping", "fixed 30 pairs, no interval rule", "fixed_reps=30"),
    Cause("fresh", "own input restored, no fresh values", "no_fresh"),
]


def cv(values: list[float]) -> float:
    mean = statistics.fmean(values) if values else 0.0
    return statistics.pstdev(values) / mean if len(values) > 1 and mean > 0 else 0.0


@dataclass
class Row:
    """One cause and slot over its runs."""
    cause: Cause
    slot: str
    ratios: list[float] = field(default_factory=list)
    why: str = ""           # what the runs said when they gave no ratio
    student_cv: float = 0.0
    reference_cv: float = 0.0
    clocks: str = ""
    stops: dict[str, int] = field(default_factory=dict)   # which rule ended each timed series

    def line(self) -> str:
        if not self.ratios:
            return f"{self.cause.name:<10} {self.cause.varied:<40} {self.slot:<13} no ratios ({self.why or 'no run'})"
        mean = statistics.fmean(self.ratios)
        spread = max(self.ratios) / min(self.ratios) if min(self.ratios) > 0 else float("inf")
        return (f"{self.cause.name:<10} {self.cause.varied:<40} {self.slot:<13} {len(self.ratios):>4} {mean:>7.4f} "
                f"{100 * cv(self.ratios):>6.2f}% {spread:>7.4f} {100 * self.student_cv:>6.2f}% "
                f"{100 * self.reference_cv:>6.2f}%  {self.stop_text():<22} {self.clocks}")

    def stop_text(self) -> str:
        short = {"the interval rule": "interval", "the most pairs": "max", "the time budget": "budget",
                 "its fixed number of pairs": "fixed"}
        return " ".join(f"{short.get(k, k)}:{v}" for k, v in sorted(self.stops.items())) or "-"


HEADER = (f"{'cause':<10} {'what was varied':<40} {'slot':<13} {'runs':>4} {'ratio':>7} {'CV':>7} {'max/min':>7} "
          f"{'stud.CV':>7} {'ref.CV':>7}  {'series stopped by':<22} clocks before -> after "
          "(SM MHz, mem MHz, C, throttle)")
STOPPED = re.compile(r"stopped by (.+?) with the ratio's 95% interval")


def why_no_ratio(doc: dict, slot: str) -> str:
    """The slot's case statuses and the first timing note of a run without a ratio."""
    cases = [c for c in doc.get("cases") or [] if c.get("slot") == slot]
    statuses = sorted({str(c.get("status")) for c in cases}) or ["no case"]
    notes = [str((c.get("timing") or {}).get("note") or (c.get("timing") or {}).get("status") or "")
             for c in cases if c.get("timing")]
    return f"statuses {'/'.join(statuses)}; timing: {next((n for n in notes if n), 'none')}"[:160]


def rows_for(cause: Cause, documents: list[dict], clocks: str = "") -> list[Row]:
    """Per slot, the perf ratios of the runs and the CV of each timed case's student and reference
    medians across the runs (averaged over the slot's cases)."""
    rows = []
    for slot in SLOTS:
        row = Row(cause, slot, clocks=clocks)
        per_case: dict[str, tuple[list[float], list[float]]] = {}
        for doc in documents:
            ratio = ((doc.get("slots") or {}).get(slot) or {}).get("perf_ratio")
            if isinstance(ratio, (int, float)) and ratio > 0:
                row.ratios.append(float(ratio))
            elif not row.why:
                row.why = why_no_ratio(doc, slot)
            for case in doc.get("cases") or []:
                t = case.get("timing") or {}
                if case.get("slot") == slot and t.get("median_ms") and t.get("reference_ms"):
                    mine, ref = per_case.setdefault(case.get("id", "?"), ([], []))
                    mine.append(float(t["median_ms"]))
                    stop = STOPPED.search(t.get("method") or "")
                    if stop:
                        row.stops[stop.group(1)] = row.stops.get(stop.group(1), 0) + 1
                    ref.append(float(t["reference_ms"]))
        if per_case:
            row.student_cv = statistics.fmean(cv(m) for m, _ in per_case.values())
            row.reference_cv = statistics.fmean(cv(r) for _, r in per_case.values())
        rows.append(row)
    return rows


def clocks() -> str:
    """The GPU's clocks, temperature and active throttle reasons (read only)."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,"
                            "clocks_throttle_reasons.active", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return r.stdout.strip().splitlines()[0].replace(" ", "") if r.returncode == 0 and r.stdout.strip() else "?"


def start_background(kind: str, build_dir: Path) -> list[subprocess.Popen]:
    """Load that runs while a cause is graded: each in its own process group."""
    if kind == "gpu":
        tool = build_dir / "scangrade_bench_fresh_input"
        loop = f"while :; do '{tool}' --n 67108864 >/dev/null 2>&1 || sleep 0.2; done"
        return [subprocess.Popen(["bash", "-c", loop], start_new_session=True)]
    if kind == "host":
        return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
                for _ in range(os.cpu_count() or 1)]
    return []


def stop_background(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=30)


def perf_suite(n: int, dest: Path) -> Path:
    suite = json.loads((REPO / "testcases" / "public.json").read_text())
    suite["cases"] = [c for c in suite["cases"] if c.get("perf") and c.get("slot") in SLOTS and c.get("n") == n]
    if not suite["cases"]:
        raise SystemExit(f"bench_timing_causes: the public suite has no perf case of {SLOTS} with n = {n}")
    suite["description"] = f"bench_timing_causes: the public suite's perf cases of {', '.join(SLOTS)} with n = {n}"
    dest.write_text(json.dumps(suite, indent=1))
    return dest


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[Cause]]:
    """The options and the causes chosen (exit 2 on a usage error)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("submission", nargs="?", type=Path, default=DEFAULT_SUBMISSION)
    ap.add_argument("--build-dir", type=Path, default=REPO / "build")
    ap.add_argument("--backend", choices=("auto", "gpu", "emulate"), default="auto")
    ap.add_argument("--runs", type=int, default=3, help="gradings per cause (default 3)")
    ap.add_argument("--n", type=int, default=1 << 24, help="the perf cases' size (default 2^24)")
    ap.add_argument("--causes", default=",".join(c.name for c in CAUSES),
                    help="comma list (default: all): " + ", ".join(c.name for c in CAUSES))
    ap.add_argument("--max-s", type=float, default=300, help="skip the causes left after this many seconds (300)")
    ap.add_argument("--work", type=Path, help="where the runs go (default: a temporary folder)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, grade nothing")
    args = ap.parse_args(argv)
    chosen = [c for c in CAUSES if c.name in args.causes.split(",")]
    unknown = set(args.causes.split(",")) - {c.name for c in CAUSES}
    if unknown or not chosen or args.runs < 2:
        ap.error(f"--causes from {[c.name for c in CAUSES]} (unknown: {sorted(unknown)}), --runs >= 2")
    if not args.submission.exists():
        ap.error(f"{args.submission} does not exist")
    return args, chosen


def compile_worker(args: argparse.Namespace, suite: Path, built: Path) -> bool:
    """grade.py compiles the submission's worker into `built` once (not in a dry run); False: it failed."""
    grade = [sys.executable, str(GRADING / "grade.py"), str(args.submission), "--suite", str(suite), "--out",
             str(built), "--backend", "gpu", "--build-dir", str(args.build_dir), "--formats", "none", "--quiet"]
    print("$ " + " ".join(grade), flush=True)
    if not args.dry_run:
        env = {k: v for k, v in os.environ.items() if k != ENV}
        code = subprocess.run(grade, env=env, timeout=1800).returncode
        if code not in (0, 1) or not (built / "worker").exists():
            print(f"bench_timing_causes: grading the submission failed (exit {code})", file=sys.stderr)
            return False
    return True


def grade_cause(cause: Cause, args: argparse.Namespace, judge: Path, built: Path, suite: Path,
                work: Path) -> tuple[list[dict], bool]:
    """The judge grades the worker --runs times under the cause: the runs' results.json documents, and
    whether a run failed."""
    from scangrade.grade import judge_command
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if cause.variation:
        env[ENV] = cause.variation
    failed = False
    background = [] if args.dry_run else start_background(cause.background, args.build_dir)
    docs = []
    try:
        for k in range(args.runs):
            out = work / cause.name / f"run{k}"
            cmd = judge_command(judge, built / "worker", out, f"{cause.name}-{k}", args.submission, "gpu",
                                [suite], [], None, 900, None,
                                ["--sandbox", "auto", "--case-cache", str(work / "case-cache")])
            print(("$ " + (f"{ENV}={cause.variation} " if cause.variation else "") +
                   (f"[{cause.background} load] " if cause.background else "") + " ".join(cmd)), flush=True)
            if args.dry_run:
                continue
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built / "build.json", out / "build.json")
            code = subprocess.run(cmd, env=env, timeout=1800, stdout=subprocess.DEVNULL).returncode
            results = out / "results.json"
            if code not in (0, 1) or not results.is_file():
                print(f"bench_timing_causes: {cause.name} run {k}: the judge exited {code}", file=sys.stderr)
                failed = True
                continue
            docs.append(json.loads(results.read_text()))
    finally:
        stop_background(background)
    return docs, failed


def main(argv: list[str] | None = None) -> int:
    args, chosen = parse_args(argv)
    backend = args.backend
    if backend == "auto":
        from scangrade.grade import detect_backend
        backend = detect_backend()
    if backend != "gpu":
        print(f"bench_timing_causes: the {backend} backend has no timings (only a GPU times the perf cases): "
              "nothing graded")
        return 0

    work = (args.work or Path(tempfile.mkdtemp(prefix="scangrade-causes-"))).resolve()   # the judge runs elsewhere
    work.mkdir(parents=True, exist_ok=True)
    (work / "case-cache").mkdir(mode=0o700, exist_ok=True)   # the cases' inputs, made once for every run
    suite = perf_suite(args.n, work / "perf-suite.json")
    built = work / "built"
    if not compile_worker(args, suite, built):
        return 1

    from scangrade.grade import read_toolchain
    judge = Path(read_toolchain(args.build_dir).get("judge") or "scangrade_judge") if not args.dry_run else Path("judge")
    failed = False
    rows: list[Row] = []
    start = time.monotonic()
    for cause in chosen:
        if time.monotonic() - start > args.max_s:
            print(f"bench_timing_causes: {cause.name} skipped (past --max-s {args.max_s:g} s)")
            continue
        before = clocks() if not args.dry_run else ""
        docs, run_failed = grade_cause(cause, args, judge, built, suite, work)
        failed = failed or run_failed
        if not args.dry_run:
            rows += rows_for(cause, docs, f"{before} -> {clocks()}")
    if args.dry_run:
        print("bench_timing_causes: dry run, nothing graded")
        return 0
    print(HEADER)
    for row in rows:
        print(row.line())
    print(f"(targets for the batch and alone: CV <= 1.5%, max/min <= 1.05; results in {work})")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
