"""Export a ScanGrade results.json to the formats of grading platforms.

Every exporter reads only results.json (grading/results.schema.json) and writes one file:

    gradescope     gradescope.json    Gradescope's /autograder/results/results.json
    prairielearn   prairielearn.json  PrairieLearn's /grade/results/results.json (kept under 1 MB)
    autolab        autolab.txt        Autolab: optional _presentation feedback line, then the score line
    junit          junit.xml          JUnit XML for CI (one <testsuite> per slot)

    python3 grading/exporters.py results.json --format gradescope -o out.json
    python3 grading/exporters.py results.json --format autolab          (prints to stdout)

Student-facing exports (PrairieLearn, Autolab) never show a non-visible case's input or message: the
test keeps its points and reads "hidden test". Gradescope applies `visibility` itself; JUnit is for
instructors and CI and shows everything.

Every string of results.json goes through printable() (results.py) before any export uses it; what
a student reads about a case is feedback_text.py's.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from .feedback_text import EMULATED, STATUS_TEXT, case_feedback, feedback_text, summary_lines
from .files import write_atomic
from .results import (add_results_arguments, case_title, fmt_points, graded, is_hidden, printable_doc,
                      results_from_args, slot_cases, slot_number, truncate)
from .vocab import SLOTS

FORMATS = ("gradescope", "prairielearn", "autolab", "junit")
FILE_NAMES = {"gradescope": "gradescope.json", "prairielearn": "prairielearn.json",
              "autolab": "autolab.txt", "junit": "junit.xml"}

PL_LIMIT = 1_000_000        # PrairieLearn's documented results.json limit, in bytes


def case_output(case: dict, results: dict, log_shown: set[str], first_number: dict[str, str]) -> str:
    """A case's test output (Gradescope, PrairieLearn): its feedback text; the compile log once per slot."""
    if case["status"] == "compile_error" and case["slot"] in log_shown:
        return f"{case['slot']} did not compile: see test {first_number.get(case['slot'], '')}"
    if case["status"] == "compile_error":
        log_shown.add(case["slot"])
    return feedback_text(case_feedback(case, results))


def perf_output(results: dict, slot: str, student_facing: bool = False) -> str:
    info = results["slots"][slot]
    if results["backend"] == "emulate":
        return EMULATED
    lines = []
    ratio = info.get("perf_ratio")
    if ratio is not None:
        lines.append(f"geometric mean speed vs the reference: {ratio:.3g}x")
    for case in results["cases"]:
        t = case.get("timing")
        if case["slot"] == slot and t and student_facing and is_hidden(case):
            lines.append("(a hidden performance case)")
        elif case["slot"] == slot and t:
            lines.append(f"n={case['n']} {case['dtype']}: {t['median_ms']:.4g} ms median ({t['reps']} reps),"
                         f" {t['gbps']:.4g} GB/s, {t['ratio_to_reference']:.3g}x ref, {t['ratio_to_cub']:.3g}x CUB")
    if not lines:
        lines.append("no timings: the performance cases did not pass")
    return "\n".join(lines)


# --- Gradescope -------------------------------------------------------------------------------------

def to_gradescope(results: dict) -> dict:
    results = printable_doc(results)
    tests: list[dict] = []
    log_shown: set[str] = set()
    first_compile: dict[str, str] = {}
    for slot, cases in slot_cases(results).items():
        i = slot_number(slot)
        for k, case in enumerate(cases, start=1):
            number = f"{i}.{k}"
            if case["status"] == "compile_error":
                first_compile.setdefault(slot, number)
            tests.append({
                "name": case_title(case),
                "number": number,
                "score": case["points"],
                "max_score": case["max_points"],
                "status": "passed" if case["status"] == "pass" else "failed",
                "output": case_output(case, results, log_shown, first_compile),
                "visibility": case["visibility"],
                "tags": [slot, case["dtype"]],
                "extra_data": {"id": case["id"], "suite": case["suite"], "status": case["status"]},
            })
        info = results["slots"].get(slot)
        if info and info["perf_max_points"] > 0:
            timed = [c for c in cases if c.get("timing")]
            visible = not timed or any(not is_hidden(c) for c in timed)
            tests.append({
                "name": f"{slot} · performance",
                "number": f"{i}.{len(cases) + 1}",
                "score": info["perf_points"],
                "max_score": info["perf_max_points"],
                "status": "passed" if info["perf_points"] >= info["perf_max_points"] else "failed",
                "output": perf_output(results, slot),
                "visibility": "visible" if visible else timed[0]["visibility"],
                "tags": [slot, "performance"],
            })
    doc: dict = {
        "score": results["score"]["total"],
        "execution_time": int(round(results["duration_s"])),
        "output": "\n".join(summary_lines(results)),
        "output_format": "text",
        "tests": tests,
    }
    if results["backend"] == "gpu":
        board = [{"name": f"{slot} × reference", "value": round(results["slots"][slot]["perf_ratio"], 4),
                  "order": "desc"}
                 for slot in SLOTS
                 if slot in results["slots"] and results["slots"][slot].get("perf_ratio") is not None]
        if board:
            doc["leaderboard"] = board
    return doc


# --- PrairieLearn -----------------------------------------------------------------------------------

def _pl_tests(results: dict, student_facing: bool) -> list[dict]:
    tests = []
    log_shown: set[str] = set()
    first_compile: dict[str, str] = {}
    for slot, cases in slot_cases(results).items():
        hidden_k = 0
        for case in cases:
            if case["status"] == "compile_error":
                first_compile.setdefault(slot, case_title(case) if not (student_facing and is_hidden(case))
                                         else f"{slot} (first compile error)")
            if student_facing and is_hidden(case):
                hidden_k += 1
                tests.append({"name": f"{slot} · hidden test {hidden_k}", "description": "hidden test",
                              "points": case["points"], "max_points": case["max_points"],
                              "message": "hidden test", "output": ""})
                continue
            tests.append({
                "name": case_title(case),
                "description": case["why"],
                "points": case["points"],
                "max_points": case["max_points"],
                "message": "passed" if case["status"] == "pass" else STATUS_TEXT.get(case["status"], case["status"]),
                "output": case_output(case, results, log_shown, first_compile),
            })
        info = results["slots"].get(slot)
        if info and info["perf_max_points"] > 0:
            tests.append({"name": f"{slot} · performance", "description": "speed on the performance cases",
                          "points": info["perf_points"], "max_points": info["perf_max_points"],
                          "message": f"{fmt_points(info['perf_points'])}/{fmt_points(info['perf_max_points'])}",
                          "output": perf_output(results, slot, student_facing)})
    return tests


def _pl_fit(doc: dict, limit: int) -> dict:
    """Shrink test outputs until the document is under `limit` bytes (PrairieLearn refuses more)."""
    def size() -> int:
        return len(json.dumps(doc).encode("utf-8"))
    cap = 8192
    while size() > limit and cap >= 64:
        for t in doc.get("tests", []):
            t["output"] = truncate(t["output"], cap)
            t["message"] = truncate(t["message"], cap)
        doc["output"] = truncate(doc.get("output", ""), cap * 4)
        cap //= 2
    if size() > limit:      # thousands of tests: drop outputs, keep every score
        for t in doc.get("tests", []):
            t["output"] = ""
            t["message"] = truncate(t["message"], 60)
        doc["output"] = truncate(doc.get("output", ""), 4096) + "\n[outputs dropped: results over 1 MB]"
    return doc


def to_prairielearn(results: dict, student_facing: bool = True, limit: int = PL_LIMIT) -> dict:
    results = printable_doc(results)
    lines = summary_lines(results)
    if not graded(results):
        errors = ([results["build"]["log"].strip()] if results["build"]["status"] == "layout_error"
                  else list(results.get("errors", [])) or ["the grader could not grade this submission"])
        return _pl_fit({"gradable": False, "message": lines[-1] if len(lines) > 1 else lines[0],
                        "output": "\n".join(lines), "format_errors": errors}, limit)
    s = results["score"]
    score = s["total"] / s["max_total"] if s["max_total"] > 0 else 0.0
    output = "\n".join(lines)
    all_visible = not any(is_hidden(c) for c in results["cases"])
    if results["student_output"]["text"] and (all_visible or not student_facing):
        output += "\n\nyour program printed:\n" + results["student_output"]["text"]
    doc = {"gradable": True, "score": min(1.0, max(0.0, score)), "message": lines[0], "output": output,
           "tests": _pl_tests(results, student_facing)}
    return _pl_fit(doc, limit)


# --- Autolab ----------------------------------------------------------------------------------------

def to_autolab(results: dict, student_facing: bool = True) -> str:
    """Two lines: the _presentation feedback, then the score line Autolab reads (the last line)."""
    results = printable_doc(results)
    feedback: dict = {"_presentation": "semantic", "stages": []}
    for slot, cases in slot_cases(results).items():
        if not cases:
            continue
        feedback["stages"].append(slot)
        stage: dict = {}
        hidden_k = 0
        for case in cases:
            if student_facing and is_hidden(case):
                hidden_k += 1
                stage[f"hidden test {hidden_k}"] = {"passed": case["status"] == "pass", "hint": "hidden test"}
            else:
                entry: dict = {"passed": case["status"] == "pass"}
                if case["status"] != "pass":
                    entry["hint"] = truncate(case["message"] or STATUS_TEXT.get(case["status"], ""), 2000)
                stage[f"{case_title(case)} [{case['id']}]"] = entry
        feedback[slot] = stage
    scores = {}
    for slot in SLOTS:
        info = results["slots"].get(slot)
        scores[slot] = (info["points"] + info["perf_points"]) if info else 0
    scoreboard = [results["score"]["total"]]
    scoreboard += [round(results["slots"][s]["perf_ratio"], 4)
                   if s in results["slots"] and results["slots"][s].get("perf_ratio") is not None else 0
                   for s in SLOTS]
    score_line = {"scores": scores, "scoreboard": scoreboard}
    # one line each, for readers that split on any line separator too (str.splitlines)
    line = json.dumps(feedback, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return line + "\n" + json.dumps(score_line) + "\n"


# --- JUnit XML --------------------------------------------------------------------------------------

def to_junit(results: dict) -> str:
    results = printable_doc(results)
    root = ET.Element("testsuites", name="scangrade")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for slot, cases in slot_cases(results).items():
        if not cases:
            continue
        counts = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        suite_time = sum(c["duration_s"] for c in cases)
        suite = ET.SubElement(root, "testsuite", name=slot)
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="backend", value=results["backend"])
        ET.SubElement(props, "property", name="device", value=results["environment"]["device"])
        for case in cases:
            tc = ET.SubElement(suite, "testcase", classname=f"scangrade.{slot}", name=case["id"],
                               time=f"{case['duration_s']:.6f}")
            status = case["status"]
            if status == "pass":
                continue
            if status == "internal_error":
                el = ET.SubElement(tc, "error", message=status)
                counts["errors"] += 1
            elif status == "not_implemented":
                el = ET.SubElement(tc, "skipped", message="not implemented")
                counts["skipped"] += 1
            else:
                el = ET.SubElement(tc, "failure", message=status)
                counts["failures"] += 1
            el.text = case["message"] or STATUS_TEXT.get(status, status)
        if slot in results["build"]["failed_slots"] and results["build"]["log"]:
            ET.SubElement(suite, "system-out").text = results["build"]["log"]
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{suite_time:.6f}")
        total_time += suite_time
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.6f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- files ------------------------------------------------------------------------------------------

def export(results: dict, fmt: str, student_facing: bool = True) -> str:
    """The export as the text of its file."""
    if fmt == "gradescope":
        return json.dumps(to_gradescope(results), indent=1, ensure_ascii=False) + "\n"
    if fmt == "prairielearn":
        return json.dumps(to_prairielearn(results, student_facing), ensure_ascii=False) + "\n"
    if fmt == "autolab":
        return to_autolab(results, student_facing)
    if fmt == "junit":
        return to_junit(results)
    raise ValueError(f"unknown format {fmt!r}: choose from {', '.join(FORMATS)}")


def write_exports(results: dict, out_dir: Path, formats: list[str]) -> dict[str, Path]:
    """Write each format's file into out_dir (atomically); return format -> path."""
    written = {}
    for fmt in formats:
        path = Path(out_dir) / FILE_NAMES[fmt]
        write_atomic(path, export(results, fmt))
        written[fmt] = path
    return written


def parse_formats(text: str) -> list[str]:
    """'all', 'none' or a comma-separated list, as grade.py's --formats takes it."""
    text = text.strip().lower()
    if text == "all":
        return list(FORMATS)
    if text in ("none", ""):
        return []
    chosen = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown format {unknown[0]!r}: choose all, none or from {', '.join(FORMATS)}")
    return list(dict.fromkeys(chosen))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Export a ScanGrade results.json to a grading platform's format.",
        epilog="Exit status: 0 written, 2 unreadable results.json or bad usage.")
    add_results_arguments(parser)
    parser.add_argument("--format", required=True, choices=FORMATS)
    parser.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    parser.add_argument("--instructor", action="store_true",
                        help="PrairieLearn/Autolab: show hidden cases' names and messages too")
    args = parser.parse_args(argv)
    results = results_from_args(args)
    if results is None:
        return 2
    text = export(results, args.format, student_facing=not args.instructor)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
