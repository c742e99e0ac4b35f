"""grading/gallery.py (scangrade/gallery.py): expected hints (the message of a slot's first
non-passing case must contain a substring), in the table, the exit status and --results-from /
--copies mode; and the gallery's own promises (how many entries, one planted bug each, hints that
name real slots). Nothing here compiles or grades: results.json documents are made by hand."""

from __future__ import annotations

import csv
import json
import re

import pytest

from conftest import GRADING
from scangrade import gallery
from scangrade.vocab import SLOTS

GALLERY = GRADING / "gallery"
NOT_WRITTEN = {"hillis_steele": "not_implemented", "blelloch": "not_implemented", "single_pass": "not_implemented"}


def case(slot: str, status: str, message: str = "", n: int = 1) -> dict:
    return {"id": f"{slot}.int32.n{n}.{status}", "slot": slot, "status": status, "message": message}


def results(*cases: dict) -> dict:
    return {"cases": list(cases)}


def not_written() -> list[dict]:
    return [case(slot, "not_implemented", f"{slot} is not implemented yet") for slot in NOT_WRITTEN]


def entry(hints: dict[str, str], doc: dict, expected: dict[str, str] | None = None) -> gallery.Entry:
    e = gallery.Entry("wrong_x", expected or {**NOT_WRITTEN, "hierarchical": "fail"}, "a bug", hints=hints)
    gallery.take_results(e, doc)
    return e


# --- the hint rule --------------------------------------------------------------------------------

def test_hint_found_in_the_first_problem():
    doc = results(*not_written(), case("hierarchical", "pass"),
                  case("hierarchical", "fail", "element 5: got 3, expected 4; the output is the EXCLUSIVE scan", 7))
    assert entry({"hierarchical": "the output is the EXCLUSIVE scan"}, doc).mismatches() == []


def test_hint_missing_is_a_mismatch():
    doc = results(*not_written(), case("hierarchical", "fail", "element 5: got 3, expected 4"))
    problems = entry({"hierarchical": "missing level"}, doc).mismatches()
    assert len(problems) == 1
    assert problems[0].startswith("hierarchical: ") and "'missing level'" in problems[0]
    assert "hierarchical.int32.n1.fail" in problems[0] and "got 3, expected 4" in problems[0]


def test_a_hint_on_a_slot_expected_to_have_none_is_a_mismatch():
    wrong_hint = "3 of 9 elements wrong\n  hint: out[5] holds the value expected one position earlier\n  why this case: x"
    doc = results(*not_written(), case("hierarchical", "fail", wrong_hint))
    problems = entry({"hierarchical": None}, doc).mismatches()
    assert len(problems) == 1 and "expected no hint" in problems[0], problems
    assert "one position earlier" in problems[0]
    doc = results(*not_written(), case("hierarchical", "fail", "3 of 9 elements wrong\n  why this case: x"))
    assert entry({"hierarchical": None}, doc).mismatches() == []


def test_a_fail_verdict_without_a_named_hint_expects_none():
    spec = {"verdicts": {**NOT_WRITTEN, "hierarchical": "fail"}}
    assert gallery.expected_hints(spec, "gpu") == {"hierarchical": None}
    assert gallery.expected_hints(spec, "emulate") == {"hierarchical": None}
    # an explicit null leaves the slot unchecked; other verdicts are not held to "no hint"
    assert gallery.expected_hints({**spec, "hints": {"hierarchical": None}}, "gpu") == {}
    assert gallery.expected_hints({**spec, "emulation_hints": {"hierarchical": None}}, "emulate") == {}
    assert gallery.expected_hints({"verdicts": {**NOT_WRITTEN, "hierarchical": "crash"}}, "gpu") == {}


def test_hint_is_case_sensitive():
    doc = results(*not_written(), case("hierarchical", "fail", "a Missing Level of block sums"))
    assert entry({"hierarchical": "missing level"}, doc).mismatches()


def test_only_the_first_non_passing_case_counts():
    # the substring is in a later case's message, not in the first problem's: a mismatch
    doc = results(*not_written(), case("hierarchical", "pass"),
                  case("hierarchical", "fail", "element 9 is wrong", 2),
                  case("hierarchical", "fail", "a missing level of block sums", 3))
    assert entry({"hierarchical": "missing level"}, doc).mismatches()
    # ...and the other way round: the first problem has it, a later one does not
    doc = results(*not_written(), case("hierarchical", "fail", "a missing level of block sums", 2),
                  case("hierarchical", "fail", "element 9 is wrong", 3))
    assert entry({"hierarchical": "missing level"}, doc).mismatches() == []


def test_first_problem_of_another_status_counts():
    # the verdict is crash (precedence) but the first non-passing case failed: its message is checked
    doc = results(*not_written(), case("hierarchical", "fail", "element 0 is wrong", 1),
                  case("hierarchical", "crash", "return before launching when n == 0", 0))
    e = entry({"hierarchical": "return before launching when n == 0"}, doc, {**NOT_WRITTEN, "hierarchical": "crash"})
    assert e.mismatches() and "first fail case" in e.mismatches()[0]


def test_hint_without_any_problem_is_a_mismatch():
    # the expected verdict matched (not_implemented is a problem too), but the hinted slot never failed
    doc = results(*not_written(), case("hierarchical", "pass"))
    e = entry({"hierarchical": "missing level"}, doc, {**NOT_WRITTEN, "hierarchical": "pass"})
    assert e.mismatches() == ["hierarchical: expected a message containing 'missing level', but no case of the slot failed"]


def test_a_wrong_verdict_is_reported_once():
    doc = results(*not_written(), case("hierarchical", "crash", "segmentation fault"))
    e = entry({"hierarchical": "missing level"}, doc)
    assert e.mismatches() == ["hierarchical: expected fail, got crash"]


def test_a_hint_never_expected_is_looked_for_in_every_problem():
    # the first failing case names no wrong bug, a later one does: hints_never finds it
    doc = results(*not_written(), case("hierarchical", "fail", "first wrong: out[0]", n=1),
                  case("hierarchical", "fail", "first wrong: out[3]\n  hint: the output is the INCLUSIVE scan", n=5))
    e = gallery.Entry("wrong_x", {**NOT_WRITTEN, "hierarchical": "fail"}, "a bug",
                      hints={"hierarchical": "first wrong"}, never={"hierarchical": ["INCLUSIVE"]})
    gallery.take_results(e, doc)
    (problem,) = e.mismatches()
    assert problem.startswith("hierarchical: expected no message to contain 'INCLUSIVE', got it in "
                              "hierarchical.int32.n5.fail"), problem
    e.never = {"hierarchical": ["EXCLUSIVE"]}
    gallery.take_results(e, doc)
    assert e.mismatches() == []


def test_expected_hints_per_backend():
    spec = {"verdicts": {**NOT_WRITTEN, "hierarchical": "fail"},
            "emulation_verdicts": {"hierarchical": "pass"},
            "hints": {"hierarchical": "missing level", "blelloch": "not implemented"}}
    assert gallery.expected_hints(spec, "gpu") == {"hierarchical": "missing level", "blelloch": "not implemented"}
    # emulated the slot is expected to pass: its hint is not checked
    assert gallery.expected_hints(spec, "emulate") == {"blelloch": "not implemented"}
    spec = {"verdicts": {**NOT_WRITTEN, "hierarchical": "out_of_bounds_write"},
            "hints": {"hierarchical": "past the end", "single_pass": "not implemented"},
            "emulation_hints": {"hierarchical": "segmentation", "single_pass": None}}
    assert gallery.expected_hints(spec, "emulate") == {"hierarchical": "segmentation"}
    assert gallery.expected_hints(spec, "gpu") == {"hierarchical": "past the end", "single_pass": "not implemented"}


# --- gpu_timing: the GPU's fair share (GPU backend only) -------------------------------------------

HOLDS = {"max_timing_s": 20, "slots": {"hierarchical": {"stopped": "timing stopped", "max_perf_points": 0},
                                       "single_pass": {"timed": True}}}


def timed_results(timing_s: float, hierarchical: dict, stopped_case: str = "") -> dict:
    timing = {"median_ms": 1400.0, **({"stopped": stopped_case} if stopped_case else {})}
    return {"phases": {"timing_s": timing_s},
            "slots": {"hierarchical": {"perf_points": 0.0, **hierarchical}, "single_pass": {"perf_points": 1.5}},
            "cases": [case("hierarchical", "pass") | {"timing": timing},
                      case("hierarchical", "pass", n=2) | {"timing": None},
                      case("single_pass", "pass") | {"timing": {"median_ms": 0.3}}]}


def test_gpu_timing_is_checked_on_the_gpu_only():
    spec = {"verdicts": {slot: "pass" for slot in SLOTS}, "gpu_timing": HOLDS}
    assert gallery.expected_timing(spec, "gpu") == HOLDS
    assert gallery.expected_timing(spec, "emulate") == {}


def test_gpu_timing_holds():
    stopped = {"timing_stopped": "timing stopped: call 1 of case x ran past the slot's timing budget"}
    assert gallery.timing_problems(HOLDS, timed_results(6.5, stopped)) == []
    # the reason on a case's timing counts as well
    assert gallery.timing_problems(HOLDS, timed_results(6.5, {}, "timing stopped after 4 calls: ...")) == []


def test_gpu_timing_mismatches():
    problems = gallery.timing_problems(HOLDS, timed_results(31.0, {"perf_points": 2.0}))
    assert problems[0] == "the timed phase took 31.0 s, more than 20 s"
    assert "hierarchical: expected its timing stopped with 'timing stopped', got 'no stop'" in problems
    assert "hierarchical: 2.0 performance points, expected at most 0" in problems
    # a slot that must not stop, stopped; a slot that must be timed, stopped before every case was
    doc = timed_results(5.0, {"timing_stopped": "timing stopped: x"})
    doc["slots"]["single_pass"]["timing_stopped"] = "timing stopped: y"
    found = gallery.timing_problems({"slots": {"hierarchical": {"stopped": None}, "single_pass": {"timed": True}}}, doc)
    assert found == ["hierarchical: expected its timing not stopped, got 'timing stopped: x'",
                     "single_pass: expected every perf case timed, got 'timing stopped: y'"]
    e = gallery.Entry("exploit_x", {slot: "pass" for slot in SLOTS}, "a bug", timing=HOLDS)
    gallery.take_results(e, timed_results(31.0, {}) | {"cases": [case(slot, "pass") for slot in SLOTS]})
    assert any(m.startswith("gpu_timing: the timed phase took 31.0 s") for m in e.mismatches())


def test_holds_the_gpu_entry():
    # a correct slot that holds the GPU 1.5 s in every call with n >= 2^24: every verdict pass, and on
    # the GPU its timing stopped by the fair share, no performance points, the phase bounded
    spec = gallery_specs()["exploit_holds_the_gpu"]
    assert spec["kind"] == "timing"
    assert set(spec["verdicts"].values()) == {"pass"} and not spec.get("emulation_verdicts")
    assert spec["gpu_timing"] == HOLDS
    source = (GALLERY / "exploit_holds_the_gpu" / "student" / "hierarchical.cu").read_text()
    assert "n < (std::size_t{1} << 24)" in source and "std::chrono::milliseconds(1500)" in source


# --- end to end: the table, the exit status, --results-from and --copies --------------------------

@pytest.fixture
def fake_gallery(tmp_path, monkeypatch):
    """A gallery of one entry (wrong_x: hierarchical fail, hint 'missing level'), a build folder with a
    toolchain.json, and a writer of batch folders whose results are given per raw name."""
    root = tmp_path / "gallery"
    (root / "wrong_x").mkdir(parents=True)
    (root / "wrong_x" / "expected.json").write_text(json.dumps({
        "description": "d", "bug": "b", "verdicts": {**NOT_WRITTEN, "hierarchical": "fail"},
        "hints": {"hierarchical": "missing level"}}))
    monkeypatch.setattr(gallery, "GALLERY", root)
    build = tmp_path / "build"
    (build / "grading").mkdir(parents=True)
    (build / "grading" / "toolchain.json").write_text(json.dumps({"judge": "/bin/false", "emulate": {}}))

    def batch(docs: dict[str, dict]) -> "Path":
        out = tmp_path / f"batch{len(list(tmp_path.glob('batch*')))}"
        out.mkdir()
        with open(out / "gradebook.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["student_id", "raw_name", "outcome", "flags", "results"])
            w.writeheader()
            for i, (raw, doc) in enumerate(sorted(docs.items())):
                (out / f"{raw}.json").write_text(json.dumps(doc))
                w.writerow({"student_id": f"s{i:03d}", "raw_name": raw, "outcome": "graded", "flags": "",
                            "results": f"{raw}.json"})
        return out

    return build, batch


RIGHT = results(*not_written(), case("hierarchical", "fail", "tiles after 2048 lack an offset: a missing level?"))
WRONG_HINT = results(*not_written(), case("hierarchical", "fail", "element 4194304: got 1, expected 2"))


def run_main(argv: list[str], capsys) -> tuple[int, str]:
    status = gallery.main(argv)
    return status, capsys.readouterr().out


def test_results_from_with_the_hint(fake_gallery, capsys):
    build, batch = fake_gallery
    status, out = run_main(["--backend", "emulate", "--build-dir", str(build), "--entries", "wrong_x",
                            "--results-from", str(batch({"wrong_x": RIGHT}))], capsys)
    assert status == 0, out
    assert re.search(r"^wrong_x\s+not_implemented\s+not_implemented\s+fail\s+not_implemented\s+ok$", out, re.M), out
    assert "MISMATCH" not in out


def test_results_from_without_the_hint(fake_gallery, capsys, tmp_path):
    build, batch = fake_gallery
    status, out = run_main(["--backend", "emulate", "--build-dir", str(build), "--entries", "wrong_x", "--json",
                            str(tmp_path / "v.json"), "--results-from", str(batch({"wrong_x": WRONG_HINT}))], capsys)
    assert status == 1, out
    assert re.search(r"^wrong_x\s+.*\sfail!=hint\s.*MISMATCH$", out, re.M), out
    assert "MISMATCH wrong_x: hierarchical: expected the message of its first fail case" in out
    doc = json.loads((tmp_path / "v.json").read_text())
    assert doc["wrong_x"]["hints"] == {"hierarchical": "missing level"}
    assert list(doc["wrong_x"]["hint_mismatches"]) == ["hierarchical"]


def test_copies_check_hints_per_copy(fake_gallery, capsys, tmp_path):
    build, batch = fake_gallery
    copies = tmp_path / "copies.json"
    copies.write_text(json.dumps({"copy_a": "wrong_x", "copy_b": "wrong_x"}))
    status, out = run_main(["--backend", "emulate", "--build-dir", str(build), "--copies", str(copies),
                            "--results-from", str(batch({"copy_a": RIGHT, "copy_b": WRONG_HINT}))], capsys)
    assert status == 1, out
    assert re.search(r"^s000\s.*\sok$", out, re.M) and re.search(r"^s001\s.*fail!=hint.*MISMATCH$", out, re.M), out


# --- the gallery itself ---------------------------------------------------------------------------

def gallery_specs() -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(GALLERY.glob("*/expected.json"))}


def test_gallery_size():
    names = gallery_specs()
    wrong = [n for n in names if n.startswith("wrong_")]
    correct = [n for n in names if n.startswith("correct_")]
    assert len(wrong) >= 25, wrong
    assert len(correct) >= 8, correct


@pytest.mark.parametrize("name, spec", sorted(gallery_specs().items()))
def test_entry_spec(name, spec):
    student = GALLERY / name / "student"
    verdicts = spec["verdicts"]
    assert set(verdicts) == set(SLOTS), name
    assert set(spec.get("emulation_verdicts", {})) <= set(SLOTS)
    for key in ("hints", "emulation_hints"):
        hints = spec.get(key, {})
        assert set(hints) <= set(SLOTS), (name, key)
        assert all(h is None or (isinstance(h, str) and h) for h in hints.values()), (name, key)
    never = spec.get("hints_never", {})
    assert set(never) <= set(SLOTS) and all(isinstance(w, list) and all(isinstance(x, str) and x for x in w)
                                            for w in never.values()), name
    # a slot file that is missing is graded not_implemented (and no other way round)
    for slot in SLOTS:
        if not (student / f"{slot}.cu").is_file():
            assert verdicts[slot] == "not_implemented", (name, slot)
    if name.startswith("correct_"):
        assert set(verdicts.values()) == {"pass"} and not spec.get("emulation_verdicts"), name
        assert not re.search(r"//\s*BUG\b", "".join(p.read_text() for p in student.iterdir())), name
    if name.startswith("wrong_"):
        sources = "".join(p.read_text() for p in sorted(student.iterdir()))
        marks = re.findall(r"//\s*BUG\b(?! \(continued\))", sources)   # "// BUG (continued)" goes on about the same one
        assert len(marks) == 1, f"{name}: exactly one planted bug, marked // BUG"


def test_readme_names_every_entry_but_the_sandbox_exploits():
    # the sandbox's own exploit entries ("kind": "exploit") are described by test_exploits.py; every
    # other entry has its row (or paragraph) in the gallery README
    readme = (GALLERY / "README.md").read_text()
    missing = [name for name, spec in gallery_specs().items()
               if spec.get("kind") != "exploit" and f"`{name}`" not in readme]
    assert missing == []


# --- issue 36: judge what code does, not what it names --------------------------------------------

# host compute whose upload takes another door than a host->device cudaMemcpy, and the hint naming it
UPLOAD_DOORS = {
    "exploit_upload_through_kernel_params": "kernel parameters",
    "exploit_upload_through_memset": "cudaMemset",
    "exploit_copies_labelled_host_to_host": "computed on the host",
    "exploit_upload_through_symbol": "cudaMemcpyToSymbol",
}
C_HABIT_HEADERS = ["math.h", "stdlib.h", "stdio.h", "assert.h", "time.h", "sys/time.h", "iostream", "cuda.h"]


@pytest.mark.parametrize("name, hint", sorted(UPLOAD_DOORS.items()))
def test_upload_door_entries(name, hint):
    spec = gallery_specs()[name]
    assert spec["kind"] == "policy"
    assert spec["verdicts"] == {**NOT_WRITTEN, "hierarchical": "policy_violation"}
    assert not spec.get("emulation_verdicts") and not spec.get("emulation_hints")
    assert spec["hints"] == {"hierarchical": hint}
    student = GALLERY / name / "student"
    assert sorted(p.name for p in student.iterdir()) == ["hierarchical.cu"]
    source = (student / "hierarchical.cu").read_text()
    assert len(re.findall(r"//\s*BUG\b", source)) == 1, f"{name}: exactly one planted channel, marked // BUG"
    assert "namespace scangrade::student" in source


def test_c_habits_entry_keeps_its_habits():
    # the habits are the point of the entry: a cleanup that drops them would make it prove nothing
    student = GALLERY / "correct_c_headers_and_exit_habits" / "student"
    for slot in SLOTS:
        text = (student / f"{slot}.cu").read_text()
        for header in C_HABIT_HEADERS:
            assert f"#include <{header}>" in text, (slot, header)
        assert "CHECK_CUDA(" in text and "std::cerr" in text, slot
    helper = (student / "check_cuda.cuh").read_text()
    assert "#define CHECK_CUDA(call)" in helper and "exit(EXIT_FAILURE)" in helper and "gettimeofday" in helper
    for slot in ("hierarchical", "single_pass"):
        assert "ceil((double)n" in (student / f"{slot}.cu").read_text(), slot
    assert not re.search(r"\bcu[A-Z]\w*\(", "".join(p.read_text() for p in student.iterdir())), "no driver API call"


def test_gathers_block_sums_entry_reads_back_and_uploads():
    text = (GALLERY / "correct_gathers_block_sums_on_host" / "student" / "hierarchical.cu").read_text()
    assert "cudaMemcpyDeviceToHost" in text and "cudaMemcpyHostToDevice" in text
