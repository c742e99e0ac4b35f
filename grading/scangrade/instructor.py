"""The instructor's files of a batch, beside the gradebook (batch.py calls these three hooks):

  --roster FILE         DIR/lms/ (lms_export.py) from the LMS's roster (roster.py), its grades in the
  [--assignment NAME]   roster's assignment column (the one NAME gives, else the only one; checked
                        before anything is graded) scaled to its points possible; batch.json "roster":
                        the matching (unmatched submissions, students without a submission, conflicts),
                        the roster names of matched submissions, the column and scale of each import
                        file, also listed on stderr and in report.html
  (always)              DIR/class_summary.json: what the class got wrong (class_summary.py), in report.html
  --similarity          DIR/similarity.json: pairs of similar submissions (similarity.py), in report.html;
                        information only, no grade changes
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from . import similarity as simmod
from .class_summary import class_summary
from .files import write_atomic
from .gradebook import Student
from .lms_export import check_columns, write_lms_exports
from .roster import RosterError, match, read_roster

log = logging.getLogger(__name__)
REPO = Path(__file__).resolve().parents[2]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("instructor", "LMS gradebooks and similar submissions "
                                                "(grading/docs/class.md)")
    g.add_argument("--roster", type=Path, help="the LMS's roster export (Canvas gradebook export CSV, Moodle grading "
                                               "worksheet or grader report CSV, or a CSV with an id/email column): "
                                               "writes DIR/lms/ gradebooks that LMS imports")
    g.add_argument("--assignment", help="with --roster: the roster's assignment column to fill, by its header "
                                        "(\"Scan lab (20456)\") or its name (\"Scan lab\"); default: the roster's "
                                        "only assignment column. A name the roster lacks adds a column (Canvas: a "
                                        "new assignment), with a warning")
    g.add_argument("--lms-slot-columns", action="store_true", help="with --roster: one more Canvas column per slot")
    g.add_argument("--similarity", action="store_true", help="compare every pair of submissions' slot files: "
                                                             "DIR/similarity.json and a report section (no grade "
                                                             "changes)")
    g.add_argument("--similarity-threshold", type=float, default=simmod.THRESHOLD,
                   help=f"least similarity listed, 0..1 (default {simmod.THRESHOLD})")


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reads the roster before anything is graded: a bad roster stops the batch at once."""
    if not 0 <= args.similarity_threshold <= 1:
        parser.error("--similarity-threshold is a fraction between 0 and 1")
    args.roster_doc = None
    if args.roster is not None:
        try:
            args.roster_doc = read_roster(args.roster)
            check_columns(args.roster_doc, args.assignment, args.lms_slot_columns)
        except RosterError as exc:
            parser.error(f"--roster: {exc}")


def argv(args: argparse.Namespace) -> list[str]:
    """These flags on a command line again (batch.py's Slurm jobs run with the run's own settings)."""
    out = []
    if args.roster is not None:
        out += ["--roster", str(args.roster.resolve())]
        out += ["--assignment", args.assignment] if args.assignment is not None else []
        out += ["--lms-slot-columns"] if args.lms_slot_columns else []
    if args.similarity:
        out += ["--similarity", "--similarity-threshold", f"{args.similarity_threshold:g}"]
    return out


def write_class_files(args: argparse.Namespace, students: list[Student], record: dict) -> None:
    """DIR/class_summary.json, and with their flags DIR/lms/ and DIR/similarity.json; fills record's
    "roster" and "similarity" (batch.json, read by report.html)."""
    out: Path = args.out
    real = [st for st in students if st.entry.kind != "repository" or st.outcome == "graded"]
    write_atomic(out / "class_summary.json", json.dumps(class_summary(students), indent=1) + "\n")
    roster = getattr(args, "roster_doc", None)
    if roster is not None:
        m = match(roster, [st.entry for st in real])
        lms = write_lms_exports(out, students, m, args.assignment, args.lms_slot_columns)
        record["roster"] = dict(m.record(), files=[p.relative_to(out).as_posix() for p in lms.paths],
                                columns=lms.columns, column_lines=lms.lines, column_warnings=lms.warnings)
        log.info("roster %s (%s): %d of %d student(s) matched a submission", roster.path.name, roster.kind,
                 len(m.matched), len(roster.students))
        for sid, why in sorted(m.unmatched.items()):
            log.info("UNMATCHED SUBMISSION %s: %s", sid, why)
        for c in record["roster"]["conflicts"]:
            log.info("CONFLICT %s: submissions %s (no grade exported)", c["roster_name"], " ".join(c["submissions"]))
        for w in record["roster"]["without_submission"]:
            log.info("NO SUBMISSION %s (%s)", w["roster_name"], w["roster_id"])
        for w in lms.warnings:
            log.warning("%s", w)
        for line in lms.lines:
            log.info("%s", line)
        for p in lms.paths:
            log.info("%s", p)
    if getattr(args, "similarity", False):
        sources = {}
        for st in real:
            try:
                sources[st.entry.student_id] = simmod.read_slot_files(st.entry.path)
            except OSError:
                continue
        doc = simmod.rank(sources, simmod.handout_fingerprints(REPO), args.similarity_threshold)
        write_atomic(out / "similarity.json", json.dumps(doc, indent=1) + "\n")
        record["similarity"] = {"file": "similarity.json", "threshold": doc["threshold"],
                                "pairs_above_threshold": doc["pairs_above_threshold"], "pairs": doc["pairs"][:20]}
        log.info("%s: %d pair(s) at or above %.2f (information only)", out / "similarity.json",
                 doc["pairs_above_threshold"], doc["threshold"])
