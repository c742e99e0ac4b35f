"""Every exporter over every fixture document, checked against the platform's documented format."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import GRADING, assert_valid
from scangrade import exporters
from scangrade.exporters import EMULATED, to_autolab, to_gradescope, to_junit, to_prairielearn
from fixtures import SECRET, make_case, make_results


# --- Gradescope -------------------------------------------------------------------------------------

def test_gradescope_valid(results_doc):
    gs = to_gradescope(results_doc)
    assert_valid(gs, "gradescope")
    assert gs["score"] == results_doc["score"]["total"]
    numbers = [t["number"] for t in gs["tests"]]
    assert len(numbers) == len(set(numbers))
    assert all(re.fullmatch(r"[1-4]\.\d+", n) for n in numbers)
    perf_tests = sum(1 for s in results_doc["slots"].values() if s["perf_max_points"] > 0)
    assert len(gs["tests"]) == len(results_doc["cases"]) + perf_tests
    by_name = {}
    for case, test in zip([c for s in exporters.SLOTS for c in results_doc["cases"] if c["slot"] == s],
                          [t for t in gs["tests"] if "performance" not in t["tags"]]):
        assert test["status"] == ("passed" if case["status"] == "pass" else "failed")
        assert test["visibility"] == case["visibility"]
        assert test["tags"] == [case["slot"], case["dtype"]]
        assert test["score"] == case["points"] and test["max_score"] == case["max_points"]
        by_name[test["name"]] = test
    # the sum of the tests is the total too (Gradescope shows both)
    assert sum(t["score"] for t in gs["tests"]) == pytest.approx(results_doc["score"]["total"])


def test_gradescope_names_and_numbers(doc_named):
    gs = to_gradescope(doc_named("all_pass_gpu"))
    names = [t["name"] for t in gs["tests"]]
    assert "hillis_steele · int32 · n=1025 · random" not in names  # hillis_steele's largest is 1024
    assert "blelloch · int32 · n=1025 · random" in names
    assert "hierarchical · int32 · n=1025 · random · inclusive" in names
    assert gs["tests"][0]["number"] == "1.1"
    perf = [t for t in gs["tests"] if t["name"] == "hierarchical · performance"][0]
    assert (perf["score"], perf["max_score"]) == (4, 5)
    assert "1.2x" in perf["output"] or "1.2" in perf["output"]
    board = {e["name"]: e for e in gs["leaderboard"]}
    assert set(board) == {"hierarchical × reference", "single_pass × reference"}
    assert all(e["order"] == "desc" for e in board.values())


def test_gradescope_emulated_says_so(doc_named):
    gs = to_gradescope(doc_named("emulated"))
    assert EMULATED in gs["output"]
    assert "leaderboard" not in gs
    perf = [t for t in gs["tests"] if "performance" in t["tags"]]
    assert perf and all(EMULATED in t["output"] for t in perf)


def test_gradescope_compile_log_once_per_slot(doc_named):
    doc = doc_named("mixed")
    gs = to_gradescope(doc)
    blelloch = [t for t in gs["tests"] if t["tags"][0] == "blelloch"]
    with_log = [t for t in blelloch if "student/blelloch.cu:11: error" in t["output"]]
    assert len(with_log) == 1
    assert all("see test 2.1" in t["output"] for t in blelloch[1:])
    internal = [t for t in gs["tests"] if "internal error" in t["output"]]
    assert internal and "not your fault" in internal[0]["output"]
    assert "did not compile: blelloch" in gs["output"]
    assert "student/single_pass.cu" in gs["output"]


def test_gradescope_not_graded_message(doc_named):
    gs = to_gradescope(doc_named("not_graded"))
    assert "internal error" in gs["output"] and "please report" in gs["output"]


# --- PrairieLearn -----------------------------------------------------------------------------------

def test_prairielearn_valid(results_doc):
    pl = to_prairielearn(results_doc)
    assert_valid(pl, "prairielearn")
    assert len(json.dumps(pl).encode()) < exporters.PL_LIMIT
    ungradable = results_doc["outcome"] == "not_graded" or results_doc["build"]["status"] == "layout_error"
    assert pl["gradable"] is (not ungradable)
    if pl["gradable"]:
        s = results_doc["score"]
        assert pl["score"] == pytest.approx(s["total"] / s["max_total"])
        assert sum(t["points"] for t in pl["tests"]) == pytest.approx(s["total"])
        assert sum(t["max_points"] for t in pl["tests"]) == pytest.approx(s["max_total"])
    else:
        assert "score" not in pl and pl["format_errors"]


def test_prairielearn_layout_error_is_not_gradable(doc_named):
    pl = to_prairielearn(doc_named("layout_error"))
    assert pl["gradable"] is False
    assert "put your files in student/" in pl["format_errors"][0]


def test_prairielearn_hides_hidden_cases(doc_named):
    doc = doc_named("mixed")
    pl = to_prairielearn(doc)
    text = json.dumps(pl)
    assert SECRET not in text
    hidden_ids = [c["id"] for c in doc["cases"] if c["visibility"] != "visible"]
    assert hidden_ids and not any(i in text for i in hidden_ids)
    hidden = [t for t in pl["tests"] if t["message"] == "hidden test"]
    assert len(hidden) == len(hidden_ids)
    assert [t["max_points"] for t in hidden] == [1, 1]
    # the student's own output is not shown when hidden cases exist (it could print their inputs)
    assert "tile 3 sum" not in text
    # the instructor view shows them
    assert SECRET in json.dumps(to_prairielearn(doc, student_facing=False))


def test_prairielearn_stays_under_1mb():
    huge = "x" * 20_000
    cases = [make_case("hierarchical", 1000 + i, "int32", "fail", message=huge) for i in range(400)]
    doc = make_results(cases)
    assert_valid(doc, "results")
    assert len(json.dumps(doc)) > 5 * exporters.PL_LIMIT
    pl = to_prairielearn(doc)
    assert_valid(pl, "prairielearn")
    assert len(json.dumps(pl).encode()) <= exporters.PL_LIMIT
    assert len(pl["tests"]) == 400 and pl["score"] == 0


# --- Autolab ----------------------------------------------------------------------------------------

def test_autolab_last_line(results_doc):
    text = to_autolab(results_doc)
    lines = text.rstrip("\n").split("\n")
    last = json.loads(lines[-1])
    assert set(last) == {"scores", "scoreboard"}
    assert set(last["scores"]) == set(exporters.SLOTS)
    assert sum(last["scores"].values()) == pytest.approx(results_doc["score"]["total"])
    assert last["scoreboard"][0] == results_doc["score"]["total"]
    assert all(isinstance(v, (int, float)) for v in last["scoreboard"])
    feedback = json.loads(lines[-2])
    assert feedback["_presentation"] == "semantic"
    assert all(stage in feedback for stage in feedback["stages"])


def test_autolab_hides_hidden_cases(doc_named):
    text = to_autolab(doc_named("mixed"))
    assert SECRET not in text
    assert "hidden test 1" in text


# --- JUnit ------------------------------------------------------------------------------------------

def test_junit_counts_add_up(results_doc):
    root = ET.fromstring(to_junit(results_doc))
    assert root.tag == "testsuites"
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        slot = suite.get("name")
        assert all(tc.get("classname") == f"scangrade.{slot}" for tc in cases)
        counts = {"tests": len(cases),
                  "failures": sum(1 for tc in cases if tc.find("failure") is not None),
                  "errors": sum(1 for tc in cases if tc.find("error") is not None),
                  "skipped": sum(1 for tc in cases if tc.find("skipped") is not None)}
        for k, v in counts.items():
            assert int(suite.get(k)) == v, (slot, k)
            totals[k] += v
        float(suite.get("time"))
    for k, v in totals.items():
        assert int(root.get(k)) == v
    assert totals["tests"] == len(results_doc["cases"])
    statuses = [c["status"] for c in results_doc["cases"]]
    assert totals["errors"] == statuses.count("internal_error")
    assert totals["skipped"] == statuses.count("not_implemented")
    assert totals["failures"] == len(statuses) - statuses.count("pass") - totals["errors"] - totals["skipped"]


def test_junit_elements(doc_named):
    root = ET.fromstring(to_junit(doc_named("mixed")))
    by_status = {}
    for tc in root.iter("testcase"):
        for child in tc:
            by_status.setdefault(child.tag, []).append(child)
    assert {f.get("message") for f in by_status["failure"]} >= {"fail", "crash", "timeout", "compile_error"}
    assert by_status["error"][0].get("message") == "internal_error"
    assert by_status["skipped"][0].get("message") == "not implemented"
    fail = [f for f in by_status["failure"] if f.get("message") == "fail"][0]
    assert "first wrong" in fail.text


# --- CLI --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", exporters.FORMATS)
def test_cli_writes_file(tmp_path, doc_named, fmt):
    src = tmp_path / "results.json"
    src.write_text(json.dumps(doc_named("mixed")))
    out = tmp_path / "out" / "export"
    r = subprocess.run([sys.executable, str(GRADING / "exporters.py"), str(src), "--format", fmt, "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    if fmt in ("gradescope", "prairielearn"):
        assert_valid(json.loads(text), fmt)
    elif fmt == "autolab":
        assert "scores" in json.loads(text.splitlines()[-1])
    else:
        ET.fromstring(text)


def test_cli_rejects_a_document_off_the_schema(tmp_path, doc_named):
    doc = doc_named("mixed")
    doc["cases"][0]["status"] = "passed"   # not a status
    src = tmp_path / "results.json"
    src.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, str(GRADING / "exporters.py"), str(src), "--format", "junit"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "results.schema.json" in r.stderr


def test_parse_formats():
    assert exporters.parse_formats("all") == list(exporters.FORMATS)
    assert exporters.parse_formats("none") == []
    assert exporters.parse_formats("junit,gradescope,junit") == ["junit", "gradescope"]
    with pytest.raises(ValueError, match="unknown format 'moodle'"):
        exporters.parse_formats("gradescope,moodle")
