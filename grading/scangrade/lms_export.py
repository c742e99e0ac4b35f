"""Gradebooks an LMS imports, written by batch.py --roster into DIR/lms/:

  grades.csv    every roster student (roster order), then every submission matched to nobody:
                name, lms_user_id, sis_user_id, sis_login_id, email, section, match (matched |
                no_submission | conflict | unmatched_submission), student_id, raw_name,
                submission_user_id and submission_id (the LMS's own numbers from the entry name:
                Canvas user id and submission id, Moodle participant id), total, max_total, percent,
                one column per slot (its points + perf points).
  canvas.csv    (Canvas roster) Canvas's gradebook import: `Student, ID, SIS User ID, SIS Login ID,
                Section`, one column named after the assignment (--assignment; a name Canvas does not
                know creates that assignment), with --lms-slot-columns one more per slot
                ("<assignment>: <slot>"), then a `Points Possible` row under the header as Canvas's
                own export writes it (it gives a new assignment its points possible). Canvas matches
                rows by ID. --assignment "Name (1234)", as Canvas's export heads an existing
                assignment's column, fills that assignment instead of creating one.
  moodle.csv    (Moodle worksheet roster) the assignment's grading worksheet with Grade filled:
                `Identifier, Full name, Email address, Grade, Maximum Grade` (Assignment -> Upload
                grading worksheet; Moodle matches the Identifier "Participant N").
                (Moodle grader report roster) a gradebook import CSV: `Email address, ID number,
                <assignment>` (Grades -> Import -> CSV file; map "Email address" to the user's email
                and the assignment column to the assignment).

A student without a submission, or with two (a conflict), gets an empty grade cell: Canvas and Moodle
leave an empty cell's grade as it was, so nothing is entered for them by mistake. Grades are the
batch's `total` (points + performance points), rounded to 2 decimals. Cells go through
gradebook.gradebook_cell (no spreadsheet formulas).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .files import write_atomic
from .gradebook import Student, gradebook_cell
from .results import fmt_points
from .roster import Match, entry_lms_ids
from .vocab import SLOTS


def _csv(rows: list[list[object]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerows([[gradebook_cell(c) for c in row] for row in rows])
    return buf.getvalue()


def _grade(x: float) -> str:
    return fmt_points(round(x, 2))


def _scored(st: Student | None) -> dict | None:
    """(total, max_total, per slot (points, max)) of a graded student, else None."""
    if st is None or st.results is None or st.outcome != "graded":
        return None
    sc = st.results["score"]
    slots = {s: (v["points"] + v.get("perf_points", 0), v["max_points"] + v.get("perf_max_points", 0))
             for s, v in st.results["slots"].items()}
    return {"total": sc["total"], "max_total": sc["max_total"], "slots": slots}


def max_points(students: list[Student]) -> tuple[float, dict[str, float]]:
    """The assignment's points possible (and per slot's) from the graded results."""
    total, slots = 0.0, {}
    for st in students:
        s = _scored(st)
        if s:
            total = max(total, s["max_total"])
            for k, (_, m) in s["slots"].items():
                slots[k] = max(slots.get(k, 0.0), m)
    return total, slots


def write_lms_exports(out: Path, students: list[Student], m: Match, assignment: str = "ScanGrade",
                      slot_columns: bool = False) -> list[Path]:
    """DIR/lms/grades.csv and the roster's own LMS format (module docstring). Returns the paths."""
    by_id = {st.entry.student_id: st for st in students}
    owner = {i: sid for sid, i in m.matched.items()}
    roster = m.roster
    possible, slot_possible = max_points(students)
    slots = [s for s in SLOTS if s in slot_possible]
    folder = out / "lms"
    written = []

    rows: list[list[object]] = [["name", "lms_user_id", "sis_user_id", "sis_login_id", "email", "section", "match",
                                 "student_id", "raw_name", "submission_user_id", "submission_id", "total",
                                 "max_total", "percent", *slots]]

    def grade_cells(st: Student | None) -> list[object]:
        s = _scored(st)
        if not s:
            return ["", "", "", *["" for _ in slots]]
        pct = 100 * s["total"] / s["max_total"] if s["max_total"] else 0.0
        return [_grade(s["total"]), _grade(s["max_total"]), f"{pct:.1f}",
                *[_grade(s["slots"][k][0]) if k in s["slots"] else "" for k in slots]]

    def sub_cells(st: Student | None) -> list[object]:
        if st is None:
            return ["", "", "", ""]
        ids = entry_lms_ids(st.entry.raw_name)
        return [st.entry.student_id, st.entry.raw_name, ids["lms_user_id"], ids["lms_submission_id"]]

    for i, rs in enumerate(roster.students):
        who = [rs.name, rs.lms_user_id, rs.sis_user_id, rs.sis_login_id, rs.email, rs.section]
        if i in m.conflicts:
            rows.append([*who, "conflict", " ".join(m.conflicts[i]), "", "", "", *grade_cells(None)])
            continue
        st = by_id.get(owner[i]) if i in owner else None
        rows.append([*who, "matched" if st else "no_submission", *sub_cells(st), *grade_cells(st)])
    for sid in sorted(m.unmatched):
        st = by_id.get(sid)
        rows.append(["", "", "", "", "", "", "unmatched_submission", *sub_cells(st), *grade_cells(st)])
    write_atomic(folder / "grades.csv", _csv(rows))
    written.append(folder / "grades.csv")

    def roster_grade(i: int) -> dict | None:
        return None if i in m.conflicts or i not in owner else _scored(by_id.get(owner[i]))

    if roster.kind == "canvas":
        extra = [f"{assignment}: {s}" for s in slots] if slot_columns else []
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment, *extra],
                ["    Points Possible", "", "", "", "", _grade(possible),
                 *([_grade(slot_possible[s]) for s in slots] if slot_columns else [])]]
        for i, rs in enumerate(roster.students):
            s = roster_grade(i)
            cells = [_grade(s["total"]) if s else ""]
            if slot_columns:
                cells += [_grade(s["slots"][k][0]) if s and k in s["slots"] else "" for k in slots]
            rows.append([rs.name, rs.lms_user_id, rs.sis_user_id, rs.sis_login_id, rs.section, *cells])
        write_atomic(folder / "canvas.csv", _csv(rows))
        written.append(folder / "canvas.csv")
    elif roster.kind == "moodle_worksheet":
        rows = [["Identifier", "Full name", "Email address", "Grade", "Maximum Grade"]]
        for i, rs in enumerate(roster.students):
            s = roster_grade(i)
            rows.append([f"Participant {rs.lms_user_id}", rs.name, rs.email, _grade(s["total"]) if s else "",
                         _grade(possible)])
        write_atomic(folder / "moodle.csv", _csv(rows))
        written.append(folder / "moodle.csv")
    elif roster.kind == "moodle_gradebook":
        rows = [["Email address", "ID number", assignment]]
        for i, rs in enumerate(roster.students):
            s = roster_grade(i)
            rows.append([rs.email, rs.row.get("ID number", ""), _grade(s["total"]) if s else ""])
        write_atomic(folder / "moodle.csv", _csv(rows))
        written.append(folder / "moodle.csv")
    return written
