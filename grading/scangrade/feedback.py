"""The page a student reads: feedback.html, one self-contained HTML file per graded submission.

grade.py writes it next to results.json (batch.py: in every DIR/students/<id>/, and report.html links
it). Sections: the score and how it was graded; one row per slot (verdict, cases passed, points,
performance points); per slot, the first case that did not pass, with the judge's whole message, its
hint lines set apart, why the case exists, its seed and the `make test` command that reruns it -- the
lines of feedback_text.case_feedback, so Gradescope's output for that test says the same --, the compile
log when the slot did not compile, the other cases that did not pass, and the timed cases' figures
(median ms, GB/s, × reference, × CUB); then the build's warnings and what the program printed.

A case that is not `visible` shows neither its input nor its message: it reads "hidden test", as in
the PrairieLearn and Autolab exports (--instructor shows everything). This module computes what the
page shows (page_model); feedback_page.py is its markup, on the standard library alone (no Jinja2:
`make grade` writes the page where nothing can be installed), and escapes every string from
results.json: messages and logs hold what the student's code and compiler printed. No script, no
stylesheet, font or image from elsewhere; one column on a phone.

    PYTHONPATH=grading python3 -m scangrade.feedback results.json -o feedback.html [--instructor]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .feedback_page import render
from .feedback_text import EMULATED, STATUS_TEXT, Line, case_feedback, feedback_text
from .results import add_results_arguments, case_title, fmt_points, is_hidden, printable_doc, results_from_args, slot_cases
from .report import left_out_by_size
from .vocab import SLOT_FILES, slot_verdict

FILE_NAME = "feedback.html"
WHOLE_SLOT = ("compile_error", "not_implemented", "policy_violation")   # one case says it for every case of the slot


@dataclass
class Timed:
    """A timed case's figures (GPU), or a hidden one's placeholder (all None)."""
    title: str
    median_ms: str = ""
    gbps: str = ""
    ratio_to_reference: str = ""
    ratio_to_cub: str = ""
    reps: int = 0


@dataclass
class Other:
    """Another case of the slot that did not pass: its title, status and feedback (none when hidden)."""
    title: str
    status: str
    lines: list[Line] = field(default_factory=list)


@dataclass
class SlotFeedback:
    slot: str
    file: str
    verdict: str                    # pass or a status (vocab.slot_verdict over every case, hidden ones too)
    verdict_text: str
    passed: int
    cases: int
    points: str
    perf_points: str                # "" when the slot has no performance points
    first: dict | None = None       # the first shown case that did not pass
    first_title: str = ""
    first_points: str = ""
    every_case: bool = False        # the first case's status is every case's (not implemented, compile error...)
    lines: list[Line] = field(default_factory=list)
    others: list[Other] = field(default_factory=list)
    hidden_failed: int = 0          # cases that did not pass and are not shown
    timed: list[Timed] = field(default_factory=list)
    perf_note: str = ""

    @property
    def text(self) -> str:
        """The first failing case's feedback as plain text: its Gradescope test output."""
        return feedback_text(self.lines)


def slot_feedback(results: dict, slot: str, cases: list[dict], instructor: bool = False) -> SlotFeedback:
    info = results["slots"][slot]
    verdict = slot_verdict(info["statuses"])
    fb = SlotFeedback(
        slot=slot, file=f"student/{SLOT_FILES[slot]}", verdict=verdict,
        verdict_text="every case passed" if verdict == "pass" else STATUS_TEXT.get(verdict, verdict),
        passed=info["passed"], cases=info["cases"],
        points=f"{fmt_points(info['points'])}/{fmt_points(info['max_points'])}",
        perf_points=(f"{fmt_points(info['perf_points'])}/{fmt_points(info['perf_max_points'])}"
                     if info["perf_max_points"] else ""))
    for case in cases:
        if case["status"] == "pass":
            continue
        if is_hidden(case) and not instructor:
            fb.hidden_failed += 1
        elif fb.first is None:
            fb.first, fb.first_title = case, case_title(case)
            fb.first_points = f"{fmt_points(case['points'])}/{fmt_points(case['max_points'])}"
            fb.lines = case_feedback(case, results)
        elif not (case["status"] == fb.first["status"] and case["status"] in WHOLE_SLOT):
            fb.others.append(Other(case_title(case), case["status"], case_feedback(case, results, compile_log=False)))
    if fb.first is not None and fb.first["status"] in WHOLE_SLOT:
        fb.every_case = info["statuses"].get(fb.first["status"]) == info["cases"]
    hidden_k = 0
    for case in cases:
        t = case.get("timing")
        if not t:
            continue
        if is_hidden(case) and not instructor:
            hidden_k += 1
            fb.timed.append(Timed(f"hidden performance case {hidden_k}"))
            continue
        fb.timed.append(Timed(f"n={case['n']} · {case['dtype']}", f"{t['median_ms']:.4g}", f"{t['gbps']:.4g}",
                              f"{t['ratio_to_reference']:.3g}", f"{t['ratio_to_cub']:.3g}", t["reps"]))
    if info["perf_max_points"]:
        if results["backend"] == "emulate":
            fb.perf_note = EMULATED
        elif not fb.timed:
            fb.perf_note = "no timings: only a slot whose correctness cases all pass is timed"
        elif info.get("perf_ratio") is not None:
            fb.perf_note = (f"geometric mean speed vs the reference: {info['perf_ratio']:.3g}× "
                            "(1 = the reference's speed: full points; 0.25 or less: none)")
    return fb


def page_model(results: dict, instructor: bool = False) -> dict:
    """What the page shows (feedback_page.render), computed from results.json alone."""
    results = printable_doc(results)     # any student text: see results.printable
    s, b = results["score"], results["build"]
    env = results["environment"]
    layout_error = b["status"] == "layout_error"
    grouped = slot_cases(results)
    slots = [] if layout_error else [slot_feedback(results, slot, grouped[slot], instructor)
                                     for slot in grouped if slot in results["slots"]]
    notes = []
    if b["missing_slots"]:
        notes.append("missing slot files (graded as not implemented): "
                     + ", ".join(f"student/{SLOT_FILES[x]}" for x in b["missing_slots"]))
    if b["failed_slots"]:
        notes.append("did not compile: " + ", ".join(f"student/{SLOT_FILES[x]}" for x in b["failed_slots"])
                     + " (the compile log is below; the other slots were still graded)")
    for slot, evidence in (b.get("policy_violations") or {}).items():
        notes.append(f"student/{SLOT_FILES[slot]} breaks a rule of the assignment (not linked, 0 points): {evidence}")
    any_hidden = any(is_hidden(c) for c in results["cases"])
    shown_output = results["student_output"]["text"] if (instructor or not any_hidden) else ""
    method = next((c["timing"]["method"] for c in results["cases"] if c.get("timing")), "")
    return {
        "name": results["submission"]["name"], "version": results["tool"]["version"],
        "started_at": results["started_at"], "instructor": instructor,
        "total": fmt_points(s["total"]), "max_total": fmt_points(s["max_total"]),
        "points": f"{fmt_points(s['points'])}/{fmt_points(s['max_points'])}",
        "perf_points": f"{fmt_points(s['perf_points'])}/{fmt_points(s['perf_max_points'])}"
                       if s["perf_max_points"] else "",
        "full": s["max_total"] > 0 and s["total"] >= s["max_total"],
        "left_out": left_out_by_size(results) or "",    # the emulation cap, said beside the total
        "backend": ("CPU emulation backend: no timings, no performance points" if results["backend"] == "emulate"
                    else f"GPU: {env['device']}"),
        "not_graded": results["outcome"] == "not_graded", "errors": results.get("errors", [])[:5],
        "layout_error": b["log"].strip() if layout_error else "",
        "notes": notes, "slots": slots, "method": method if results["backend"] == "gpu" else "",
        "build": {"status": b["status"], "warnings": b.get("warnings", 0), "log": "" if layout_error else b["log"],
                  "failed": bool(b["failed_slots"]), "seconds": b.get("seconds"),
                  # the slot whose section already shows the whole log (its first case is a compile error)
                  "log_in": next((x.slot for x in slots if any(line.kind in ("log", "error") for line in x.lines)),
                                 "")},
        "student_output": shown_output, "output_truncated": results["student_output"]["truncated"],
        "output_withheld": bool(results["student_output"]["text"]) and not shown_output,
    }


def render_page(results: dict, instructor: bool = False) -> str:
    return render(page_model(results, instructor))


def write_page(results: dict, out_dir: Path, instructor: bool = False) -> Path:
    """Write out_dir/feedback.html."""
    text = render_page(results, instructor)
    path = Path(out_dir) / FILE_NAME
    path.write_text(text, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m scangrade.feedback",
        description="Write the feedback page a student reads (feedback.html) from a ScanGrade results.json.",
        epilog="Exit status: 0 written, 2 unreadable results.json or bad usage.")
    add_results_arguments(parser)
    parser.add_argument("-o", "--output", type=Path,
                        help=f"file to write (default: {FILE_NAME} next to results.json; - for stdout)")
    parser.add_argument("--instructor", action="store_true",
                        help="show hidden cases' names, messages and timings too (never give this page to a student)")
    args = parser.parse_args(argv)
    results = results_from_args(args)
    if results is None:
        return 2
    text = render_page(results, args.instructor)
    if str(args.output) == "-":
        sys.stdout.write(text)
        return 0
    out = args.output or args.results.parent / FILE_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
