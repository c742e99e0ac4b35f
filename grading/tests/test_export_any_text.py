"""Every export is valid whatever text the student's code, compiler output or file names hold: a
results document whose messages, compile log, student output and names carry every control character,
lone surrogates, U+FFFE/U+FFFF, line separators, markup and a very long line is exported to every
format, and each file is read back with a real parser and checked against its platform's schema."""

from __future__ import annotations

import csv
import html.parser
import io
import json
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_valid
from fixtures import make_case, make_results
from scangrade import exporters, gradebook, results
from scangrade import lms as lmsmod
from scangrade.vocab import SLOTS

CONTROLS = "".join(map(chr, [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]))
NASTY = (f"boom: {CONTROLS} \ud800 \udfff \udc80 \ufffe \uffff \u2028 \u2029 \u00e9 \U0001F600 "
         "]]> <script>alert(1)</script> &amp; \"quoted\" 'single' \x1b[31mred\x1b[0m\r\nnext line")
LONG = "x" * 200_000                                       # one line of 200,000 characters
# what the exports show instead of the characters no format (or XML 1.0) can carry
FORBIDDEN_IN_XML = set(map(chr, [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF]))


def nasty_results() -> dict:
    cases = [make_case(slot, status="fail", message=NASTY + "\n" + LONG) for slot in SLOTS]
    cases += [make_case(slot, n=1, status="crash", message=NASTY, visibility="hidden") for slot in SLOTS]
    cases += [make_case(slot, n=2) for slot in SLOTS]
    build = {"status": "compile_error", "log": f"student/blelloch.cu:3: error: {NASTY}\n", "warnings": 1,
             "missing_slots": [], "failed_slots": ["blelloch"], "seconds": 1.0}
    for c in cases:
        if c["slot"] == "blelloch" and c["status"] != "pass":
            c["status"] = "compile_error"
    doc = make_results(cases, build=build, student_output=NASTY + LONG, name="we\"ird\\ $x 'y\n\u00fc\x07")
    doc["errors"] = [NASTY]
    return doc


def assert_clean(text: str) -> None:
    """No character that XML 1.0 forbids, no raw control but tab and line feed, no lone surrogate."""
    text.encode("utf-8")                                   # raises on a lone surrogate
    bad = sorted({hex(ord(ch)) for ch in text
                  if ch in FORBIDDEN_IN_XML or ch == "\r" or 0x7F <= ord(ch) <= 0x9F})
    assert not bad, f"unprintable characters left: {bad}"


def test_printable_rule():
    assert results.printable("a\x00b\x1b[1m\tc\r\nd\re\x85\x7f") == "a\\x00b\\x1b[1m\tc\nd\ne\\x85\\x7f"
    assert results.printable("\ud800\udfff\ufffe\uffff") == "\ufffd" * 4
    assert results.printable("\u00e9\U0001F600\u2028 plain") == "\u00e9\U0001F600\u2028 plain"
    doc = results.printable_doc({"k\x00": ["\x01", {"x": "\ud800"}, 3, None]})
    assert doc == {"k\\x00": ["\\x01", {"x": "\ufffd"}, 3, None]}


@pytest.mark.parametrize("student_facing", [True, False])
def test_every_export_parses_and_follows_its_schema(tmp_path, student_facing):
    doc = nasty_results()
    out = tmp_path / ("student" if student_facing else "instructor")
    out.mkdir()
    written = exporters.write_exports(doc, out, list(exporters.FORMATS))
    texts = {fmt: path.read_bytes().decode("utf-8") for fmt, path in written.items()}   # strict UTF-8
    for fmt in ("gradescope", "prairielearn", "junit", "autolab"):
        assert_clean(texts[fmt])

    gs = json.loads(texts["gradescope"])
    assert_valid(gs, "gradescope")
    shown = "\n".join(t.get("output", "") for t in gs["tests"])
    assert "\\x1b[31mred" in shown and "\\x00" in shown and "\ufffd" in shown and LONG in shown

    pl = json.loads(exporters.export(doc, "prairielearn", student_facing))
    assert_valid(pl, "prairielearn")
    assert_clean(json.dumps(pl, ensure_ascii=False))

    autolab = exporters.export(doc, "autolab", student_facing)
    assert autolab.endswith("\n") and len(autolab.splitlines()) == 2      # no line separator splits a line
    feedback, score = (json.loads(line) for line in autolab.splitlines())
    assert set(score) == {"scores", "scoreboard"} and feedback["_presentation"] == "semantic"

    root = ET.fromstring(texts["junit"].encode("utf-8"))                   # expat: XML 1.0, strict
    failures = [el.text for el in root.iter("failure")]
    assert failures and all("\\x1b[31mred" in t for t in failures)
    assert any(el.text and "student/blelloch.cu:3: error" in el.text for el in root.iter("system-out"))


class Collect(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_feedback_page_parses_and_shows_the_text(tmp_path):
    from scangrade import feedback
    for instructor in (False, True):
        page = feedback.render_page(nasty_results(), instructor=instructor)
        page.encode("utf-8")
        assert_clean(page)
        p = Collect()
        p.feed(page)
        p.close()
        text = "".join(p.text)
        assert "<script>alert(1)</script>" in text and "script" not in p.tags   # shown, never run
        assert "\\x1b[31mred" in text


def test_gradebook_and_batch_report_with_any_text(tmp_path):
    pytest.importorskip("jinja2")
    from scangrade.batch_report import render_report
    doc = nasty_results()
    students = []
    for i, raw in enumerate(["=HYPERLINK(\"http://x\")", "+1+2", "-3-4", "@SUM(A1)", "\t=1", NASTY]):
        st = gradebook.Student(lmsmod.Entry(raw, tmp_path / f"{i}", "folder", f"s{i}"), tmp_path / f"s{i}",
                               error=NASTY)
        st.results, st.outcome, st.flags = doc, "graded", gradebook.flags_of(doc)
        students.append(st)
    columns, rows = gradebook.gradebook_rows(students, tmp_path, 0.5)
    columns = [*columns, "repo_error"]
    for row in rows:
        row["repo_error"] = "=cmd|' /C calc'!A0 " + NASTY + LONG
    path = tmp_path / "gradebook.csv"
    gradebook.write_gradebook(path, columns, rows)
    text = path.read_bytes().decode("utf-8")
    assert_clean(text.replace("\r", ""))        # csv's own line ends aside (it writes \n; cells have none)
    read = list(csv.DictReader(io.StringIO(text)))                       # default field size limit
    assert len(read) == len(students)
    for row in read:
        for column, cell in row.items():
            assert cell[:1] not in ("=", "+", "@", "\t", "\r") and not (cell[:1] == "-" and not
                                                                          gradebook._NUMBER.match(cell)), (column, cell)
            assert len(cell) <= gradebook.MAX_CELL + 40
    names = {r["student_id"]: r["raw_name"] for r in read}
    assert names["s0"] == "'=HYPERLINK(\"http://x\")" and names["s2"] == "'-3-4" and names["s4"] == "'\t=1"
    assert read[0]["repo_error"].startswith("'=cmd|")
    assert gradebook.gradebook_cell("-1.5") == "-1.5" and gradebook.gradebook_cell(3) == 3

    report = render_report(students, {"backend": "gpu", "gpus": ["0"], "suites": ["public.json"]}, columns, rows)
    assert_clean(report)
    p = Collect()
    p.feed(report)
    p.close()
    # one script, the report's own (the table's sort), with none of the students' text in it
    assert p.tags.count("script") == 1
    own = report.split("<script>", 1)[1].split("</script>", 1)[0]
    assert "alert" not in own and "HYPERLINK" not in own
