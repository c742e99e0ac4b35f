"""Entries of a folder of submissions (an LMS export) and the student ids batch.py files them under.

Student ids (a stable folder name; the raw entry name is kept in the gradebook):
  Canvas      lastfirst_[LATE_]USERID_SUBMISSIONID_file.zip        -> lastfirst_USERID
  Moodle      Full Name_PARTICIPANTID_assignsubmission_file_...   -> full-name_PARTICIPANTID
  Gradescope  submission_SUBMISSIONID (folder)                      -> the submitter's SID from
              SUBMISSIONS_DIR/submission_metadata.yml when present, else submission_SUBMISSIONID
  anything else: the name without its archive suffix, lower case, runs of characters other than
  a-z 0-9 . _ - replaced by '-'. Ids are at most 64 characters; when two entries get the same id the
  later ones (by raw name) get -2, -3, ... and a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .vocab import JUNK_NAMES, TAR_SUFFIXES, strip_archive_suffix

MAX_ID = 64


@dataclass
class Entry:
    raw_name: str
    path: Path
    kind: str                       # folder | zip | tar | other
    student_id: str = ""
    lms: str = "plain"              # canvas | moodle | gradescope | plain
    notes: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip(".-_")
    s = re.sub(r"-{2,}", "-", s)
    return s[:MAX_ID].rstrip(".-_") or "submission"


_CANVAS = re.compile(r"^(?P<login>[A-Za-z0-9]+)_(?:late_)?(?P<user>\d+)_(?P<sub>\d+)(?:_.*)?$", re.IGNORECASE)
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<pid>\d+)_assignsubmission_[a-z]+_?.*$", re.IGNORECASE)
_GRADESCOPE = re.compile(r"^submission_(?P<sub>\d+)$")


def read_gradescope_metadata(folder: Path) -> dict[str, str]:
    """submission_<id> -> the first submitter's SID (else e-mail user) from Gradescope's
    submission_metadata.yml (Ruby-style keys: `:submitters:` lists of `:sid:`, `:email:`)."""
    try:
        doc = yaml.safe_load((folder / "submission_metadata.yml").read_text(errors="replace"))
    except (OSError, yaml.YAMLError):
        return {}
    found: dict[str, str] = {}
    for sub, info in (doc.items() if isinstance(doc, dict) else ()):
        submitters = info.get(":submitters") if isinstance(info, dict) else None
        people = [p for p in submitters if isinstance(p, dict)] if isinstance(submitters, list) else []
        sids = [str(p[":sid"]) for p in people if p.get(":sid")]
        emails = [str(p[":email"]) for p in people if p.get(":email")]
        if sids or emails:
            found[str(sub)] = sids[0] if sids else emails[0].split("@")[0]
    return found


def student_id(raw_name: str, gradescope: dict[str, str] | None = None) -> tuple[str, str]:
    """(id, lms) for an entry name (the rules are in the module docstring)."""
    stem = strip_archive_suffix(raw_name)
    m = _MOODLE.match(stem)
    if m:
        return slug(f"{m['name']}_{m['pid']}"), "moodle"
    m = _CANVAS.match(stem)
    if m:
        return slug(f"{m['login']}_{m['user']}"), "canvas"
    m = _GRADESCOPE.match(stem)
    if m:
        who = (gradescope or {}).get(stem)
        return slug(who) if who else slug(stem), "gradescope"
    return slug(stem), "plain"


def discover(folder: Path, skip: set[Path]) -> list[Entry]:
    """Every entry of SUBMISSIONS_DIR (junk and the batch's own output skipped), with unique ids."""
    gradescope = read_gradescope_metadata(folder)
    entries = []
    for p in sorted(folder.iterdir(), key=lambda q: q.name):
        if p.name in JUNK_NAMES or p.name.startswith(".") or p.name == "submission_metadata.yml":
            continue
        if p.resolve() in skip:
            continue
        lower = p.name.lower()
        kind = ("folder" if p.is_dir() else "zip" if lower.endswith(".zip")
                else "tar" if lower.endswith(TAR_SUFFIXES) else "other")
        sid, lms = student_id(p.name, gradescope)
        entries.append(Entry(p.name, p, kind, sid, lms))
    seen: dict[str, int] = {}
    for e in entries:
        n = seen.get(e.student_id, 0) + 1
        seen[e.student_id] = n
        if n > 1:
            base = e.student_id[: MAX_ID - 4]
            e.notes.append(f"id {e.student_id} is also another entry's: this one is {base}-{n}")
            e.student_id = f"{base}-{n}"
    return entries
