"""A batch's records and files: one Student per entry, its gradebook flags, gradebook.csv, and the
per-phase time totals (batch.json). batch.py fills them; batch_report.py reads them.

Gradebook columns: student_id, raw_name, outcome (graded | not_graded | error), flags (space
separated, in vocab.FLAG_ORDER), one column per slot (its correctness points), <slot>_perf for slots
with performance points, perf_points, points, total, max_total, percent, meets_threshold,
cases_passed, cases, backend, run (graded | reused), seconds, results.

Every text cell is written through gradebook_cell(): controls shown as text (results.printable), at
most MAX_CELL characters, and a cell that starts with = + - @ (tab, CR) and is not a plain number is
written after a ' so that a spreadsheet shows it as text instead of running it as a formula.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from .files import write_atomic
from .lms import Entry
from .results import fmt_points, printable
from .vocab import SLOTS, ordered_flags

PHASES = ("hash", "unpack", "compile", "queue", "judge", "correctness", "prepare", "timing", "lock_wait", "sanitizer",
          "export")





@dataclass
class Student:
    entry: Entry
    out: Path
    stamp: dict = field(default_factory=dict)
    outcome: str = "error"          # graded | not_graded | error
    flags: list[str] = field(default_factory=list)
    reused: bool = False
    error: str = ""
    results: dict | None = None
    gpu: str | None = None
    # phase -> [start, end] in seconds since the batch started; judge_phases: the judge's own split
    phases: dict[str, list[float]] = field(default_factory=dict)
    judge_phases: dict[str, float] = field(default_factory=dict)
    previous_judge_s: float | None = None   # what its judge took the last time (the queue's order)

    @property
    def results_path(self) -> Path:
        return self.out / "results.json"

    def record(self) -> dict:
        return {"student_id": self.entry.student_id, "raw_name": self.entry.raw_name, "kind": self.entry.kind,
                "lms": self.entry.lms, "notes": self.entry.notes, "outcome": self.outcome, "flags": self.flags,
                "reused": self.reused, "error": self.error, "gpu": self.gpu,
                "score": self.results["score"] if self.results else None,
                "phases": self.phases, "judge_phases": self.judge_phases}


def flags_of(results: dict) -> list[str]:
    """The gradebook's flags for one results.json: build problems, every case status but pass, and
    internal_error when the grader failed (in vocab.FLAG_ORDER)."""
    seen: set[str] = set()
    status = results["build"]["status"]
    if status in ("layout_error", "compile_error"):
        seen.add(status)
    if results["build"].get("policy_violations"):
        seen.add("policy_violation")
    for c in results["cases"]:
        if c["status"] != "pass" and not (status == "layout_error" and c["status"] == "compile_error"):
            seen.add(c["status"])
    if results["outcome"] != "graded" or results.get("errors"):
        seen.add("internal_error")
    return ordered_flags(seen)


def perf_slots(students: list[Student]) -> list[str]:
    return [s for s in SLOTS if any(st.results and st.results["slots"].get(s, {}).get("perf_max_points", 0)
                                    for st in students)]


MAX_CELL = 2000     # characters of one gradebook cell (csv readers refuse fields past 128 KiB by default)
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _safe_cell(text: str) -> str:
    """Spreadsheets run cells that start with = + - @ (tab, CR) as formulas: a name or a message must
    not. Such a cell is written after a ' (shown as text); a plain number like -1.5 stays a number."""
    if _NUMBER.match(text):
        return text
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def gradebook_cell(value: object) -> object:
    """A cell as written: text made printable (results.printable), cut to MAX_CELL characters, and
    kept from running as a formula; numbers as they are."""
    if not isinstance(value, str):
        return value
    text = printable(value)
    if len(text) > MAX_CELL:
        text = text[:MAX_CELL] + f" ... [{len(text) - MAX_CELL} more characters]"
    return _safe_cell(text)


def gradebook_rows(students: list[Student], out: Path, threshold: float | None) -> tuple[list[str], list[dict]]:
    perf = perf_slots(students)
    columns = (["student_id", "raw_name", "outcome", "flags", *SLOTS, *(f"{s}_perf" for s in perf),
                "perf_points", "points", "total", "max_total", "percent", "meets_threshold", "cases_passed",
                "cases", "backend", "run", "seconds", "results"])
    rows = []
    for st in sorted(students, key=lambda s: s.entry.student_id):
        r = st.results
        row = {c: "" for c in columns}
        row.update(student_id=st.entry.student_id, raw_name=_safe_cell(st.entry.raw_name), outcome=st.outcome,
                   flags=" ".join(st.flags), run="reused" if st.reused else "graded")
        if r is not None:
            sc = r["score"]
            for s in SLOTS:
                if s in r["slots"]:
                    row[s] = fmt_points(r["slots"][s]["points"])
            for s in perf:
                if s in r["slots"]:
                    row[f"{s}_perf"] = fmt_points(round(r["slots"][s]["perf_points"], 3))
            pct = 100 * sc["total"] / sc["max_total"] if sc["max_total"] else 0.0
            row.update(perf_points=fmt_points(round(sc["perf_points"], 3)), points=fmt_points(sc["points"]),
                       total=fmt_points(round(sc["total"], 3)), max_total=fmt_points(sc["max_total"]),
                       percent=f"{pct:.1f}", cases_passed=sum(v["passed"] for v in r["slots"].values()),
                       cases=len(r["cases"]), backend=r["backend"], seconds=f"{r['duration_s']:.1f}",
                       results=st.results_path.relative_to(out).as_posix())
            if threshold is not None and st.outcome == "graded":
                row["meets_threshold"] = "yes" if pct + 1e-9 >= 100 * threshold else "no"
        rows.append(row)
    return columns, rows


def write_gradebook(path: Path, columns: list[str], rows: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows({k: gradebook_cell(v) for k, v in row.items()} for row in rows)
    write_atomic(path, buf.getvalue())


def union_length(intervals: list[list[float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def phase_totals(students: list[Student], n_gpus: int) -> dict[str, dict[str, float]]:
    """Per phase: sum of every student's time in it, and its wall time (the union of the intervals).
    Timing runs inside the judges, one at a time per GPU: its wall is its sum over the GPUs.
    Students reused from an earlier run are not counted."""
    students = [st for st in students if not st.reused]
    out = {}
    for phase in PHASES:
        if phase in ("prepare", "timing", "lock_wait"):
            s = sum(st.judge_phases.get(phase, 0.0) for st in students)
            out[phase] = {"sum_s": round(s, 3), "wall_s": round(s / max(1, n_gpus), 3) if phase == "timing" else None}
            continue
        intervals = [st.phases[phase] for st in students if phase in st.phases]
        if phase in ("correctness", "sanitizer"):
            s = sum(st.judge_phases.get(phase, 0.0) for st in students)
        else:
            s = sum(b - a for a, b in intervals)
        out[phase] = {"sum_s": round(s, 3), "wall_s": round(union_length(intervals), 3)}
    return out


