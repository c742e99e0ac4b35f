"""Grade the gallery of known submissions and check every verdict.

The gallery (grading/gallery/<entry>/) holds complete submissions, known-correct and known-wrong,
each with expected.json: the verdict every slot must get (and, where the CPU emulation backend must
differ, `emulation_verdicts`) and, optionally, `hints`: a substring that the message of the slot's
first non-passing case must contain (`emulation_hints` where the emulation backend differs; null
there drops the hint). Hints are checked both ways: a slot expected to `fail` that names no hint
(neither in `hints` nor in `emulation_hints`) must get a message without any hint line, so that a
hint firing on the wrong bug is a mismatch too; an explicit null leaves the slot unchecked.
`hints_never` maps a slot to substrings that no message of its non-passing cases may contain (a hint
that would name the wrong bug on some size, e.g. "INCLUSIVE" for a Blelloch slot that fails otherwise). This
grades each entry with grade.py — plus the reference solutions through the prebuilt reference worker — computes each slot's verdict from results.json and prints
a table entry × slot: expected vs got. Exit 0 when every verdict and hint matches, 1 otherwise.
With --results-from BATCH_DIR it grades nothing and reads the results a batch run
(grading/batch.py over the gallery's entries) wrote: the gradebook maps each entry to its results;
with --copies FILE as well, every row of that batch is a copy of the entry FILE names for its raw
name (tools/bench_batch.py grades perturbed copies that way).

A slot's verdict: `pass` when every case of the slot passed; otherwise the first status present in
this order: internal_error, compile_error, policy_violation, not_implemented, timeout, crash, race, memory_error,
out_of_bounds_write, input_modified, fail, leak (scangrade/vocab.py). A hint is checked (case-sensitive
substring) against the message of the slot's first case, in results.json order, whose status is not
pass; hints of slots expected to pass on this backend are not checked. On the emulate backend the
judge stops at its emulation cap unless --max-n says otherwise.

On the GPU backend an entry's `gpu_timing` (optional) is checked too: `max_timing_s`, the most
seconds the timed phase may take (results.phases.timing_s), and per slot `stopped` (a substring of
why the GPU's fair share stopped its timing: `slots.<slot>.timing_stopped` or a case's
`timing.stopped`; null: it must not have been stopped), `max_perf_points` and `timed` (true: the
slot's cases were timed and its timing did not stop before every perf case was).

With --fidelity DIR (grading/fidelity) the graded entries' case statuses are then compared with the
other backend's recorded snapshot there (emulated: DIR/gpu_statuses.json; GPU:
DIR/emulated_statuses.json) by tools/bench_fidelity.py, whose disagreements and agreement table are
printed after the verdicts; when that comparison fails (agreement below 99%, or an unexplained
disagreement that changes a slot's verdict) the exit status is 1 as well.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import log as logsetup
from .grade import detect_backend
from .vocab import SLOTS, slot_verdicts

REPO = Path(__file__).resolve().parents[2]
GALLERY = REPO / "grading" / "gallery"
REFERENCE = "reference"
log = logging.getLogger(__name__)


@dataclass
class FirstProblem:
    """A slot's first case (results.json order) whose status is not pass."""
    case_id: str
    status: str
    message: str


@dataclass
class Entry:
    name: str
    expected: dict[str, str]
    bug: str | None = None
    kind: str = ""                  # "exploit": graded only inside the sandbox (--sandbox require)
    # slot -> substring of its first problem's message, or None: that message must have no hint line
    hints: dict[str, str | None] = field(default_factory=dict)
    timing: dict = field(default_factory=dict)   # GPU only: expected.json's gpu_timing
    never: dict[str, list[str]] = field(default_factory=dict)   # slot -> substrings no problem may show
    problems: dict[str, list[FirstProblem]] = field(default_factory=dict)   # slot -> every non-passing case
    timing_found: list[str] = field(default_factory=list)  # where the results do not meet it
    got: dict[str, str] = field(default_factory=dict)
    first_problems: dict[str, FirstProblem] = field(default_factory=dict)
    error: str = ""
    skipped: str = ""               # why it was not graded (an exploit where no sandbox can run)
    seconds: float = 0.0

    def mismatches(self) -> list[str]:
        if self.skipped:
            return []
        if self.error:
            return [self.error]
        return ([f"{slot}: expected {want}, got {self.got.get(slot, 'no cases')}"
                 for slot, want in self.expected.items() if self.got.get(slot) != want]
                + [f"{slot}: {problem}" for slot, problem in self.hint_problems().items()]
                + [f"gpu_timing: {problem}" for problem in self.timing_found])

    def hint_problems(self) -> dict[str, str]:
        """slot -> why its hint does not hold (only slots whose verdict matched: a wrong verdict is
        reported as such)."""
        problems = {}
        for slot, hint in self.hints.items():
            if self.got.get(slot) != self.expected.get(slot):
                continue
            first = self.first_problems.get(slot)
            if hint is None:
                if first is not None and HINT_LINE in first.message:
                    line = first.message[first.message.index(HINT_LINE) + 1:].split("\n")[0]
                    problems[slot] = (f"expected no hint in the message of its first {first.status} case "
                                      f"({first.case_id}), got {shorten(line)!r}")
                continue
            if first is None:
                problems[slot] = f"expected a message containing {hint!r}, but no case of the slot failed"
            elif hint not in first.message:
                problems[slot] = (f"expected the message of its first {first.status} case ({first.case_id}) to "
                                  f"contain {hint!r}, got {shorten(first.message)!r}")
        for slot, words in self.never.items():
            if slot in problems or self.got.get(slot) != self.expected.get(slot):
                continue
            shown = [(p, w) for p in self.problems.get(slot, []) for w in words if w in p.message]
            if shown:
                p, w = shown[0]
                problems[slot] = (f"expected no message to contain {w!r}, got it in {p.case_id} ({p.status}): "
                                  f"{shorten(p.message)!r}")
        return problems


def shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def expected_verdicts(spec: dict, backend: str) -> dict[str, str]:
    """An expected.json's verdicts on this backend."""
    expected = dict(spec["verdicts"])
    if backend == "emulate":
        expected.update(spec.get("emulation_verdicts", {}))
    return expected


HINT_LINE = "\n  hint: "  # how a fail message gives its hint (harness/src/check.cpp)


def expected_hints(spec: dict, backend: str) -> dict[str, str | None]:
    """An expected.json's hints on this backend: `hints`, with `emulation_hints` on top when emulated
    (null drops a slot's hint); slots expected to pass have no hint to check. A slot expected to
    `fail` that names no hint at all maps to None: its message must carry no hint line."""
    named = dict(spec.get("hints", {}))
    if backend == "emulate":
        named.update(spec.get("emulation_hints", {}))
    verdicts = expected_verdicts(spec, backend)
    hints: dict[str, str | None] = {slot: hint for slot, hint in named.items()
                                    if hint is not None and verdicts.get(slot, "pass") != "pass"}
    hints.update({slot: None for slot, verdict in verdicts.items() if verdict == "fail" and slot not in named})
    return hints


def expected_timing(spec: dict, backend: str) -> dict:
    """An expected.json's `gpu_timing` on this backend (nothing is timed emulated)."""
    return dict(spec.get("gpu_timing", {})) if backend == "gpu" else {}


def timing_problems(timing: dict, results: dict) -> list[str]:
    """Where results.json does not meet an entry's `gpu_timing`."""
    problems = []
    took = results.get("phases", {}).get("timing_s", 0.0)
    if "max_timing_s" in timing and took > timing["max_timing_s"]:
        problems.append(f"the timed phase took {took:.1f} s, more than {timing['max_timing_s']} s")
    for slot, want in timing.get("slots", {}).items():
        sheet = results.get("slots", {}).get(slot, {})
        cases = [c for c in results.get("cases", []) if c["slot"] == slot]
        said = [why for why in [sheet.get("timing_stopped", "")]
                + [(c.get("timing") or {}).get("stopped", "") for c in cases] if why]
        if "stopped" in want and want["stopped"] is None and said:
            problems.append(f"{slot}: expected its timing not stopped, got {shorten(said[0])!r}")
        elif want.get("stopped") is not None and not any(want["stopped"] in why for why in said):
            problems.append(f"{slot}: expected its timing stopped with {want['stopped']!r}, "
                            f"got {shorten(said[0]) if said else 'no stop'!r}")
        if "max_perf_points" in want and sheet.get("perf_points", 0.0) > want["max_perf_points"]:
            problems.append(f"{slot}: {sheet['perf_points']} performance points, expected at most "
                            f"{want['max_perf_points']}")
        if want.get("timed") and ("timing_stopped" in sheet or not any(c.get("timing") for c in cases)):
            problems.append(f"{slot}: expected every perf case timed, got "
                            + (f"{shorten(sheet['timing_stopped'])!r}" if "timing_stopped" in sheet else "no timing"))
    return problems


def all_problems(results: dict) -> dict[str, list[FirstProblem]]:
    """Each slot's cases whose status is not pass, in results.json order."""
    found: dict[str, list[FirstProblem]] = {}
    for case in results["cases"]:
        if case["status"] != "pass":
            found.setdefault(case["slot"], []).append(FirstProblem(case["id"], case["status"], case.get("message", "")))
    return found


def first_problems(results: dict) -> dict[str, FirstProblem]:
    """Each slot's first case (results.json order) whose status is not pass."""
    found: dict[str, FirstProblem] = {}
    for case in results["cases"]:
        if case["status"] != "pass" and case["slot"] not in found:
            found[case["slot"]] = FirstProblem(case["id"], case["status"], case.get("message", ""))
    return found


def take_results(entry: Entry, results: dict) -> None:
    entry.got = slot_verdicts(results)
    entry.first_problems = first_problems(results)
    entry.problems = all_problems(results) if entry.never else {}
    entry.timing_found = timing_problems(entry.timing, results) if entry.timing else []


def load_entries(backend: str, names: list[str] | None) -> list[Entry]:
    entries = [Entry(REFERENCE, {slot: "pass" for slot in SLOTS}, None)]
    for folder in sorted(p for p in GALLERY.iterdir() if (p / "expected.json").is_file()):
        spec = json.loads((folder / "expected.json").read_text())
        entries.append(Entry(folder.name, expected_verdicts(spec, backend), spec.get("bug"), spec.get("kind", ""),
                             expected_hints(spec, backend), expected_timing(spec, backend),
                             {slot: list(words) for slot, words in spec.get("hints_never", {}).items()}))
    if names:
        unknown = set(names) - {e.name for e in entries}
        if unknown:
            raise SystemExit(f"gallery: unknown entries: {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e.name in names]
    return entries


def grade(entry: Entry, args: argparse.Namespace, toolchain: dict) -> Entry:
    out = args.out / entry.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").unlink(missing_ok=True)
    limit = ["--max-n", str(args.max_n)] if args.max_n else []
    suite = ["--suite", str(args.suite)]
    if entry.name == REFERENCE:
        worker = toolchain["emulate"]["reference_worker"] if args.backend == "emulate" else toolchain["reference_worker"]
        cmd = [toolchain["judge"], "--worker", worker, "--out", str(out / "results.json"), "--submission-name",
               REFERENCE, "--submission-path", str(REPO / "reference"), "--backend", args.backend, *suite, *limit]
    else:
        cmd = [sys.executable, str(REPO / "grading" / "grade.py"), str(GALLERY / entry.name), "--out", str(out),
               "--backend", args.backend, "--build-dir", str(args.build_dir), "--formats", "none", "--quiet",
               "--jobs", "1", *suite, *limit]
        if entry.kind == "exploit":   # attacks run only where the sandbox holds them
            cmd += ["--sandbox", "require"]
    # the exploit entries test the sandbox: the build-time allowlists, which would refuse them first, are off
    env = {**os.environ, "SCANGRADE_BUILD_ALLOWLISTS": "off"} if entry.kind == "exploit" else None
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s, stdin=subprocess.DEVNULL,
                          env=env)
    entry.seconds = time.monotonic() - start
    said = (proc.stderr or proc.stdout).strip()
    if entry.kind == "exploit" and proc.returncode == 2 and "--sandbox require" in said:
        entry.skipped = said.splitlines()[-1][-300:]
        return entry
    if proc.returncode not in (0, 1):
        entry.error = f"grading exited {proc.returncode}: {said[-800:]}"
        return entry
    take_results(entry, json.loads((out / "results.json").read_text()))
    return entry


def read_batch(entries: list[Entry], batch_dir: Path, copies: dict[str, str] | None = None) -> list[Entry]:
    """Verdicts from a batch run's gradebook.csv: raw_name = the entry's folder name, or with
    `copies` (raw name -> entry name) one row per copy, named by its student id."""
    with open(batch_dir / "gradebook.csv", newline="") as f:
        rows = {row["raw_name"]: row for row in csv.DictReader(f)}
    if copies is not None:
        by_name = {e.name: e for e in entries}
        pairs = [(Entry(row["student_id"], by_name[copies[raw]].expected, by_name[copies[raw]].bug,
                        hints=by_name[copies[raw]].hints, timing=by_name[copies[raw]].timing,
                        never=by_name[copies[raw]].never), row)
                 for raw, row in sorted(rows.items()) if copies.get(raw) in by_name]
    else:
        pairs = [(entry, rows.get(entry.name)) for entry in entries]
    found = []
    for entry, row in pairs:
        if row is None:
            continue  # not in this batch (the reference is graded by gallery.py itself)
        results = batch_dir / row["results"] if row.get("results") else None
        if results is None or not results.is_file():
            entry.error = f"the batch has no results for {entry.name} ({row.get('outcome')}: {row.get('flags')})"
        else:
            take_results(entry, json.loads(results.read_text()))
        found.append(entry)
    return found


def print_table(entries: list[Entry], backend: str) -> None:
    """One row per entry: each slot's verdict, and `!=expected` where it differs (`!=hint` where the
    verdict is right but its first problem's message lacks the expected hint)."""
    rows = [("entry", *SLOTS, "")]
    for e in entries:
        cells = []
        wrong_hints = e.hint_problems() if not (e.skipped or e.error) else {}
        for slot in SLOTS:
            want, got = e.expected.get(slot, "-"), ("SKIPPED" if e.skipped else "ERROR" if e.error else e.got.get(slot, "-"))
            cells.append(f"{got}!=hint" if slot in wrong_hints else got if got == want else f"{got}!={want}")
        rows.append((e.name, *cells, "MISMATCH" if e.mismatches() else "skipped" if e.skipped else "ok"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(f"gallery verdicts on the {backend} backend (cell: the verdict got; got!=expected on a mismatch, "
          f"got!=hint when the first problem's message lacks the expected hint)")
    for i, r in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    bad = [e for e in entries if e.mismatches()]
    graded = [e for e in entries if not e.skipped]
    print(f"{len(graded) - len(bad)}/{len(graded)} entries got every expected verdict and hint "
          f"({sum(e.seconds for e in entries):.0f} s of grading)")
    for e in bad:
        for m in e.mismatches():
            print(f"MISMATCH {e.name}: {m}")
    for e in entries:
        if e.skipped:
            print(f"SKIPPED {e.name}: {e.skipped}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["auto", "gpu", "emulate"], default="auto")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build")
    parser.add_argument("--suite", type=Path, default=REPO / "testcases" / "public.json")
    parser.add_argument("--out", type=Path, default=REPO / "grading-results" / "gallery")
    parser.add_argument("--entries", help="comma-separated entry names (default: all)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="entries graded at once (default: emulated, one per core, as an emulated judge keeps "
                             "one core busy; GPU, half the cores)")
    parser.add_argument("--max-n", type=int, default=None,
                        help="grade only cases with n <= N (default: all; emulated: the judge's emulation cap)")
    parser.add_argument("--timeout-s", type=float, default=1200, help="per entry")
    parser.add_argument("--json", type=Path, help="also write the verdicts here")
    parser.add_argument("--results-from", type=Path, metavar="BATCH_DIR",
                        help="read a batch run's results instead of grading (see above)")
    parser.add_argument("--copies", type=Path, metavar="FILE",
                        help="with --results-from: JSON {raw name: gallery entry} of a batch of copies")
    parser.add_argument("--fidelity", type=Path, metavar="DIR",
                        help="then compare every case's status with the other backend's snapshot in DIR "
                             "(tools/bench_fidelity.py; see above)")
    args = parser.parse_args(argv)
    logsetup.setup("gallery")
    if args.copies and not args.results_from:
        parser.error("--copies needs --results-from")
    if args.fidelity and args.results_from:
        parser.error("--fidelity compares the results this run grades (not --results-from)")
    if args.backend == "auto":
        args.backend = detect_backend()
    if args.jobs is None:
        args.jobs = max(1, (os.cpu_count() or 2) // (1 if args.backend == "emulate" else 2))
    toolchain_path = args.build_dir / "grading" / "toolchain.json"
    if not toolchain_path.is_file():
        log.error("%s not found: build first (make)", toolchain_path)
        return 3
    toolchain = json.loads(toolchain_path.read_text())
    if args.backend == "emulate" and "emulate" not in toolchain:
        log.error("this build has no emulation backend (Boost.Context missing?)")
        return 3
    entries = load_entries(args.backend, args.entries.split(",") if args.entries else None)
    if args.results_from:
        copies = json.loads(args.copies.read_text()) if args.copies else None
        entries = read_batch(entries, args.results_from, copies)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            entries = list(pool.map(lambda e: grade(e, args, toolchain), entries))
    print_table(entries, args.backend)
    if args.json:
        args.json.write_text(json.dumps({e.name: {"expected": e.expected, "got": e.got, "error": e.error,
                                                  "hints": e.hints,
                                                  "hint_mismatches": e.hint_problems() if not e.error else {},
                                                  "timing_mismatches": e.timing_found}
                                         for e in entries}, indent=1) + "\n")
    fidelity_rc = check_fidelity(args, entries) if args.fidelity else 0
    return 1 if any(e.mismatches() for e in entries) or fidelity_rc != 0 else 0


def check_fidelity(args: argparse.Namespace, entries: list[Entry]) -> int:
    """tools/bench_fidelity.py over the entries graded now and the other backend's snapshot."""
    graded = [e.name for e in entries if not (e.error or e.skipped)]
    if not graded:
        print("fidelity: no entry graded, nothing to compare")
        return 1
    if args.backend == "emulate":
        gpu, emulated = args.fidelity / "gpu_statuses.json", args.out
    else:
        gpu, emulated = args.out, args.fidelity / "emulated_statuses.json"
    cmd = [sys.executable, str(REPO / "tools" / "bench_fidelity.py"), str(gpu), str(emulated),
           "--explanations", str(args.fidelity / "explanations.json"), "--entries", ",".join(graded)]
    print(flush=True)
    return subprocess.run(cmd, timeout=600, stdin=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main())
