"""What a student reads about a graded submission: the summary lines every platform shows at the top,
and per case that did not pass its lines (case_feedback: the judge's message with its hint lines, why
the case exists, its seed and the `make test` command that reruns it). Gradescope's and PrairieLearn's
test output (exporters.py) and the slot sections of feedback.html (feedback.py) are these lines, so a
case reads the same everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from .results import fmt_points

EMULATED = "graded on the CPU emulation backend: no timings, no performance points"

STATUS_TEXT = {
    "pass": "passed", "fail": "wrong values", "not_implemented": "not implemented", "crash": "crashed",
    "timeout": "timed out", "compile_error": "did not compile",
    "policy_violation": "broke a rule of the assignment (CUB/Thrust, harness or CUDA runtime symbols, main)",
    "out_of_bounds_write": "wrote out of bounds",
    "input_modified": "modified its input", "leak": "leaked device memory", "race": "data race",
    "memory_error": "memory error", "internal_error": "grader internal error (not your fault: please report)",
}


def summary_lines(results: dict) -> list[str]:
    """The short text every platform shows at the top."""
    s, b = results["score"], results["build"]
    head = f"ScanGrade {results['tool']['version']}: {fmt_points(s['total'])}/{fmt_points(s['max_total'])} points"
    if s["perf_max_points"]:
        head += (f" (correctness {fmt_points(s['points'])}/{fmt_points(s['max_points'])},"
                 f" performance {fmt_points(s['perf_points'])}/{fmt_points(s['perf_max_points'])})")
    lines = [head]
    if results["backend"] == "emulate":
        lines.append(EMULATED)
    else:
        lines.append(f"graded on {results['environment']['device']}")
    if b["status"] == "layout_error":
        lines.append(f"could not read the submission: {b['log'].strip()}")
    if b["failed_slots"]:
        lines.append("did not compile: " + ", ".join(b["failed_slots"]) + " (see the compile log)")
    if b["missing_slots"]:
        lines.append("missing slot files (graded as not implemented): "
                     + ", ".join(f"student/{s}.cu" for s in b["missing_slots"]))
    if results["outcome"] == "not_graded":
        lines.append("the grader failed (internal error, not your fault): please report it; this score is not final")
        lines += [f"  {e}" for e in results.get("errors", [])[:5]]
    return lines


# statuses of a case that ran: `make test` reruns it with the same input (compile errors rebuild)
REPLAYABLE = ("fail", "crash", "timeout", "race", "memory_error", "out_of_bounds_write", "input_modified", "leak")
SANITIZER_TOOL = {"race": "racecheck", "memory_error": "memcheck"}
_LOG_ERROR = re.compile(r":\d+(:\d+)?: (fatal )?error\b|^\S*ld: |\bundefined reference\b")


class Line(NamedTuple):
    """One line of a case's feedback. kind: message (the judge's), hint, why, seed, replay (a command
    after "replay: "), log (the compile log), error (a line of the compile log that reports an error)."""
    kind: str
    text: str


def gtest_name(case: dict) -> str:
    """The case's GoogleTest name in `make test` (harness/tests/kernel_tests.cpp): <Slot>/Kernel.Case/<label>,
    the label being the id without its slot prefix, '.' and '-' made '_' (suite.cpp case_label)."""
    slot = case["slot"]
    label = case["id"].removeprefix(f"{slot}.")
    camel = "".join(word.capitalize() for word in slot.split("_"))
    return f"{camel}/Kernel.Case/" + label.replace(".", "_").replace("-", "_")


def case_suite(case: dict, results: dict) -> dict | None:
    return next((s for s in results.get("suites", []) if s["name"] == case["suite"]), None)


def replay_commands(case: dict, results: dict) -> list[str]:
    """The command lines that rerun the case on the student's machine, or none when its input cannot be
    made there (a suite whose seeds are mixed with the instructor's secret). `make test` passes
    GTEST_FILTER on to GoogleTest; SCANGRADE_BACKEND=emulate when the grade was emulated (a GPU would
    hide a race the emulator's thread orders show)."""
    suite = case_suite(case, results)
    if suite is None or suite["secret_mixed"]:
        return []
    backend = "SCANGRADE_BACKEND=emulate " if results["backend"] == "emulate" else ""
    suite_arg = "" if suite["name"] == "public" else f" SUITE={Path(suite['path']).name}"
    if case["status"] == "compile_error":
        return [f"{backend}make test{suite_arg}"]
    commands = [f"{backend}GTEST_FILTER='{gtest_name(case)}' make test{suite_arg}"]
    if results["backend"] == "gpu" and case["status"] in SANITIZER_TOOL:
        findings = (case.get("sanitizer") or {}).get("findings") or []
        tool = findings[0]["tool"] if findings else SANITIZER_TOOL[case["status"]]
        suite_flag = "" if not suite_arg else f" --suite={Path(suite['path']).name}"
        commands.append(f"compute-sanitizer --tool {tool} build/scangrade_student_test"
                        f" --gtest_filter='{gtest_name(case)}'{suite_flag}")
    return commands


def seed_line(case: dict, results: dict) -> str:
    suite = case_suite(case, results)
    if suite is not None and suite["secret_mixed"]:
        return (f"seed: {case['seed']} in the {case['suite']} suite, mixed with the instructor's secret:"
                " this input cannot be made again on your machine")
    return f"seed: {case['seed']} ({case['suite']} suite, n={case['n']}, {case['dtype']}, {case['values']})"


def case_feedback(case: dict, results: dict, compile_log: bool = True) -> list[Line]:
    """What a student reads about a case: the judge's message (lines starting "hint:" are hints) and,
    for a case that ran, why it exists, its seed and the command that reruns it. A compile_error case
    carries the compile log (compile_log=False: once per slot is enough) and `make test`."""
    status = case["status"]
    if status == "pass":
        text = "passed"
        t = case.get("timing")
        if t:
            text += (f"; {t['median_ms']:.4g} ms median, {t['gbps']:.4g} GB/s,"
                     f" {t['ratio_to_reference']:.3g}x the reference")
        return [Line("message", text)]
    if status == "internal_error":
        return [Line("message", f"{STATUS_TEXT[status]}: {case['message']}")]
    lines: list[Line] = []
    if status == "compile_error":
        log = results["build"]["log"].rstrip("\n")
        if log and compile_log:
            lines.append(Line("message", f"{case['slot']} did not compile:"))
            lines += [Line("error" if _LOG_ERROR.search(line) else "log", line) for line in log.split("\n")]
        else:
            lines.append(Line("message", case["message"] or f"{case['slot']} did not compile"))
    else:
        for line in (case["message"] or STATUS_TEXT.get(status, status)).rstrip("\n").split("\n"):
            head = line.lstrip()
            kind = "hint" if head.startswith("hint:") else "why" if head.startswith("why this case:") else "message"
            lines.append(Line(kind, line))
    if status in REPLAYABLE:
        if case.get("why") and not any(line.kind == "why" for line in lines):
            lines.append(Line("why", f"why this case: {case['why']}"))
        lines.append(Line("seed", seed_line(case, results)))
    if status in REPLAYABLE or status == "compile_error":
        lines += [Line("replay", f"replay: {cmd}") for cmd in replay_commands(case, results)]
    return lines


def feedback_text(lines: list[Line]) -> str:
    return "\n".join(line.text for line in lines)
