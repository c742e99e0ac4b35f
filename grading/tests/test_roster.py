"""--roster: reading each LMS's own roster export (grading/tests/rosters/, in the formats Canvas and
Moodle write), matching submissions to students exactly (never guessed), and the gradebooks each LMS
imports (scangrade/roster.py, scangrade/lms_export.py): the roster's assignment column chosen by
--assignment or as the only one, grades scaled to its points possible; batches with the fake judge."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from markupsafe import escape

import fixtures
from conftest import TESTS
from scangrade import gradebook
from scangrade.lms import Entry, student_id
from scangrade.lms_export import choose_column, write_lms_exports
from scangrade.roster import RosterError, entry_lms_ids, match, read_roster
from test_batch import GOOD, fake_env, run_batch, write_zip   # noqa: F401 (fake_env: the fake judge's fixture)

ROSTERS = TESTS / "rosters"


def entry(raw: str, sid: str | None = None) -> Entry:
    """An entry as lms.discover makes it (sid: the id discover gives a second entry with the same id)."""
    got, lms = student_id(raw)
    return Entry(raw, Path("/nowhere") / raw, "zip", sid or got, lms)


def graded(e: Entry, tmp: Path, total_fail: int = 0) -> gradebook.Student:
    """A graded student: every case passes except the first `total_fail` hillis_steele ones."""
    cases = [fixtures.make_case(s, n, d) for s in fixtures.SLOTS for n in (1, 1025) for d in ("int32", "float32")]
    for c in cases[:total_fail]:
        c.update(status="fail", points=0, message="fail: x")
    doc = fixtures.make_results(cases, perf={"single_pass": (2.5, 5, 0.5)})
    st = gradebook.Student(e, tmp / e.student_id, outcome="graded", results=doc)
    st.flags = gradebook.flags_of(doc)
    return st


def read_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


# --- reading ---------------------------------------------------------------------------------------

def test_canvas_export_is_read_and_points_possible_row_skipped():
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    assert r.kind == "canvas"
    assert [s.name for s in r.students] == ["Doe, Jane", "Smith, John", "Nguyen, An", "Student, Test"]
    jane = r.students[0]
    assert (jane.lms_user_id, jane.sis_user_id, jane.sis_login_id, jane.section) == \
        ("1001", "S0001001", "jdoe", "CS 484 Section 1")
    # the assignment columns (title and id), their points possible from the Points Possible row; the
    # totals ("Current Points", "Final Score", ...) are none
    assert [(c.header, c.name, c.points) for c in r.assignments] == \
        [("Homework 1 (20431)", "Homework 1", 10.0), ("Scan lab (20456)", "Scan lab", 100.0)]


def test_assignment_columns_of_moodle_and_plain_rosters():
    w = read_roster(ROSTERS / "moodle_grading_worksheet.csv")
    assert [(c.header, c.points) for c in w.assignments] == [("Grade", 100.0)]
    g = read_roster(ROSTERS / "moodle_grader_report.csv")
    assert [(c.header, c.name, c.points) for c in g.assignments] == [("Assignment: Scan lab (Real)", "Scan lab", None)]
    assert read_roster(ROSTERS / "plain_roster.csv").assignments == []


def test_moodle_worksheet_grader_report_and_plain_are_read(tmp_path):
    w = read_roster(ROSTERS / "moodle_grading_worksheet.csv")
    assert w.kind == "moodle_worksheet" and [s.lms_user_id for s in w.students] == ["4", "7", "9"]
    assert w.students[2].name == "Zoë O'Brien" and w.students[0].email == "jane.doe@uni.example"
    g = read_roster(ROSTERS / "moodle_grader_report.csv")
    assert g.kind == "moodle_gradebook" and [s.name for s in g.students] == ["Jane Doe", "Ana Lima", "Sam Lee", "Sam Lee"]
    p = read_roster(ROSTERS / "plain_roster.csv")
    assert p.kind == "plain" and p.students[0].ids == ["alovelace"] and p.students[0].email == "ada@uni.example"
    # a BOM and semicolons (a spreadsheet's CSV in some locales) are read too
    semi = tmp_path / "semi.csv"
    semi.write_bytes("\ufeffname;student_id\nAda;alovelace\n".encode())
    assert read_roster(semi).students[0].ids == ["alovelace"]


def test_a_file_that_is_no_roster_is_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("foo,bar\n1,2\n")
    with pytest.raises(RosterError, match="not a Canvas gradebook export"):
        read_roster(bad)
    with pytest.raises(RosterError, match="cannot read"):
        read_roster(tmp_path / "missing.csv")


# --- matching --------------------------------------------------------------------------------------

def test_canvas_matching_by_user_id_never_by_name():
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    entries = [entry("doejane_1001_500001_scan.zip"),
               entry("smithjohn_LATE_12345_500002_scan.zip"),
               entry("smithjohn_12345_500003_scan.zip", "smithjohn_12345-2"),   # a second one of the same student
               entry("nguyenan_2099_500004_scan.zip"),       # a user id not on the roster: unmatched
               entry("jdoe.zip")]                            # the SIS login of a student already matched
    m = match(r, entries)
    assert m.matched == {}       # jdoe.zip claims Jane too: neither is taken
    assert m.conflicts == {0: ["doejane_1001", "jdoe"], 1: ["smithjohn_12345", "smithjohn_12345-2"]}
    assert "nguyenan_2099" in m.unmatched and "no roster student" in m.unmatched["nguyenan_2099"]
    rec = m.record()
    assert {w["roster_name"] for w in rec["without_submission"]} == {"Nguyen, An", "Student, Test"}
    assert rec["names"] == {}      # no submission matched
    assert entry_lms_ids("smithjohn_LATE_12345_500002_scan.zip") == \
        {"lms_user_id": "12345", "lms_submission_id": "500002", "lms_name": "smithjohn"}


def test_exact_matches_and_ambiguous_names():
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    m = match(r, [entry("doejane_1001_500001_scan.zip"), entry("anguyen.zip")])
    assert m.matched == {"doejane_1001": 0, "anguyen": 2} and not m.unmatched and not m.conflicts
    assert m.record()["names"] == {"anguyen": "Nguyen, An", "doejane_1001": "Doe, Jane"}   # what report.html shows
    w = read_roster(ROSTERS / "moodle_grading_worksheet.csv")
    m = match(w, [entry("Jane Doe_4_assignsubmission_file_scan.zip"), entry("Ana Lima_8_assignsubmission_file_.zip")])
    assert m.matched == {"jane-doe_4": 0}
    assert "ana-lima_8" in m.unmatched     # participant 8 is not on the worksheet: the name is not used
    g = read_roster(ROSTERS / "moodle_grader_report.csv")
    m = match(g, [entry("Ana Lima_8_assignsubmission_file_.zip"), entry("Sam Lee_11_assignsubmission_file_.zip")])
    assert m.matched == {"ana-lima_8": 1}
    assert m.unmatched["sam-lee_11"].startswith("ambiguous: 2 roster students")
    p = read_roster(ROSTERS / "plain_roster.csv")
    m = match(p, [entry("ALovelace.zip"), entry("grace.tar.gz"), entry("someone.zip")])
    assert m.matched == {"alovelace": 0, "grace": 2} and list(m.unmatched) == ["someone"]


# --- exports ---------------------------------------------------------------------------------------

def canvas_class(tmp_path):
    """Jane 18.5 and John 16.5 of 21 points; a stranger on no roster."""
    return [graded(entry("doejane_1001_500001_scan.zip"), tmp_path),
            graded(entry("smithjohn_12345_500003_scan.zip"), tmp_path, total_fail=2),
            graded(entry("stranger_777_500009_scan.zip"), tmp_path)]


def test_canvas_import_file(tmp_path):
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    students = canvas_class(tmp_path)
    m = match(r, [st.entry for st in students])
    lms = write_lms_exports(tmp_path, students, m, "Scan lab", slot_columns=True)
    assert [p.name for p in lms.paths] == ["grades.csv", "canvas.csv"]
    rows = read_csv(tmp_path / "lms" / "canvas.csv")
    # the roster's own column (Canvas matches it by the id), scaled to its 100 points; the slot
    # columns are new assignments (no id), in raw points with the slots' maxima as points possible
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Scan lab (20456)",
                       "Scan lab: hillis_steele", "Scan lab: blelloch", "Scan lab: hierarchical",
                       "Scan lab: single_pass"]
    assert rows[1] == ["    Points Possible", "", "", "", "", "100", "4", "4", "4", "9"]
    assert rows[2] == ["Doe, Jane", "1001", "S0001001", "jdoe", "CS 484 Section 1", "88.1", "4", "4", "4", "6.5"]
    assert rows[3][:6] == ["Smith, John", "12345", "S0012345", "jsmith", "CS 484 Section 2", "78.57"]
    assert rows[4][5:] == ["", "", "", "", ""]                  # no submission: nothing entered
    assert len(rows) == 2 + 4                                   # the stranger is not on Canvas's file
    assert lms.lines == ["canvas.csv: column 'Scan lab (20456)', scores scaled to 100 points (raw out of 21)",
                         "canvas.csv: 4 new slot column(s) ('Scan lab: hillis_steele', 'Scan lab: blelloch', "
                         "'Scan lab: hierarchical', 'Scan lab: single_pass'), raw points (Canvas gives each new "
                         "assignment the slot's maximum as points possible)"]
    assert lms.warnings == []
    assert lms.columns == [{"file": "lms/canvas.csv", "column": "Scan lab (20456)", "new": False,
                            "points_possible": 100.0, "raw_possible": 21.0, "factor": round(100 / 21, 6)}]
    # grades.csv keeps raw points, whatever the roster's column
    plain = {row["name"] or row["student_id"]: row for row in csv.DictReader(open(tmp_path / "lms" / "grades.csv"))}
    assert plain["Doe, Jane"]["total"] == "18.5" and plain["Doe, Jane"]["max_total"] == "21"
    assert plain["Doe, Jane"]["submission_user_id"] == "1001" and plain["Doe, Jane"]["submission_id"] == "500001"
    assert plain["Doe, Jane"]["sis_user_id"] == "S0001001" and plain["Doe, Jane"]["match"] == "matched"
    assert plain["stranger_777"]["match"] == "unmatched_submission" and plain["stranger_777"]["total"] == "18.5"
    assert plain["Nguyen, An"]["match"] == "no_submission" and plain["Nguyen, An"]["total"] == ""


def test_the_only_assignment_column_is_filled_and_scaled(tmp_path):
    """The tester's roster: one assignment "HW3 Scan (4321)" of 100 points; no --assignment."""
    r = read_roster(ROSTERS / "canvas_one_assignment.csv")
    students = canvas_class(tmp_path)
    lms = write_lms_exports(tmp_path, students, match(r, [st.entry for st in students]))
    rows = read_csv(tmp_path / "lms" / "canvas.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "HW3 Scan (4321)"]
    assert rows[1][5] == "100" and rows[2][5] == "88.1" and rows[3][5] == "78.57" and rows[4][5] == ""
    assert "ScanGrade" not in (tmp_path / "lms" / "canvas.csv").read_text()
    assert lms.lines == ["canvas.csv: column 'HW3 Scan (4321)', scores scaled to 100 points (raw out of 21)"]


@pytest.mark.parametrize("given", ["Scan lab", "scan LAB", "  Scan lab ", "Scan lab (20456)", "SCAN LAB (20456)"])
def test_assignment_by_bare_name_or_whole_header(given):
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    t = choose_column(r, given)
    assert (t.header, t.points, t.new, t.warning) == ("Scan lab (20456)", 100.0, False, "")


def test_several_assignment_columns_and_no_assignment_is_refused(tmp_path):
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    students = canvas_class(tmp_path)
    with pytest.raises(RosterError) as err:
        write_lms_exports(tmp_path, students, match(r, [st.entry for st in students]))
    msg = str(err.value)
    assert "2 assignment columns ('Homework 1 (20431)', 'Scan lab (20456)')" in msg and "--assignment" in msg
    assert not (tmp_path / "lms").exists()                      # nothing half-written
    # two columns of one name (Canvas allows it): the whole header decides
    twice = tmp_path / "twice.csv"
    twice.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Scan lab (1),Scan lab (2)\n"
                     "    Points Possible,,,,,50,100\n\"Doe, Jane\",1001,S1,jdoe,A,,\n")
    with pytest.raises(RosterError, match="names 2 columns .*pass the whole header"):
        choose_column(read_roster(twice), "Scan lab")
    assert choose_column(read_roster(twice), "Scan lab (2)").points == 100.0
    # no assignment column at all: --assignment is needed to name the new one
    bare = tmp_path / "bare.csv"
    bare.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n\"Doe, Jane\",1001,S1,jdoe,A\n")
    with pytest.raises(RosterError, match="has no assignment column: pass --assignment NAME"):
        choose_column(read_roster(bare), None)


def test_a_name_the_roster_lacks(tmp_path):
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    students = canvas_class(tmp_path)
    lms = write_lms_exports(tmp_path, students, match(r, [st.entry for st in students]), "Final project")
    rows = read_csv(tmp_path / "lms" / "canvas.csv")
    # Canvas creates an assignment from a header without an id: raw points, the raw maximum as its points
    assert rows[0][5] == "Final project" and rows[1][5] == "21" and rows[2][5] == "18.5"
    assert lms.warnings == ["--assignment 'Final project' is no column of canvas_gradebook_export.csv (canvas) (its "
                            "assignment columns: 'Homework 1 (20431)', 'Scan lab (20456)'): canvas.csv adds a column "
                            "'Final project'; Canvas creates a new assignment of that name on import"]
    assert lms.lines == ["canvas.csv: new column 'Final project', raw points out of 21 (Canvas gives the new "
                         "assignment that many points possible)"]
    # an id the course does not have: Canvas would create nothing, so it is refused
    with pytest.raises(RosterError, match="Canvas creates no assignment from a header with an id"):
        choose_column(r, "Scan lab (99999)")
    # Moodle's import maps any column to a grade item: a new one is written, with the warning
    g = read_roster(ROSTERS / "moodle_grader_report.csv")
    t = choose_column(g, "Scan lab v2")
    assert t.new and t.header == "Scan lab v2" and "map it to the grade item" in t.warning


def test_no_points_possible_writes_raw_points(tmp_path):
    roster = tmp_path / "export.csv"
    lines = (ROSTERS / "canvas_one_assignment.csv").read_text().splitlines()
    roster.write_text("\n".join([lines[0], *lines[2:]]) + "\n")     # without the Points Possible row
    students = canvas_class(tmp_path)
    lms = write_lms_exports(tmp_path, students, match(read_roster(roster), [st.entry for st in students]))
    rows = read_csv(tmp_path / "lms" / "canvas.csv")
    assert rows[0][5] == "HW3 Scan (4321)" and rows[1][5] == "21" and rows[2][5] == "18.5"
    assert lms.lines == ["canvas.csv: column 'HW3 Scan (4321)', raw points out of 21 (the roster gives no points "
                         "possible: not scaled)"]
    # a Moodle grader report has no points possible: its column gets raw points
    g = read_roster(ROSTERS / "moodle_grader_report.csv")
    students = [graded(entry("Ana Lima_8_assignsubmission_file_.zip"), tmp_path)]
    lms = write_lms_exports(tmp_path, students, match(g, [st.entry for st in students]))
    assert read_csv(tmp_path / "lms" / "moodle.csv")[2] == ["ana.lima@uni.example", "20261007", "18.5"]
    assert lms.lines == ["moodle.csv: column 'Assignment: Scan lab (Real)', raw points out of 21 (the roster gives "
                         "no points possible: not scaled)"]


def test_slot_columns_the_roster_has_are_filled(tmp_path):
    """A second import: the slot assignments the first one created are in the roster, with ids."""
    roster = tmp_path / "export.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Scan lab (20456),Scan lab: single_pass (20470)\n"
                      "    Points Possible,,,,,100.00,18.00\n\"Doe, Jane\",1001,S0001001,jdoe,A,,\n")
    students = [graded(entry("doejane_1001_500001_scan.zip"), tmp_path)]
    lms = write_lms_exports(tmp_path, students, match(read_roster(roster), [st.entry for st in students]),
                            "Scan lab", slot_columns=True)
    rows = read_csv(tmp_path / "lms" / "canvas.csv")
    assert rows[0][5:7] == ["Scan lab (20456)", "Scan lab: hillis_steele"]
    assert rows[0][-1] == "Scan lab: single_pass (20470)" and rows[1][-1] == "18" and rows[2][-1] == "13"
    assert "canvas.csv: column 'Scan lab: single_pass (20470)', scores scaled to 18 points (raw out of 9)" in lms.lines


def test_moodle_import_files(tmp_path):
    w = read_roster(ROSTERS / "moodle_grading_worksheet.csv")
    students = [graded(entry("Jane Doe_4_assignsubmission_file_scan.zip"), tmp_path)]
    lms = write_lms_exports(tmp_path, students, match(w, [st.entry for st in students]))
    rows = read_csv(tmp_path / "lms" / "moodle.csv")
    # the worksheet's Maximum Grade is the assignment's: grades scaled to it
    assert rows[0] == ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade"]
    assert rows[1] == ["Participant 4", "Jane Doe", "jane.doe@uni.example", "88.1", "100"]
    assert rows[3] == ["Participant 9", "Zoë O'Brien", "zoe.obrien@uni.example", "", "100"]
    assert lms.lines == ["moodle.csv: column 'Grade', scores scaled to 100 points (raw out of 21)"]
    # a worksheet is one assignment's: --assignment is not used, and the warning says so
    assert "a grading worksheet holds one assignment's grades" in choose_column(w, "Scan lab").warning
    g = read_roster(ROSTERS / "moodle_grader_report.csv")
    students = [graded(entry("Ana Lima_8_assignsubmission_file_.zip"), tmp_path)]
    write_lms_exports(tmp_path, students, match(g, [st.entry for st in students]), "Scan lab")
    rows = read_csv(tmp_path / "lms" / "moodle.csv")
    assert rows[0] == ["Email address", "ID number", "Assignment: Scan lab (Real)"]
    assert rows[2] == ["ana.lima@uni.example", "20261007", "18.5"] and rows[1][2] == ""


def test_conflicting_submissions_export_no_grade(tmp_path):
    r = read_roster(ROSTERS / "canvas_gradebook_export.csv")
    students = [graded(entry("doejane_1001_500001_scan.zip"), tmp_path),
                graded(entry("doejane_LATE_1001_500007_scan.zip", "doejane_1001-2"), tmp_path, total_fail=4)]
    m = match(r, [st.entry for st in students])
    assert list(m.conflicts) == [0]
    write_lms_exports(tmp_path, students, m, "Scan lab")
    assert read_csv(tmp_path / "lms" / "canvas.csv")[2][5] == ""
    rows = {row["name"]: row for row in csv.DictReader(open(tmp_path / "lms" / "grades.csv"))}
    assert rows["Doe, Jane"]["match"] == "conflict"


def test_formula_cells_are_neutralised(tmp_path):
    roster = tmp_path / "r.csv"
    roster.write_text("name,student_id\n=HYPERLINK(\"x\"),evil\n")
    students = [graded(entry("evil.zip"), tmp_path)]
    write_lms_exports(tmp_path, students, match(read_roster(roster), [st.entry for st in students]))
    assert "'=HYPERLINK" in (tmp_path / "lms" / "grades.csv").read_text()


# --- in a batch --------------------------------------------------------------------------------------

def test_batch_with_a_canvas_roster(tmp_path, fake_env):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    write_zip(subs / "doejane_1001_500001_scan.zip", GOOD)
    write_zip(subs / "nobody_4242_500002_scan.zip", GOOD)
    roster = tmp_path / "export.csv"
    shutil.copy(ROSTERS / "canvas_gradebook_export.csv", roster)
    r = run_batch(subs, out, fake_env, "--roster", roster, "--assignment", "scan lab")
    assert r.returncode == 0, r.stderr
    assert "UNMATCHED SUBMISSION nobody_4242" in r.stderr
    assert "NO SUBMISSION Smith, John (12345)" in r.stderr
    line = "canvas.csv: column 'Scan lab (20456)', scores scaled to 100 points (raw out of 8)"
    assert f"batch: {line}\n" in r.stderr and "warning" not in r.stderr
    rows = read_csv(out / "lms" / "canvas.csv")
    assert rows[0][5] == "Scan lab (20456)" and rows[1][5] == "100"
    assert rows[2][:2] == ["Doe, Jane", "1001"] and rows[2][5] == "100"
    record = json.loads((out / "batch.json").read_text())
    assert record["roster"]["matched"] == 1 and record["roster"]["files"] == ["lms/grades.csv", "lms/canvas.csv"]
    assert record["roster"]["names"] == {"doejane_1001": "Doe, Jane"} and record["roster"]["column_lines"] == [line]
    text = (out / "report.html").read_text()
    assert "Submissions matched to nobody (1)" in text and "Students without a submission (3)" in text
    assert escape(line) in text                                  # as Jinja writes it
    # the matched submission shows the roster's name, its id under it; the unmatched one its id
    assert '<a href="students/doejane_1001/' in text and '">Doe, Jane</a><div class="sid">doejane_1001</div>' in text
    assert '">nobody_4242</a></td>' in text
    # a roster that is not one stops the batch before anything is graded
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n")
    r = run_batch(subs, tmp_path / "out2", fake_env, "--roster", bad)
    assert r.returncode == 2 and "--roster" in r.stderr and not (tmp_path / "out2" / "students").exists()


def test_batch_refuses_an_ambiguous_assignment_before_grading(tmp_path, fake_env):
    subs = tmp_path / "subs"
    subs.mkdir()
    write_zip(subs / "doejane_1001_500001_scan.zip", GOOD)
    roster = tmp_path / "export.csv"
    shutil.copy(ROSTERS / "canvas_gradebook_export.csv", roster)
    r = run_batch(subs, tmp_path / "out", fake_env, "--roster", roster)
    assert r.returncode == 2, r.stderr
    assert "2 assignment columns ('Homework 1 (20431)', 'Scan lab (20456)'): pass --assignment" in r.stderr
    assert not (tmp_path / "out").exists() and not fake_env["counter"].exists()    # nothing graded or written
    # a name the roster lacks: a new column, and a warning naming the roster's columns
    r = run_batch(subs, tmp_path / "out", fake_env, "--roster", roster, "--assignment", "Scan lab v2")
    assert r.returncode == 0, r.stderr
    assert "batch: warning: --assignment 'Scan lab v2' is no column of export.csv (canvas) (its assignment columns: " \
           "'Homework 1 (20431)', 'Scan lab (20456)')" in r.stderr
    assert "batch: canvas.csv: new column 'Scan lab v2', raw points out of 8" in r.stderr
    assert read_csv(tmp_path / "out" / "lms" / "canvas.csv")[0][5] == "Scan lab v2"
    assert "warning: --assignment &#39;Scan lab v2&#39; is no column" in (tmp_path / "out" / "report.html").read_text()


def test_slurm_jobs_get_the_assignment_only_when_given():
    from argparse import Namespace
    from scangrade import instructor
    args = Namespace(roster=ROSTERS / "canvas_one_assignment.csv", assignment=None, lms_slot_columns=False,
                     similarity=False)
    assert "--assignment" not in instructor.argv(args)
    args.assignment = "HW3 Scan"
    assert instructor.argv(args)[-2:] == ["--assignment", "HW3 Scan"]
