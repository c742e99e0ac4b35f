"""Gradebooks an LMS imports, written by batch.py --roster into DIR/lms/:

  grades.csv    every roster student (roster order), then every submission matched to nobody:
                name, lms_user_id, sis_user_id, sis_login_id, email, section, match (matched |
                no_submission | conflict | unmatched_submission), student_id, raw_name,
                submission_user_id and submission_id (the LMS's own numbers from the entry name:
                Canvas user id and submission id, Moodle participant id), total, max_total, percent,
                one column per slot (its points + perf points). Raw points, whatever the roster says.
  canvas.csv    (Canvas roster) Canvas's gradebook import: `Student, ID, SIS User ID, SIS Login ID,
                Section`, the assignment's column (below), with --lms-slot-columns one more per slot
                ("<assignment>: <slot>", the assignment's name without its id), then a `Points Possible`
                row under the header as Canvas's own export writes it. Canvas matches rows by ID, and
                a column by the assignment id in its header ("Name (1234)"); a header without an id
                creates an assignment of that name, whose points possible the Points Possible row gives.
  moodle.csv    (Moodle worksheet roster) the assignment's grading worksheet with Grade filled:
                `Identifier, Full name, Email address, Grade, Maximum Grade` (Assignment -> Upload
                grading worksheet; Moodle matches the Identifier "Participant N").
                (Moodle grader report roster) a gradebook import CSV: `Email address, ID number,
                <assignment column>` (Grades -> Import -> CSV file; map "Email address" to the user's
                email and the assignment column to a grade item, or to a new grade item).

The assignment column (choose_column) is one of the roster's (roster.py, Roster.assignments): the one
--assignment names (its whole header, or its name without Canvas's " (id)" or Moodle's "Module: " and
" (Real)"; case ignored), else the roster's only one; several, or none, without --assignment: refused
(RosterError, listing them). A name the roster lacks adds a column, with a warning: Canvas then creates
an assignment (refused when the name carries an id: Canvas creates none from "Name (1234)"), Moodle's
import maps it to a grade item. A grading worksheet is one assignment's: its Grade column.

Grades are the batch's `total` (points + performance points), scaled to the column's points possible
when the roster gives it (total x points possible / the suites' maximum total), rounded to 2 decimals;
without points possible (a new column, a grader report) raw points. Each file's column and scale is
one line (LmsFiles.lines: batch output, batch.json, report.html).

A student without a submission, or with two (a conflict), gets an empty grade cell: Canvas and Moodle
leave an empty cell's grade as it was, so nothing is entered for them by mistake. Cells go through
gradebook.gradebook_cell (no spreadsheet formulas).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from .files import write_atomic
from .gradebook import Student, gradebook_cell
from .results import fmt_points
from .roster import AssignmentColumn, Match, Roster, RosterError, _norm, entry_lms_ids
from .vocab import SLOTS

IMPORT_FILES = {"canvas": "canvas.csv", "moodle_worksheet": "moodle.csv", "moodle_gradebook": "moodle.csv"}
_WITH_ID = re.compile(r"\(\d+\)\s*$")


@dataclass
class Target:
    """The column an import file fills: its header, its points possible in the roster (None: not
    given), new (not in the roster: the import adds it) and the warning that goes with that."""
    header: str
    points: float | None = None
    new: bool = False
    warning: str = ""

    @property
    def name(self) -> str:
        """The assignment's name without Canvas's " (id)"."""
        return _WITH_ID.sub("", self.header).strip() or self.header


@dataclass
class LmsFiles:
    """What write_lms_exports wrote: the files; lines, one per import file (and one for new slot
    columns) saying which column it fills and how its grades are scaled; warnings (a column the roster
    lacks, an --assignment a worksheet does not use); columns, the import file's column for batch.json."""
    paths: list[Path] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    columns: list[dict] = field(default_factory=list)


def _listed(columns: list[AssignmentColumn]) -> str:
    return ", ".join(f"'{c.header}'" for c in columns) or "none"


def find_columns(roster: Roster, name: str) -> list[AssignmentColumn]:
    """The roster's assignment columns a name gives: by whole header, else by any of its names."""
    key = _norm(name)
    exact = [c for c in roster.assignments if _norm(c.header) == key]
    return exact or [c for c in roster.assignments if key in {_norm(n) for n in c.names}]


def choose_column(roster: Roster, assignment: str | None) -> Target | None:
    """The column the roster's import file fills (module docstring); None for a plain roster (no
    import file). Raises RosterError when it cannot be chosen."""
    if roster.kind not in IMPORT_FILES:
        return None
    file = IMPORT_FILES[roster.kind]
    where = f"{roster.path.name} ({roster.kind})"
    if roster.kind == "moodle_worksheet":
        grade = roster.assignments[0]
        warning = (f"--assignment {assignment!r}: a grading worksheet holds one assignment's grades; {file} fills "
                   f"its Grade column") if assignment else ""
        return Target(grade.header, grade.points, warning=warning)
    if assignment is None:
        if len(roster.assignments) == 1:
            c = roster.assignments[0]
            return Target(c.header, c.points)
        if not roster.assignments:
            raise RosterError(f"{where} has no assignment column: pass --assignment NAME ({file} adds a column of "
                              f"that name{': Canvas creates the assignment' if roster.kind == 'canvas' else ''})")
        raise RosterError(f"{where} has {len(roster.assignments)} assignment columns ({_listed(roster.assignments)}): "
                          f"pass --assignment with the one to fill (its header, or its name without "
                          f"{'the (id)' if roster.kind == 'canvas' else 'Module: and (Real)'})")
    found = find_columns(roster, assignment)
    if len(found) == 1:
        return Target(found[0].header, found[0].points)
    if found:
        raise RosterError(f"--assignment {assignment!r} names {len(found)} columns of {where} ({_listed(found)}): "
                          f"pass the whole header of the one to fill")
    if roster.kind == "canvas" and _WITH_ID.search(assignment):
        raise RosterError(f"--assignment {assignment!r}: {where} has no such column, and Canvas creates no "
                          f"assignment from a header with an id; its assignment columns: "
                          f"{_listed(roster.assignments)} (or pass a name without the id for a new assignment)")
    header = assignment.strip()
    if not header:
        raise RosterError("--assignment is empty")
    then = "Canvas creates a new assignment of that name on import" if roster.kind == "canvas" else \
        "map it to the grade item when importing"
    return Target(header, None, new=True,
                  warning=f"--assignment {header!r} is no column of {where} (its assignment columns: "
                          f"{_listed(roster.assignments)}): {file} adds a column {header!r}; {then}")


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


def slot_column(roster: Roster, target: Target, slot: str) -> Target:
    """--lms-slot-columns: the column "<assignment name>: <slot>", the roster's when it has one (a
    second import fills the assignments the first created), else a new one."""
    name = f"{target.name}: {slot}"
    found = find_columns(roster, name)
    if len(found) > 1:
        raise RosterError(f"{roster.path.name} has {len(found)} columns named {name!r} ({_listed(found)})")
    return Target(found[0].header, found[0].points) if found else Target(name, None, new=True)


def check_columns(roster: Roster, assignment: str | None, slot_columns: bool) -> Target | None:
    """choose_column (and with slot_columns slot_column) before anything is graded: raises their
    RosterError. Returns the assignment's column."""
    target = choose_column(roster, assignment)
    for slot in SLOTS if target is not None and roster.kind == "canvas" and slot_columns else ():
        slot_column(roster, target, slot)
    return target


def scaling(file: str, target: Target, possible: float) -> tuple[float, str]:
    """(factor from raw points to the column's, the line saying so) for one import file's column."""
    column = f"{'new column' if target.new else 'column'} {target.header!r}"
    if target.new:
        given = " (Canvas gives the new assignment that many points possible)" if file == "canvas.csv" else ""
        return 1.0, f"{file}: {column}, raw points out of {_grade(possible)}{given}"
    if target.points is None or target.points <= 0 or possible <= 0:
        why = "the roster gives no points possible" if target.points is None else \
            f"points possible {_grade(target.points)}" if possible > 0 else "no graded submission"
        return 1.0, f"{file}: {column}, raw points out of {_grade(possible)} ({why}: not scaled)"
    if abs(target.points - possible) < 1e-9:
        return 1.0, f"{file}: {column}, scores out of {_grade(possible)} = its points possible (not scaled)"
    return target.points / possible, \
        f"{file}: {column}, scores scaled to {_grade(target.points)} points (raw out of {_grade(possible)})"


def write_lms_exports(out: Path, students: list[Student], m: Match, assignment: str | None = None,
                      slot_columns: bool = False) -> LmsFiles:
    """DIR/lms/grades.csv and the roster's own LMS format (module docstring). Raises RosterError, before
    writing anything, when the assignment column cannot be chosen."""
    by_id = {st.entry.student_id: st for st in students}
    owner = {i: sid for sid, i in m.matched.items()}
    roster = m.roster
    target = choose_column(roster, assignment)
    possible, slot_possible = max_points(students)
    slots = [s for s in SLOTS if s in slot_possible]
    slot_targets = {slot: slot_column(roster, target, slot) for slot in slots} \
        if target is not None and roster.kind == "canvas" and slot_columns else {}
    folder = out / "lms"
    done = LmsFiles()

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
    done.paths.append(folder / "grades.csv")
    if target is None:
        return done

    file = IMPORT_FILES[roster.kind]
    factor, line = scaling(file, target, possible)
    done.lines.append(line)
    done.warnings += [target.warning] if target.warning else []
    done.columns.append({"file": f"lms/{file}", "column": target.header, "new": target.new,
                         "points_possible": target.points, "raw_possible": possible, "factor": round(factor, 6)})

    def roster_scored(i: int) -> dict | None:
        return None if i in m.conflicts or i not in owner else _scored(by_id.get(owner[i]))

    def roster_grade(i: int) -> str:
        s = roster_scored(i)
        return _grade(s["total"] * factor) if s else ""

    if roster.kind == "canvas":
        extra: list[tuple[str, str, float]] = []    # (header, slot, factor) of each slot column
        for slot, t in slot_targets.items():
            f, slot_line = scaling(file, t, slot_possible[slot])
            extra.append((t.header, slot, f))
            done.lines += [] if t.new else [slot_line]
        added = [h for (h, _, _), t in zip(extra, slot_targets.values()) if t.new]
        if added:
            done.lines.append(f"{file}: {len(added)} new slot column(s) ({', '.join(map(repr, added))}), raw points "
                              f"(Canvas gives each new assignment the slot's maximum as points possible)")
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", target.header, *[h for h, _, _ in extra]],
                ["    Points Possible", "", "", "", "", _grade(possible * factor),
                 *[_grade(slot_possible[slot] * f) for _, slot, f in extra]]]
        for i, rs in enumerate(roster.students):
            s = roster_scored(i)
            cells = [roster_grade(i)]
            cells += [_grade(s["slots"][slot][0] * f) if s and slot in s["slots"] else "" for _, slot, f in extra]
            rows.append([rs.name, rs.lms_user_id, rs.sis_user_id, rs.sis_login_id, rs.section, *cells])
    elif roster.kind == "moodle_worksheet":
        rows = [["Identifier", "Full name", "Email address", "Grade", "Maximum Grade"]]
        for i, rs in enumerate(roster.students):
            rows.append([f"Participant {rs.lms_user_id}", rs.name, rs.email, roster_grade(i), _grade(possible * factor)])
    else:   # moodle_gradebook
        rows = [["Email address", "ID number", target.header]]
        for i, rs in enumerate(roster.students):
            rows.append([rs.email, rs.row.get("ID number", ""), roster_grade(i)])
    write_atomic(folder / file, _csv(rows))
    done.paths.append(folder / file)
    return done
