"""What the class got wrong (scangrade/class_summary.py): statuses and hints per slot by how many
students they hit, each student linked, one example; the perf spread; its report.html section, and a
report that fits a phone (responsive CSS); report.html's order (the score distribution and the sortable
table first), its inline SVG plots and the roster's names wherever a student appears."""

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
    assert "@media (max-width: 760px)" in text and 'class="subs cards sortable"' in text
    assert 'data-label="student"' in text
    # seen in Chromium (grading/docs/screenshots): the per-case table scrolls sideways in its box on a phone
    # instead of breaking ids letter by letter (20,000 px tall at 390 px); at 1,200 px the submissions table
    # fits without squeezing raw names or breaking file names (column names break after an underscore)
    assert '<table class="cases">' in text and "table.cases td { white-space: nowrap;" in text
    assert 'class="files"' in text and "table.subs td.files a { display: inline-block; white-space: nowrap;" in text
    assert "<th>hillis_<wbr>steele<span" in text
    assert "table.subs td.rawname { min-width: 12em; max-width: 18em; }" in text
    # the header's two columns (the counts, the histogram) stack on a phone: a flex item may shrink below
    # its SVG's width (seen in Chromium at 390 px: the page was 795 px wide); section links wrap
    assert ".top > div { min-width: 0; max-width: 100%; }" in text and "</a> · <a" in text


ROSTER = {"roster": "/x/canvas.csv", "kind": "canvas", "students": 5, "matched": 3,
          "names": {"ann": "Smith, Ann", "bo": "Lee, <b>Bo</b>", "cy": "O'Neil, Cy"},
          "files": ["lms/grades.csv", "lms/canvas.csv"],
          "column_lines": ["canvas.csv: column 'Scan lab (20456)', scores scaled to 100 points (raw out of 16)"],
          "column_warnings": [], "unmatched_submissions": [], "conflicts": [], "without_submission": []}
SIMILAR = {"file": "similarity.json", "threshold": 0.5, "pairs_above_threshold": 1,
           "pairs": [{"a": "ann", "b": "dee", "score": 0.9, "slots": []}]}


def rendered(tmp_path, record: dict) -> str:
    students = make_class(tmp_path)
    columns, rows = gradebook.gradebook_rows(students, tmp_path, None)
    path = tmp_path / "report.html"
    path.write_text(render_report(students, dict({"backend": "gpu", "suites": ["public.json"]}, **record), columns,
                                  rows))
    check_report(path)
    return path.read_text()


def test_report_opens_with_the_distribution_then_the_table(tmp_path):
    text = rendered(tmp_path, {"roster": ROSTER, "similarity": SIMILAR, "phase_totals": {"compile": {"sum_s": 1,
                                                                                                      "wall_s": 1}}})
    order = ["<h1>", 'id="summary"', 'id="score-histogram"', "canvas.csv: column &#39;Scan lab (20456)&#39;",
             '<h2 id="submissions">Submissions</h2>', '<h2 id="class-got-wrong">What the class got wrong</h2>',
             '<h2 id="scores-per-slot">Scores per slot</h2>', '<h2 id="pass-rate">Pass rate per case</h2>',
             '<h2 id="roster">Roster</h2>', '<h2 id="similar">Similar submissions</h2>',
             '<h2 id="performance">Performance (× reference)</h2>', '<h2 id="time">Where the time went</h2>']
    at = [text.index(marker) for marker in order]
    assert at == sorted(at), [m for m, i in zip(order, at)]
    # the header is short: the table starts within the first 40 lines of markup after <body>
    body = text[text.index("<body>"):]
    assert body[:body.index('<h2 id="submissions">')].count("\n") < 40
    assert '<nav><a href="#submissions">Submissions</a> · <a href="#class-got-wrong">' in text


def test_report_plots_are_inline_svg(tmp_path):
    text = rendered(tmp_path, {})
    p = check_report(tmp_path / "report.html")
    assert {"score-histogram", "slot-scores", "perf-spread", "perf-single_pass"} <= set(p.ids)
    assert {f"slot-score-{s}" for s in fixtures.SLOTS} <= set(p.ids)
    assert text.count("<circle ") == 4 * 4 + 4         # a dot per student and slot, and per timed student
    assert "reference</text>" in text and "no points</text>" in text          # the marks at 1 and 0.25
    assert "<script src" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    # the histogram's bars name their students
    assert "2 submission(s) scored 90% to 100%: ann; dee</title>" in text


def test_report_table_sorts_and_reads_without_script(tmp_path):
    text = rendered(tmp_path, {})
    assert text.count("<script>") == 1 and 'document.querySelectorAll("table.sortable")' in text
    table = text[text.index('<table class="subs cards sortable">'):]
    table = table[:table.index("</table>")]
    # without the script: a plain table in the gradebook's order, each sortable cell with its key
    assert "<thead>" in table and "<tbody>" in table and "<button" not in table
    assert [table.index(f'data-sort="{sid}"') for sid in ("ann", "bo", "cy", "dee")] == \
        sorted(table.index(f'data-sort="{sid}"') for sid in ("ann", "bo", "cy", "dee"))
    assert '<td class=num data-label="total" data-sort="' in table and 'data-label="single_pass" data-sort="' in table
    assert 'data-label="status" data-sort="graded fail"' in table


def test_report_shows_roster_names_everywhere(tmp_path):
    text = rendered(tmp_path, {"roster": ROSTER, "similarity": SIMILAR})
    # the table: the name linked, the submission's id under it; no roster row: the id alone
    assert '<a href="students/ann/feedback.html">Smith, Ann</a><div class="sid">ann</div>' in text
    assert '<a href="students/dee/feedback.html">dee</a></td>' in text
    # what the class got wrong: the name, the id as its tooltip; the example names the student too
    assert '<a href="students/ann/feedback.html" title="ann">Smith, Ann</a>' in text
    assert '<a href="students/bo/results.json" title="bo">Lee, &lt;b&gt;Bo&lt;/b&gt;</a>' in text
    assert "example (Smith, Ann, hierarchical." in text
    # slowest and fastest, the similar pair, the plots' tooltips
    assert 'title="cy">O&#39;Neil, Cy</a> 0.80×' in text
    assert '<span title="ann">Smith, Ann</span> <span class="sid">ann</span> ↔ dee:' in text
    assert "<title>Smith, Ann: 1.1× the reference&#39;s speed</title>" in text
    assert "<b>Bo</b>" not in text                                             # escaped everywhere
