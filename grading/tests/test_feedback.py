"""feedback.html, the page a student reads (scangrade/feedback.py, feedback_page.py): built from small
hand-made results (pass, fail with a hint, compile error, crash, timed cases), every string escaped,
nothing loaded from elsewhere, each slot's text equal to its Gradescope test output; grade.py writes it
without Jinja2, batch.py writes it and the batch report links it."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from conftest import GRADING, TESTS, assert_valid, make_submission
import fixtures
from fixtures import SECRET, make_case, make_results
from scangrade import feedback
from scangrade.exporters import to_gradescope
from scangrade.feedback_text import case_feedback, gtest_name, replay_commands
from scangrade.vocab import SLOTS

HINT = "hint: the scan restarts from zero at index 2048: the block sums are not propagated"
FAIL_MESSAGE = ("hierarchical.int32.n2049.random.inclusive (n=2049, int32, inclusive, values=random, seed=101): "
                "1 of 2049 elements wrong\n"
                "  first wrong: out[2048] expected 3502, got -48\n"
                "    = block 1, thread 0 (warp 0, lane 0) if each block scans 2048 elements, 2 per thread\n"
                "  wrong indices: 2048\n"
                f"  {HINT}\n"
                "  why this case: one past a 2048-element tile: a second tile with a single element")
CRASH_MESSAGE = ("blelloch.float32.n2048.random (n=2048, float32, exclusive, values=random, seed=7): "
                 "the worker died: signal 11 (segmentation fault)")
COMPILE_LOG = ("== student/hillis_steele.cu: compile failed (exit 2) ==\n"
               "student/hillis_steele.cu:14: error: identifier \"tid\" is undefined\n")
WARNINGS_LOG = "== student/blelloch.cu: warnings ==\nstudent/blelloch.cu:9:5: warning: unused variable 'x'\n"


class Page(HTMLParser):
    """The page's tags, links, sources and each slot section's feedback text (its <pre class="fb">)."""
    VOID = {"meta", "br", "img", "hr", "input", "link"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.section = ""
        self.first_fb: dict[str, str] = {}        # slot -> the first <pre class="fb"> text of its section
        self.spans: dict[str, list[str]] = {}     # slot -> the kinds of that pre's lines
        self._in_fb: list[str] | None = None
        self.feed(text)
        self.close()
        assert not self.stack, f"unclosed tags: {self.stack}"

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.attrs += attrs
        if tag == "section":
            self.section = a["id"].removeprefix("slot-")
        if tag == "pre" and a.get("class") == "fb" and self.section not in self.first_fb:
            self._in_fb = []
        if tag == "span" and self._in_fb is not None:
            self.spans.setdefault(self.section, []).append(a["class"].removeprefix("l-"))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if tag == "pre" and self._in_fb is not None:
            self.first_fb[self.section] = "".join(self._in_fb)
            self._in_fb = None

    def handle_data(self, data):
        if self._in_fb is not None:
            self._in_fb.append(data)


def class_results() -> dict:
    """A student's results by hand: hillis_steele did not compile, blelloch crashes on one case,
    hierarchical fails with a hint, single_pass passes its timed cases (GPU)."""
    cases = [make_case("hillis_steele", n, "int32", "compile_error", message="hillis_steele did not compile")
             for n in (1, 1024)]
    cases += [make_case("blelloch", 1, "int32"),
              make_case("blelloch", 2048, "float32", "crash", message=CRASH_MESSAGE, seed=7)]
    cases += [make_case("hierarchical", 1, "int32"),
              make_case("hierarchical", 2049, "int32", "fail", message=FAIL_MESSAGE, seed=101,
                        why="one past a 2048-element tile: a second tile with a single element"),
              make_case("hierarchical", 6145, "int32", "fail", message="hierarchical.int32.n6145 ...: wrong")]
    cases += [make_case("single_pass", 1, "int32"),
              make_case("single_pass", 1 << 24, "int32", max_points=0, why="perf case",
                        timing_=fixtures.timing(1 << 24, 0.8, 0.96, 0.64))]
    build = {"status": "compile_error", "log": COMPILE_LOG + WARNINGS_LOG, "warnings": 1, "missing_slots": [],
             "failed_slots": ["hillis_steele"], "seconds": 5.0}
    return make_results(cases, build=build, perf={"single_pass": (5, 5, 1.2)}, name="alice")


@pytest.fixture
def doc() -> dict:
    d = class_results()
    assert_valid(d, "results")
    return d


def sections(doc: dict, **kw) -> dict[str, feedback.SlotFeedback]:
    return {s.slot: s for s in feedback.page_model(doc, **kw)["slots"]}


# --- what the page shows --------------------------------------------------------------------------------

def test_every_fixture_renders_self_contained(results_doc):
    text = feedback.render_page(results_doc)
    page = Page(text)
    assert page.tags[:1] == ["html"] and "script" not in page.tags and "link" not in page.tags
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    # nothing from elsewhere: no src, no absolute link, no CSS import or url()
    assert not [v for k, v in page.attrs if k == "src"]
    assert all(v.startswith("#") for k, v in page.attrs if k == "href"), "only links inside the page"
    assert "url(" not in text and "@import" not in text and "http" not in text.split("<body>")[0]


def test_pass(doc_named):
    doc = doc_named("all_pass_gpu")
    text = feedback.render_page(doc)
    slots = sections(doc)
    assert set(slots) == set(SLOTS) and all(s.verdict == "pass" and s.first is None for s in slots.values())
    assert "did not pass" not in text and text.count('class="badge s-pass"') == 2 * len(SLOTS)
    assert "33 / 34" in text


def test_fail_with_hint(doc):
    s = sections(doc)["hierarchical"]
    assert s.verdict == "fail" and s.first["n"] == 2049
    kinds = {line.text.strip(): line.kind for line in s.lines}
    assert kinds[HINT] == "hint"
    assert kinds["why this case: one past a 2048-element tile: a second tile with a single element"] == "why"
    assert [line.text for line in s.lines if line.kind == "seed"] == ["seed: 101 (public suite, n=2049, int32, random)"]
    assert [line.text for line in s.lines if line.kind == "replay"] == \
        ["replay: GTEST_FILTER='Hierarchical/Kernel.Case/int32_n2049_random_inclusive' make test"]
    assert [o.status for o in s.others] == ["fail"]
    text = feedback.render_page(doc)
    assert f'<span class="l-hint">  {HINT}</span>' in text
    assert "First case that did not pass: hierarchical · int32 · n=2049 · random · inclusive" in text
    assert s.text.count("why this case:") == 1    # the judge's own line, not repeated


def test_compile_error(doc):
    s = sections(doc)["hillis_steele"]
    assert s.verdict == "compile_error" and s.every_case and s.others == []
    assert [line.kind for line in s.lines][:1] == ["message"]
    log_lines = {line.text: line.kind for line in s.lines if line.kind in ("log", "error")}
    assert log_lines["student/hillis_steele.cu:14: error: identifier \"tid\" is undefined"] == "error"
    assert log_lines["student/blelloch.cu:9:5: warning: unused variable 'x'"] == "log"
    assert s.lines[-1].text == "replay: make test"
    text = feedback.render_page(doc)
    assert "Every case:" in text and "did not compile: student/hillis_steele.cu" in text
    # the log once: in the slot's section, and the build section points there
    assert text.count("unused variable") == 1 and "1 compiler warning" in text
    assert 'is under <a href="#slot-hillis_steele">hillis_steele</a>' in text
    # a build with warnings only shows them in the build section
    doc["build"].update(status="ok", log=WARNINGS_LOG, failed_slots=[])
    for case in doc["cases"][:2]:
        case.update(status="pass", message="", points=1)
    text = feedback.render_page(doc)
    assert "<h3>Compiler warnings</h3>" in text and text.count("unused variable") == 1


def test_crash(doc):
    s = sections(doc)["blelloch"]
    assert s.verdict == "crash" and s.first_title == "blelloch · float32 · n=2048 · random"
    assert s.lines[0].text == CRASH_MESSAGE
    assert s.lines[-1].text == "replay: GTEST_FILTER='Blelloch/Kernel.Case/float32_n2048_random' make test"


def test_timed_case(doc):
    s = sections(doc)["single_pass"]
    assert s.verdict == "pass" and s.perf_points == "5/5"
    [t] = s.timed
    assert (t.median_ms, t.ratio_to_reference, t.ratio_to_cub, t.reps) == ("0.8", "1.2", "0.8", 25)
    assert "1.2×" in s.perf_note
    text = feedback.render_page(doc)
    assert "<td>n=16777216 · int32</td><td class=\"num\">0.8</td>" in text
    assert "× CUB" in text and "timings: median of 20+ repetitions" in text


def test_emulated_perf_note(doc_named):
    s = sections(doc_named("emulated"))["hierarchical"]
    assert s.timed == [] and "no timings" in s.perf_note
    assert s.every_case and s.lines[0].text.startswith("hierarchical is not implemented")


def test_student_strings_are_escaped(doc):
    evil = "<script>alert('pwned')</script>"
    bad = make_case("hierarchical", 4097, "int32", "fail", message=f"got {evil} & <b>bold</b>\n  hint: {evil}")
    doc["cases"].insert(4, bad)
    doc["submission"]["name"] = f"mallory{evil}"
    doc["build"]["log"] += f"student/x.cu:1: error: {evil}\n"
    doc["student_output"]["text"] = f"printed {evil}\n"
    text = feedback.render_page(doc)
    assert "<script" not in text and "<b>bold" not in text
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in text
    assert text.count("&lt;script&gt;") == 6     # title, h1, message, hint, compile log, printed output
    page = Page(text)
    assert "script" not in page.tags and page.spans["hierarchical"][:2] == ["message", "hint"]


def test_every_value_is_escaped(doc):
    """A hostile string in every text results.json gives the page (names, messages, logs, the device,
    notes, errors, the timing method, the program's output): the page's tags and attributes are its own,
    and each string reads back as it was written."""
    evil = """</pre></details>"'><script>alert('x')</script><img src=x onerror="alert(1)">&amp;"""
    doc["submission"]["name"] = f"n{evil}"
    doc["tool"]["version"] = f"v{evil}"
    doc["started_at"] = f"t{evil}"
    doc["environment"]["device"] = f"d{evil}"
    doc["outcome"], doc["errors"] = "not_graded", [f"e{evil}"]
    doc["build"].update(log=f"l{evil}\n" + doc["build"]["log"], missing_slots=["blelloch"],
                        policy_violations={"single_pass": f"p{evil}"})
    doc["student_output"]["text"] = f"o{evil}"
    for case in doc["cases"]:
        case["message"] = f"m{evil}\n  hint: h{evil}" if case["status"] != "pass" else ""
        if case.get("timing"):
            case["timing"]["method"] = f"w{evil}"
    text = feedback.render_page(doc)
    page = Page(text)
    own = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "small", "br", "strong", "div",
           "code", "table", "tr", "th", "td", "a", "section", "span", "pre", "details", "summary", "footer"}
    assert set(page.tags) <= own, set(page.tags) - own
    assert {k for k, _ in page.attrs} <= {"lang", "charset", "name", "content", "class", "href", "id", "colspan"}
    assert "<script" not in text and "<img" not in text and "onerror=\"" not in text
    shown = html.unescape(text)
    for mark in "ntdelpom":     # each hostile value, unescaped, is the text written
        assert f"{mark}{evil}" in shown, mark
    assert f"h{evil}" in shown and f"w{evil}" in shown and f"v{evil}" in shown


def test_written_without_jinja2(tmp_path, fake_build_dir):
    """make grade where Jinja2 cannot be imported (PEP 668 systems: no `pip install --user`): grade.py
    still writes feedback.html, the same page, and says nothing about Jinja2."""
    from test_grade import GRADE
    src = tmp_path / "fake_results.json"
    src.write_text(json.dumps(class_results()))
    sub = make_submission(tmp_path / "alice", {f"student/{s}.cu": "// ok\n" for s in SLOTS})
    out = tmp_path / "out"
    args = [str(a) for a in (sub, "--out", out, "--build-dir", fake_build_dir, "--backend", "gpu",
                             "--formats", "none")]
    blocked = ("import runpy, sys; sys.modules['jinja2'] = None; "   # None: `import jinja2` raises ImportError
               f"sys.argv = {[str(GRADE), *args]!r}; "
               f"runpy.run_path({str(GRADE)!r}, run_name='__main__')")
    env = dict(os.environ, FAKE_RESULTS=str(src), FAKE_RECORD=str(tmp_path / "record.json"), FAKE_EXIT="1",
               PYTHONPATH=str(GRADING))   # as `python3 grading/grade.py` finds its package
    r = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 1, r.stderr
    assert f"feedback: {out / 'feedback.html'}" in r.stderr and "Jinja2" not in r.stdout + r.stderr
    results = json.loads((out / "results.json").read_text())
    assert (out / "feedback.html").read_text() == feedback.render_page(results)
    probe = subprocess.run([sys.executable, "-c", "import sys; sys.modules['jinja2'] = None; import jinja2"],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr    # the block is real


def test_hidden_cases_show_nothing(doc_named):
    doc = doc_named("mixed")
    text = feedback.render_page(doc)
    assert SECRET not in text
    assert "1 hidden test did not pass" in text
    assert "debug: tile 3 sum" not in text and "your program's output could show their inputs" in text
    instructor = feedback.render_page(doc, instructor=True)
    assert SECRET in instructor and "debug: tile 3 sum" in instructor and "instructor view" in instructor


def test_layout_error_and_not_graded(doc_named):
    text = feedback.render_page(doc_named("layout_error"))
    assert "could not be read:</strong> found hillis_steele.cu at the top level" in text
    assert "<section" not in text
    assert "The grader failed (internal error, not your fault)" in feedback.render_page(doc_named("not_graded"))


# --- one text for the page and Gradescope -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["class", *sorted(fixtures.DOCUMENTS)])
def test_gradescope_output_is_the_page_text(name):
    doc = class_results() if name == "class" else fixtures.document(name)
    tests = {t["extra_data"]["id"]: t for t in to_gradescope(doc)["tests"] if "extra_data" in t}
    page = Page(feedback.render_page(doc))
    shown = 0
    for s in feedback.page_model(doc)["slots"]:
        if s.first is None:
            assert s.slot not in page.first_fb
            continue
        assert tests[s.first["id"]]["output"] == s.text
        assert page.first_fb[s.slot] == s.text
        shown += 1
    assert shown or name in ("all_pass_gpu", "layout_error")


def test_replay_commands():
    emulated = make_results([make_case("blelloch", 2049, "int32", "race", backend="emulate",
                                       values="alternating")], backend="emulate")
    [case] = emulated["cases"]
    assert gtest_name(case) == "Blelloch/Kernel.Case/int32_n2049_alternating"
    assert replay_commands(case, emulated) == \
        ["SCANGRADE_BACKEND=emulate GTEST_FILTER='Blelloch/Kernel.Case/int32_n2049_alternating' make test"]
    gpu = make_results([make_case("single_pass", 1025, "float32", "memory_error", suite="extra")])
    gpu["suites"][0].update(name="extra", path="/course/suites/extra.json")
    [case] = gpu["cases"]
    assert replay_commands(case, gpu) == [
        "GTEST_FILTER='SinglePass/Kernel.Case/float32_n1025_random' make test SUITE=extra.json",
        "compute-sanitizer --tool memcheck build/scangrade_student_test"
        " --gtest_filter='SinglePass/Kernel.Case/float32_n1025_random' --suite=extra.json"]
    # a hidden suite's seeds are mixed with the secret: the input cannot be made on the student's machine
    gpu["suites"][0]["secret_mixed"] = True
    assert replay_commands(case, gpu) == []
    lines = case_feedback(case, gpu)
    assert not [line for line in lines if line.kind == "replay"]
    assert "cannot be made again" in [line for line in lines if line.kind == "seed"][0].text
    # nothing to rerun: not implemented, internal errors
    ni = make_results([make_case("blelloch", 1, "int32", "not_implemented")])
    assert [line.kind for line in case_feedback(ni["cases"][0], ni)] == ["message"]


# --- the command line, grade.py, batch.py and the batch report ---------------------------------------------

def test_cli(tmp_path, doc):
    src = tmp_path / "results.json"
    src.write_text(json.dumps(doc))
    env = dict(os.environ, PYTHONPATH=str(GRADING))
    run = lambda *a: subprocess.run([sys.executable, "-m", "scangrade.feedback", *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True, timeout=60, env=env)
    r = run(src)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "feedback.html").read_text() == feedback.render_page(doc)
    r = run(src, "-o", tmp_path / "sub" / "page.html", "--instructor")
    assert r.returncode == 0 and "instructor view" in (tmp_path / "sub" / "page.html").read_text()
    r = run(tmp_path / "nope.json")
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_grade_writes_the_page(tmp_path, fake_build_dir):
    from test_grade import grade
    src = tmp_path / "fake_results.json"
    src.write_text(json.dumps(class_results()))
    env = {"FAKE_RESULTS": str(src), "FAKE_RECORD": str(tmp_path / "record.json"), "FAKE_EXIT": "1"}
    sub = make_submission(tmp_path / "alice", {f"student/{s}.cu": "// ok\n" for s in SLOTS})
    out = tmp_path / "out"
    (out).mkdir()
    (out / "feedback.html").write_text("stale")
    r = grade(sub, "--out", out, "--build-dir", fake_build_dir, "--backend", "gpu", "--formats", "none",
              env_extra=env)
    assert r.returncode == 1, r.stderr
    assert f"feedback: {out / 'feedback.html'}" in r.stderr
    results = json.loads((out / "results.json").read_text())
    assert (out / "feedback.html").read_text() == feedback.render_page(results)


def test_batch_writes_and_links_the_pages(tmp_path, fake_build_dir):
    from test_batch import FAKE_JUDGE, GOOD, run_batch, write_tree
    from conftest import write_script
    judge = write_script(tmp_path / "tools" / "fake_batch_judge", FAKE_JUDGE)
    tc_path = fake_build_dir / "grading" / "toolchain.json"
    tc_path.write_text(json.dumps(dict(json.loads(tc_path.read_text()), judge=str(judge))))
    fake = {"build": fake_build_dir,
            "env": dict(os.environ, PYTHONPATH=str(TESTS), FAKE_COUNTER=str(tmp_path / "counter.txt"),
                        FAKE_LOCKLOG=str(tmp_path / "locks.txt"))}
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_tree(subs / "ann", GOOD)
    write_tree(subs / "bob", dict(GOOD, **{"student/blelloch.cu": "SYNTAX_ERROR\n"}))
    r = run_batch(subs, out, fake, "--formats", "gradescope")
    assert r.returncode == 0, r.stderr
    report = (out / "report.html").read_text()
    for sid in ("ann", "bob"):
        page = out / "students" / sid / "feedback.html"
        results = json.loads((out / "students" / sid / "results.json").read_text())
        assert page.read_text() == feedback.render_page(results)
        assert f'<a href="students/{sid}/feedback.html">{sid}</a>' in report
    assert "blelloch did not compile:" in (out / "students" / "bob" / "feedback.html").read_text()
    # a resumed student whose page is missing gets it back without being graded again
    (out / "students" / "ann" / "feedback.html").unlink()
    r = run_batch(subs, out, fake, "--formats", "gradescope")
    assert r.returncode == 0, r.stderr
    assert (out / "students" / "ann" / "feedback.html").is_file()
    assert (tmp_path / "counter.txt").read_text().count("ann ") == 1


def test_the_score_says_which_cases_it_leaves_out(doc_named):
    """Emulated, the page says under the score which of the suite's cases the total leaves out (the
    emulation cap), as make grade's table and make test's points line do."""
    from scangrade.feedback import render_page
    doc = doc_named("emulated")
    doc["suites"] = [{"name": "public", "cases": len(doc["cases"]) + 10}]
    doc["max_n"] = 2**22 + 1
    page = render_page(doc)
    score = page.index('class="score')
    assert page.index("not in the total: 10 of") > score, page[score:score + 600]
    doc["suites"] = [{"name": "public", "cases": len(doc["cases"])}]
    assert "not in the total" not in render_page(doc)
