"""What the class got wrong (scangrade/class_summary.py): statuses and hints per slot by how many
students they hit, each student linked, one example; the perf spread; its report.html section, and a
report that fits a phone (responsive CSS)."""

from __future__ import annotations

import json

import fixtures
from scangrade import gradebook
from scangrade.batch_report import render_report
from scangrade.class_summary import class_summary, hint_key
from scangrade.lms import Entry
from test_batch import check_report

RESTART = ("fail: hierarchical.int32.n{n}.random: 5 of {n} elements wrong\n  first wrong: out[{f}] expected 3, got 1\n"
           "  hint: the scan restarts from zero at index {f}: each block of {f} elements looks scanned on its own, so "
           "the block sums are not propagated (or are added to the wrong block)\n  why this case: one past a block")
SWAPPED = ("fail: blelloch.int32.n1025.random: 1025 of 1025 elements wrong\n  hint: the output is the INCLUSIVE "
           "scan; this slot must return the exclusive scan (out[0] = 0, out[i] excludes in[i])\n  why this case: x")


def student(tmp_path, sid: str, cases: list[dict], perf: dict | None = None, feedback: bool = True):
    doc = fixtures.make_results(cases, perf=perf or {}, name=sid)
    st = gradebook.Student(Entry(f"{sid}.zip", tmp_path / f"{sid}.zip", "zip", sid), tmp_path / "students" / sid,
                           outcome="graded", results=doc, flags=gradebook.flags_of(doc))
    st.out.mkdir(parents=True)
    if feedback:
        (st.out / "feedback.html").write_text("<p>page</p>")
    return st


def make_class(tmp_path):
    ok = [fixtures.make_case(s, 1025) for s in fixtures.SLOTS]
    return [
        student(tmp_path, "ann", ok + [fixtures.make_case("hierarchical", 4097, status="fail",
                                                          message=RESTART.format(n=4097, f=2048))],
                perf={"single_pass": (5, 5, 1.1)}),
        student(tmp_path, "bo", ok + [fixtures.make_case("hierarchical", 9000, status="fail",
                                                         message=RESTART.format(n=9000, f=4096)),
                                      fixtures.make_case("hierarchical", 70000, status="fail",
                                                         message=RESTART.format(n=70000, f=4096)),
                                      fixtures.make_case("blelloch", 2048, status="fail", message=SWAPPED)],
                perf={"single_pass": (1, 5, 0.3)}, feedback=False),
        student(tmp_path, "cy", ok + [fixtures.make_case("single_pass", 1 << 20, status="crash"),
                                      fixtures.make_case("blelloch", 2048, status="timeout")],
                perf={"single_pass": (4, 5, 0.8)}),
        student(tmp_path, "dee", ok, perf={"single_pass": (5, 5, 1.6)}),
    ]


def test_hint_key_groups_numbers():
    a = hint_key("the scan restarts from zero at index 2048: each block of 2048 elements looks scanned")
    b = hint_key("the scan restarts from zero at index 4096: each block of 4096 elements looks scanned")
    assert a == b == "the scan restarts from zero at index N"
    assert hint_key("right up to out[65535], wrong from out[65536] = 256 x 256, or 16 x 16 x 16 on: a missing level") \
        == hint_key("right up to out[16777215], wrong from out[16777216] = 4096 x 4096 on: a missing level")


def test_statuses_and_hints_by_students(tmp_path):
    summary = class_summary(make_class(tmp_path))
    assert summary["graded"] == 4
    slots = {s["slot"]: s for s in summary["slots"]}
    h = slots["hierarchical"]
    assert [(p["status"], p["count"]) for p in h["problems"]] == [("fail", 2)]     # bo's two cases count once
    assert [s["id"] for s in h["problems"][0]["students"]] == ["ann", "bo"]
    assert h["hints"][0]["count"] == 2 and h["hints"][0]["hint"] == "the scan restarts from zero at index N"
    assert h["hints"][0]["example"]["student"] == "ann" and "index 2048" in h["hints"][0]["example"]["message"]
    links = {s["id"]: s["link"] for s in h["problems"][0]["students"]}
    assert links == {"ann": "students/ann/feedback.html", "bo": "students/bo/results.json"}   # bo has no page
    b = slots["blelloch"]
    assert {p["status"]: p["count"] for p in b["problems"]} == {"fail": 1, "timeout": 1}
    assert b["hints"][0]["hint"].startswith("the output is the INCLUSIVE scan")
    assert "hillis_steele" not in slots                                             # nothing wrong there
    perf = slots["single_pass"]["perf"]
    assert (perf["count"], perf["min"], perf["max"]) == (4, 0.3, 1.6)
    assert [x["id"] for x in perf["slowest"]] == ["bo", "cy", "ann", "dee"]
    assert [x["id"] for x in perf["fastest"]][:2] == ["dee", "ann"]
    assert json.loads(json.dumps(summary)) == summary


def test_build_problems_and_layout_errors(tmp_path):
    mixed = fixtures.document("mixed")
    layout = fixtures.document("layout_error")
    sts = []
    for sid, doc in (("m", mixed), ("l", layout)):
        st = gradebook.Student(Entry(sid, tmp_path / sid, "folder", sid), tmp_path / sid, outcome="graded",
                               results=doc, flags=gradebook.flags_of(doc))
        sts.append(st)
    summary = class_summary(sts)
    assert {p["status"]: p["count"] for p in summary["build"]} == {"compile_error": 1, "layout_error": 1}
    slots = {s["slot"]: s for s in summary["slots"]}
    # a layout error's compile_error cases are not the slot's problem (the layout is)
    assert all(s["id"] != "l" for p in slots["hillis_steele"]["problems"] for s in p["students"])


def test_report_section_and_phone_layout(tmp_path):
    students = make_class(tmp_path)
    columns, rows = gradebook.gradebook_rows(students, tmp_path, None)
    path = tmp_path / "report.html"
    path.write_text(render_report(students, {"backend": "gpu", "suites": []}, columns, rows))
    check_report(path)
    text = path.read_text()
    assert "What the class got wrong" in text and "hint" in text
    assert 'href="students/ann/feedback.html"' in text and "the scan restarts from zero at index N" in text
    assert "slowest: " in text and "fastest: " in text
    assert '<meta name="viewport" content="width=device-width' in text
    assert "@media (max-width: 760px)" in text and 'class="subs cards"' in text and 'data-label="student"' in text
    # seen in Chromium (grading/docs/screenshots): the per-case table scrolls sideways in its box on a phone
    # instead of breaking ids letter by letter (20,000 px tall at 390 px); at 1,200 px the submissions table
    # fits without squeezing raw names or breaking file names (column names break after an underscore)
    assert '<table class="cases">' in text and "table.cases td { white-space: nowrap;" in text
    assert 'class="files"' in text and "table.subs td.files a { display: inline-block; white-space: nowrap;" in text
    assert "<th>hillis_<wbr>steele</th>" in text and "table.subs td.rawname { min-width: 12em; max-width: 18em; }" in text
