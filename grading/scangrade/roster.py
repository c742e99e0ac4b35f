"""A class roster as the LMS exports it, and which submission belongs to which student on it.

batch.py --roster FILE reads one of these (the kind is recognised from the header row):

  canvas            Canvas's gradebook export (Grades -> Export): `Student, ID, SIS User ID, SIS Login
                    ID, Section, <assignments...>`, a "Points Possible" row under the header (not a
                    student: it gives each assignment column's points possible)
  moodle_worksheet  Moodle's assignment grading worksheet (Assignment -> Download grading worksheet):
                    `Identifier` ("Participant 123456"), `Full name`, `Email address`, `Grade`,
                    `Maximum Grade`, ...
  moodle_gradebook  Moodle's grader report export or participants download: `First name`, `Last name`
                    (or `Surname`), `ID number`, `Email address`, ...
  plain             any CSV with a column id, student_id, sid, username, login or email (name optional)

Assignment columns (Roster.assignments, the columns lms_export.py can fill): Canvas's `Name (1234)`
columns (the assignment's title and id; its points possible from the Points Possible row); a
worksheet's `Grade` (points possible: `Maximum Grade`); a grader report's `Module: Name (Real)` columns
(no points possible: the export has none); a plain roster has none.

Matching is exact, never guessed. A submission's keys come from its entry name (scangrade/lms.py):
  1. the LMS's own number: Canvas `..._USERID_SUBMISSIONID_...` -> the roster's `ID`; Moodle
     `Full Name_PARTICIPANTID_assignsubmission_...` -> the worksheet's `Participant PARTICIPANTID`
  2. an id: the batch's student id or the entry name without its archive suffix -> any id column of
     the roster (SIS User ID, SIS Login ID, ID number, Username, id, email or the part before its @)
  3. Moodle only, when the roster has no participant ids: the full name (case and spaces ignored)
The first tier with any candidate decides: one roster student is a match; two or more is
`ambiguous` (listed, not matched). Two submissions matching one student are a `conflict`: neither
is exported as that student's grade. Comparisons ignore case and surrounding spaces.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from .lms import _CANVAS, _MOODLE, Entry
from .vocab import strip_archive_suffix

KINDS = ("canvas", "moodle_worksheet", "moodle_gradebook", "plain")
MAX_ROSTER_BYTES = 16 * 1024 * 1024
PLAIN_ID_COLUMNS = ("id", "student_id", "sid", "username", "login", "user", "email")


class RosterError(ValueError):
    pass


@dataclass
class RosterStudent:
    name: str
    lms_user_id: str = ""       # Canvas ID, Moodle participant id (worksheet)
    sis_user_id: str = ""
    sis_login_id: str = ""
    email: str = ""
    section: str = ""
    ids: list[str] = field(default_factory=list)     # every other id column's value
    row: dict = field(default_factory=dict)           # the row as read

    def keys(self, kind: str) -> dict[int, set[str]]:
        tiers: dict[int, set[str]] = {1: set(), 2: set(), 3: set()}
        if self.lms_user_id:
            tiers[1].add(("participant:" if kind == "moodle_worksheet" else "lmsid:") + _norm(self.lms_user_id))
        for v in (self.sis_user_id, self.sis_login_id, self.email, *self.ids):
            if v:
                tiers[2].add("id:" + _norm(v))
                if "@" in v:
                    tiers[2].add("id:" + _norm(v.split("@")[0]))
        if self.name and kind == "moodle_gradebook":
            tiers[3].add("name:" + _norm(self.name))
        return tiers


@dataclass
class AssignmentColumn:
    """A roster column holding one assignment's grades: its header as the LMS wrote it, the names
    --assignment may give it (the header, the name without Canvas's " (id)" or Moodle's "Module: ...
    (Real)"), and its points possible (None: the roster does not say)."""
    header: str
    names: tuple[str, ...]
    points: float | None = None

    @property
    def name(self) -> str:
        """The assignment's name without the LMS's decorations (the last of names)."""
        return self.names[-1]


@dataclass
class Roster:
    kind: str
    path: Path
    students: list[RosterStudent]
    assignments: list[AssignmentColumn] = field(default_factory=list)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip()).casefold()


def _header_map(header: list[str]) -> dict[str, int]:
    return {_norm(h.lstrip("\ufeff")): i for i, h in enumerate(header)}


_CANVAS_ASSIGNMENT = re.compile(r"^(?P<name>.*\S)\s*\((?P<id>\d+)\)$")
_MOODLE_ITEM = re.compile(r"^(?P<module>[^:]+):\s*(?P<name>.*?\S)\s*\((?P<display>[^()]+)\)$")


def points_value(text: str) -> float | None:
    """A points-possible cell as a number ("100.00" -> 100.0); None when it is none ("(read only)", "")."""
    try:
        v = float(text.strip())
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def _canvas_assignments(header: list[str], rows: list[list[str]]) -> list[AssignmentColumn]:
    possible = next((r for r in rows if r and _norm(r[0]) == "points possible"), [])
    found = []
    for i, h in enumerate(header):
        m = _CANVAS_ASSIGNMENT.match(h.strip())
        if m:
            found.append(AssignmentColumn(h.strip(), (h.strip(), m["name"]),
                                          points_value(possible[i]) if i < len(possible) else None))
    return found


def _moodle_items(header: list[str]) -> list[AssignmentColumn]:
    found = []
    for h in header:
        m = _MOODLE_ITEM.match(h.strip())
        if m:
            found.append(AssignmentColumn(h.strip(), (h.strip(), f"{m['module'].strip()}: {m['name']}", m["name"])))
    return found


def read_roster(path: Path) -> Roster:
    """Read an LMS roster export (module docstring). Raises RosterError when it is not one."""
    try:
        raw = path.read_bytes()[: MAX_ROSTER_BYTES + 1]
    except OSError as exc:
        raise RosterError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_ROSTER_BYTES:
        raise RosterError(f"{path} is larger than {MAX_ROSTER_BYTES} bytes: not a roster")
    text = raw.decode("utf-8-sig", errors="replace")
    first = text.splitlines()[0] if text.strip() else ""
    delimiter = max(",;\t", key=first.count) if first else ","
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in r)]
    if not rows:
        raise RosterError(f"{path} is empty")
    cols = _header_map(rows[0])

    def get(row: list[str], *names: str) -> str:
        for n in names:
            i = cols.get(n)
            if i is not None and i < len(row):
                return row[i].strip()
        return ""

    students: list[RosterStudent] = []
    if {"student", "id"} <= cols.keys() and ({"sis user id", "sis login id", "section"} & cols.keys()):
        kind = "canvas"
        for row in rows[1:]:
            name, uid = get(row, "student"), get(row, "id")
            if not uid:      # the Points Possible row and Canvas's other unnamed rows carry no ID
                continue
            students.append(RosterStudent(name, uid, get(row, "sis user id"), get(row, "sis login id"),
                                          section=get(row, "section"), row=dict(zip(rows[0], row))))
        assignments = _canvas_assignments(rows[0], rows[1:])
    elif "identifier" in cols and "full name" in cols:
        kind = "moodle_worksheet"
        for row in rows[1:]:
            ident = get(row, "identifier")
            m = re.search(r"(\d+)\s*$", ident)
            if not m:
                continue
            students.append(RosterStudent(get(row, "full name"), m[1], email=get(row, "email address"),
                                          ids=[v for v in [get(row, "id number")] if v], row=dict(zip(rows[0], row))))
        maxima = [points_value(get(row, "maximum grade")) for row in rows[1:]]
        assignments = [AssignmentColumn("Grade", ("Grade",), next((v for v in maxima if v is not None), None))]
    elif "first name" in cols and ({"last name", "surname"} & cols.keys()):
        kind = "moodle_gradebook"
        for row in rows[1:]:
            name = f"{get(row, 'first name')} {get(row, 'last name', 'surname')}".strip()
            students.append(RosterStudent(name, email=get(row, "email address", "email"),
                                          ids=[v for v in [get(row, "id number"), get(row, "username")] if v],
                                          row=dict(zip(rows[0], row))))
        assignments = _moodle_items(rows[0])
    elif set(PLAIN_ID_COLUMNS) & cols.keys():
        kind = "plain"
        for row in rows[1:]:
            ids = [get(row, c) for c in PLAIN_ID_COLUMNS if c != "email" and get(row, c)]
            students.append(RosterStudent(get(row, "name", "full name", "student"), email=get(row, "email"),
                                          section=get(row, "section"), ids=ids, row=dict(zip(rows[0], row))))
        assignments = []
    else:
        raise RosterError(f"{path}: the header ({', '.join(rows[0][:8])}) is not a Canvas gradebook export, a "
                          f"Moodle grading worksheet or grader report, or a CSV with one of the columns "
                          f"{', '.join(PLAIN_ID_COLUMNS)}")
    return Roster(kind, path, students, assignments)


def entry_lms_ids(raw_name: str) -> dict[str, str]:
    """The LMS's own numbers in an entry name: Canvas user and submission id, Moodle participant id."""
    stem = strip_archive_suffix(raw_name)
    m = _MOODLE.match(stem)
    if m:
        return {"lms_user_id": m["pid"], "lms_submission_id": "", "lms_name": m["name"]}
    m = _CANVAS.match(stem)
    if m:
        return {"lms_user_id": m["user"], "lms_submission_id": m["sub"], "lms_name": m["login"]}
    return {"lms_user_id": "", "lms_submission_id": "", "lms_name": ""}


def entry_keys(entry: Entry) -> dict[int, set[str]]:
    ids = entry_lms_ids(entry.raw_name)
    tiers: dict[int, set[str]] = {1: set(), 2: set(), 3: set()}
    if entry.lms == "canvas" and ids["lms_user_id"]:
        tiers[1].add("lmsid:" + ids["lms_user_id"])
    if entry.lms == "moodle" and ids["lms_user_id"]:
        tiers[1].add("participant:" + ids["lms_user_id"])
        tiers[3].add("name:" + _norm(ids["lms_name"]))
    tiers[2] |= {"id:" + _norm(entry.student_id), "id:" + _norm(strip_archive_suffix(entry.raw_name))}
    return tiers


@dataclass
class Match:
    """Who each submission is: matched[student_id] -> roster index; the rest listed with why."""
    roster: Roster
    matched: dict[str, int] = field(default_factory=dict)
    unmatched: dict[str, str] = field(default_factory=dict)       # student_id -> why
    conflicts: dict[int, list[str]] = field(default_factory=dict)  # roster index -> student ids

    def without_submission(self) -> list[int]:
        taken = set(self.matched.values()) | set(self.conflicts)
        return [i for i in range(len(self.roster.students)) if i not in taken]

    def record(self) -> dict:
        st = self.roster.students
        return {"roster": str(self.roster.path), "kind": self.roster.kind, "students": len(st),
                "matched": len(self.matched),
                "names": {sid: st[i].name for sid, i in sorted(self.matched.items()) if st[i].name},
                "unmatched_submissions": [{"student_id": k, "why": v} for k, v in sorted(self.unmatched.items())],
                "conflicts": [{"roster_name": st[i].name, "roster_id": st[i].lms_user_id or st[i].sis_user_id,
                               "submissions": ids} for i, ids in sorted(self.conflicts.items())],
                "without_submission": [{"roster_name": st[i].name,
                                        "roster_id": st[i].lms_user_id or st[i].sis_user_id or
                                        (st[i].ids[0] if st[i].ids else st[i].email)}
                                       for i in self.without_submission()]}


def match(roster: Roster, entries: list[Entry]) -> Match:
    """Map every entry to at most one roster student (module docstring: exact, tiered, never guessed)."""
    index: dict[str, list[int]] = {}
    for i, s in enumerate(roster.students):
        for keys in s.keys(roster.kind).values():
            for k in keys:
                index.setdefault(k, [])
                if i not in index[k]:
                    index[k].append(i)
    result = Match(roster)
    claimed: dict[int, list[str]] = {}
    for e in entries:
        why = "no roster student has this submission's id or name"
        for tier, keys in sorted(entry_keys(e).items()):
            found = sorted({i for k in keys for i in index.get(k, [])})
            if len(found) == 1:
                claimed.setdefault(found[0], []).append(e.student_id)
                break
            if len(found) > 1:
                names = ", ".join(roster.students[i].name or "?" for i in found[:4])
                why = f"ambiguous: {len(found)} roster students match ({names})"
                break
        else:
            result.unmatched[e.student_id] = why
            continue
        if len(found) > 1:
            result.unmatched[e.student_id] = why
    for i, ids in claimed.items():
        if len(ids) == 1:
            result.matched[ids[0]] = i
        else:
            result.conflicts[i] = sorted(ids)
    return result
