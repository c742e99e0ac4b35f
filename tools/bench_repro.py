#!/usr/bin/env python3
"""How reproducible the performance ratio is: one submission graded as N identical copies in one
class (grading/batch.py) and alone K times (grading/grade.py), then per slot the min, max, mean,
coefficient of variation and max/min of its perf ratio (slots.<slot>.perf_ratio of results.json),
for each of the two groups.

    python3 tools/bench_repro.py SUBMISSION [--copies 16] [--alone 3] [--build-dir build]
                                 [--backend auto|gpu|emulate] [--suite FILE] [--work DIR]
                                 [--budget-s S] [--dry-run]
    python3 tools/bench_repro.py --results-from DIR    (summarize results.json files found under DIR)

Targets (printed beside the numbers, not enforced): CV <= 1.5 %, max/min <= 1.05.

Timings exist only on a GPU. On the emulation backend (--backend emulate, or auto without a GPU)
nothing is graded: the tool says there are no timings to compare and exits 0. --dry-run prints the
commands it would run and exits 0. Exit status: 0 done (or nothing to measure), 1 a grading run
failed (an exit code other than 0 or 1) or a results file is missing, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRADING = REPO / "grading"
import grader_package  # noqa: E402,F401  (the grader's own package)

from scangrade.vocab import SLOTS  # noqa: E402  (the grader's slot names, after grader_package)
TARGET_CV = 0.015
TARGET_MAX_OVER_MIN = 1.05


@dataclass
class Spread:
    """The perf ratios of one slot over several gradings."""
    ratios: list[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.ratios)

    @property
    def cv(self) -> float:
        return statistics.pstdev(self.ratios) / self.mean if len(self.ratios) > 1 and self.mean > 0 else 0.0

    @property
    def max_over_min(self) -> float:
        return max(self.ratios) / min(self.ratios) if min(self.ratios) > 0 else float("inf")

    def line(self, label: str, slot: str) -> str:
        ok = self.cv <= TARGET_CV and self.max_over_min <= TARGET_MAX_OVER_MIN
        return (f"{label:<8} {slot:<14} {len(self.ratios):>3} {min(self.ratios):>8.4f} {max(self.ratios):>8.4f} "
                f"{self.mean:>8.4f} {100 * self.cv:>6.2f}% {self.max_over_min:>8.4f}  "
                f"{'within target' if ok else 'OUTSIDE target'}")


def spreads(documents: list[dict]) -> dict[str, Spread]:
    """Per slot, the perf ratios of the documents that have one (GPU gradings with timed cases)."""
    found: dict[str, Spread] = {}
    for doc in documents:
        for slot, s in (doc.get("slots") or {}).items():
            ratio = s.get("perf_ratio")
            if isinstance(ratio, (int, float)) and ratio > 0:
                found.setdefault(slot, Spread([])).ratios.append(float(ratio))
    return {slot: found[slot] for slot in SLOTS if slot in found}


def report(groups: dict[str, list[dict]]) -> str:
    lines = [f"{'group':<8} {'slot':<14} {'n':>3} {'min':>8} {'max':>8} {'mean':>8} {'CV':>7} {'max/min':>8}"
             f"  (targets: CV <= {100 * TARGET_CV:.1f}%, max/min <= {TARGET_MAX_OVER_MIN})"]
    any_timing = False
    for label, docs in groups.items():
        for slot, spread in spreads(docs).items():
            lines.append(spread.line(label, slot))
            any_timing = True
    if not any_timing:
        backends = sorted({d.get("backend", "?") for docs in groups.values() for d in docs})
        lines.append(f"no timings: no slot has a perf ratio in these results (backend {', '.join(backends) or 'none'}; "
                     "only a GPU times the perf cases)")
    return "\n".join(lines)


def load(paths: list[Path]) -> list[dict]:
    return [json.loads(p.read_text()) for p in paths]


def run(cmd: list[str], dry_run: bool) -> int:
    print("$ " + " ".join(cmd), flush=True)
    if dry_run:
        return 0
    return subprocess.run(cmd, timeout=6 * 3600).returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("submission", nargs="?", type=Path, help="a folder, .zip or .tar.gz holding student/")
    ap.add_argument("--copies", type=int, default=16, help="identical copies graded as one class (default 16)")
    ap.add_argument("--alone", type=int, default=3, help="times the submission is graded alone (default 3)")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build")
    ap.add_argument("--backend", choices=("auto", "gpu", "emulate"), default="auto")
    ap.add_argument("--suite", type=Path, help="the suite (default: the graders' default, the public suite)")
    ap.add_argument("--budget-s", type=float, help="each judge's --budget-s")
    ap.add_argument("--work", type=Path, help="where the copies and results go (default: a temporary folder)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, grade nothing")
    ap.add_argument("--results-from", type=Path, help="summarize the results.json files under this folder instead")
    args = ap.parse_args(argv)

    if args.results_from:
        paths = sorted(args.results_from.rglob("results.json"))
        if not paths:
            print(f"bench_repro: no results.json under {args.results_from}", file=sys.stderr)
            return 1
        print(report({"found": load(paths)}))
        return 0
    if args.submission is None or args.copies < 1 or args.alone < 1:
        ap.error("a SUBMISSION is needed (or --results-from), and --copies, --alone >= 1")
    if not args.submission.exists():
        ap.error(f"{args.submission} does not exist")

    backend = args.backend
    if backend == "auto":
        from scangrade.grade import detect_backend
        backend = detect_backend()
    if backend != "gpu":
        print(f"bench_repro: the {backend} backend has no timings (only a GPU times the perf cases): "
              "nothing to compare, nothing graded")
        return 0

    work = args.work or Path(tempfile.mkdtemp(prefix="scangrade-repro-"))
    common = ["--build-dir", str(args.build_dir), "--backend", "gpu"]
    if args.suite:
        common += ["--suite", str(args.suite)]
    if args.budget_s:
        common += ["--budget-s", str(args.budget_s)]

    # N copies as one class: each its own name, the same files
    klass = work / "class"
    if not args.dry_run:
        if klass.exists():
            shutil.rmtree(klass)
        klass.mkdir(parents=True)
        for i in range(args.copies):
            dest = klass / f"copy{i:03d}{''.join(args.submission.suffixes) if args.submission.is_file() else ''}"
            (shutil.copy2 if args.submission.is_file() else shutil.copytree)(args.submission, dest)
    batch_out = work / "batch"
    failed = False
    code = run([sys.executable, str(GRADING / "batch.py"), str(klass), "--out", str(batch_out), "--no-resume",
                *common], args.dry_run)
    failed |= code not in (0, 1)
    alone_outs = [work / f"alone{k}" for k in range(args.alone)]
    for out in alone_outs:
        code = run([sys.executable, str(GRADING / "grade.py"), str(args.submission), "--out", str(out), *common],
                   args.dry_run)
        failed |= code not in (0, 1)
    if args.dry_run:
        print("bench_repro: dry run, nothing graded")
        return 0

    batch_paths = sorted((batch_out / "students").glob("*/results.json"))
    alone_paths = [out / "results.json" for out in alone_outs if (out / "results.json").is_file()]
    if len(batch_paths) != args.copies or len(alone_paths) != args.alone:
        print(f"bench_repro: results missing ({len(batch_paths)}/{args.copies} copies, "
              f"{len(alone_paths)}/{args.alone} alone) in {work}", file=sys.stderr)
        failed = True
    print(report({"batch": load(batch_paths), "alone": load(alone_paths)}))
    print(f"(results in {work})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
