"""What the class got wrong: DIR/class_summary.json (batch.py) and its section of report.html.

Per slot (and "build" for layout/compile errors and policy violations):
  problems   every status other than pass, by how many students got it in at least one of the slot's
             cases (most first): {status, count, students: [{id, link}], example: {student, case, message}}
  hints      every hint the judge gave (the "hint:" lines of fail and crash messages), grouped by
             its text with numbers (but 0 and 1) written as N (and "A x B, or ..." tile sizes as N): {hint, count,
             students, example: {student, case, message}} (most students first)
  perf       on a GPU (slots with performance points, students with a perf_ratio): count, min,
             quartiles, max of the × reference ratio, and the slowest and fastest correct
             implementations ({id, link, ratio}, at most PERF_SHOWN each)
A student's link is their feedback page (students/<id>/feedback.html; results.json when there is none).
Derived only from the students' results.json (what the judge wrote): it changes no grade.
"""

from __future__ import annotations

import re
import statistics
from urllib.parse import quote

from .results import printable
from .feedback import FILE_NAME as FEEDBACK_PAGE
from .gradebook import Student
from .vocab import SLOTS

PERF_SHOWN = 5
MAX_EXAMPLE = 1200
_TILES = re.compile(r"N(?: x N)+(?:, or N(?: x N)+)*")


def hint_key(line: str) -> str:
    """A hint line as a group: numbers as N, tile products as N, cut at its first ': ' when that
    leaves the sentence that names the problem."""
    text = re.sub(r"(?<![\w.])(?:[2-9]|\d{2,})(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", "N", line.strip())   # 0 and 1 stay
    text = _TILES.sub("N", text)
    head, sep, _ = text.partition(": ")
    return head if sep and len(head) >= 24 else text


def hints_of(message: str) -> list[str]:
    return [line.split("hint:", 1)[1].strip() for line in message.splitlines() if line.strip().startswith("hint:")]


def student_link(st: Student) -> str:
    base = f"students/{quote(st.entry.student_id)}/"
    return base + (FEEDBACK_PAGE if (st.out / FEEDBACK_PAGE).is_file() else "results.json")


def _example(st: Student, case: str, message: str) -> dict:
    text = printable(message)
    if len(text) > MAX_EXAMPLE:
        text = text[:MAX_EXAMPLE] + " ..."
    return {"student": st.entry.student_id, "case": case, "message": text}


def _add(groups: dict, key: str, st: Student, case: str, message: str, name: str) -> None:
    g = groups.get(key)
    if g is None:
        g = groups[key] = {name: key, "count": 0, "students": [], "example": _example(st, case, message)}
    if all(s["id"] != st.entry.student_id for s in g["students"]):
        g["students"].append({"id": st.entry.student_id, "link": student_link(st)})
        g["count"] += 1


def _ordered(groups: dict) -> list[dict]:
    return sorted(groups.values(), key=lambda g: (-g["count"], str(next(iter(g.values())))))


def class_summary(students: list[Student]) -> dict:
    graded = sorted((st for st in students if st.results is not None and st.outcome == "graded"),
                    key=lambda s: s.entry.student_id)
    build_problems: dict = {}
    per_slot = {s: {"problems": {}, "hints": {}} for s in SLOTS}
    for st in graded:
        r = st.results
        b = r["build"]
        if b["status"] in ("layout_error", "compile_error"):
            _add(build_problems, b["status"], st, "", b.get("log") or "", "status")
        for v in b.get("policy_violations") or []:
            _add(build_problems, "policy_violation", st, "", v if isinstance(v, str) else str(v), "status")
        for c in r["cases"]:
            if c["status"] == "pass" or c["slot"] not in per_slot:
                continue
            if b["status"] == "layout_error" and c["status"] == "compile_error":
                continue
            mine = per_slot[c["slot"]]
            _add(mine["problems"], c["status"], st, c["id"], c["message"], "status")
            for h in hints_of(c["message"]):
                _add(mine["hints"], hint_key(h), st, c["id"], c["message"], "hint")

    slots = []
    for slot in SLOTS:
        perf = None
        ratios = sorted(((st.results["slots"][slot]["perf_ratio"], st) for st in graded
                         if st.results["slots"].get(slot, {}).get("perf_ratio") is not None),
                        key=lambda p: (p[0], p[1].entry.student_id))
        if ratios:
            values = [r for r, _ in ratios]
            q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
            shown = [{"id": st.entry.student_id, "link": student_link(st), "ratio": round(r, 4)} for r, st in ratios]
            perf = {"count": len(values), "min": round(values[0], 4), "q1": round(q[0], 4), "median": round(q[1], 4),
                    "q3": round(q[2], 4), "max": round(values[-1], 4), "slowest": shown[:PERF_SHOWN],
                    "fastest": shown[::-1][:PERF_SHOWN]}
        problems, hints = _ordered(per_slot[slot]["problems"]), _ordered(per_slot[slot]["hints"])
        if problems or hints or perf:
            slots.append({"slot": slot, "problems": problems, "hints": hints, "perf": perf})
    return {"graded": len(graded), "build": _ordered(build_problems), "slots": slots}
