#!/usr/bin/env python3
"""GitHub Actions view of a ScanGrade results.json: a Markdown job summary, error annotations on the
failing slots' files, and an exit status from a score threshold.

    PYTHONPATH=grading python3 grading/platforms/github/summary.py grading-results/student/results.json
    PYTHONPATH=grading python3 grading/platforms/github/summary.py results.json --min-score 0.8 --summary summary.md

- The Markdown table (one row per slot, then the total) is appended to --summary, by default the
  file named by $GITHUB_STEP_SUMMARY (stdout when that is not set).
- For each slot that did not get full marks, one `::error file=student/<slot>.cu[,line=L]::...` line
  on stdout (L: the first compile error's line, for a slot that did not compile).
- --feedback TEXT: the summary starts with a "Feedback, not the grade" heading and TEXT (the student
  feedback workflow: grading/platforms/github/feedback.py).
- Non-visible cases (hidden suites) show no message, only that they did not pass (--show-hidden
  shows everything: instructors).

Threshold: --min-score, else $SCANGRADE_MIN_SCORE, else 1.0; a fraction of the total points
(score.total / score.max_total, performance points included).

Exit status:
  0  graded, and total/max_total >= the threshold
  1  graded, below the threshold (the submission's fault: see the table)
  2  bad usage, a bad threshold, or results.json missing or unreadable
  3  the grader failed (outcome not_graded): not the submission's fault -- please report
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from scangrade.vocab import SLOTS, slot_verdict

EXIT_OK, EXIT_BELOW, EXIT_BAD_INPUT, EXIT_NOT_GRADED = 0, 1, 2, 3
EPSILON = 1e-9
MAX_FAILURES_LISTED = 20


class InputError(Exception):
    """results.json or the threshold is unusable."""


def fmt(x: float) -> str:
    return str(int(x)) if float(x) == int(x) else f"{x:.2f}".rstrip("0").rstrip(".")


def load(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema_version") != 1 or not isinstance(doc.get("score"), dict):
        raise InputError(f"{path} is not a ScanGrade results.json (schema_version 1)")
    return doc


def parse_threshold(text: str | None) -> float:
    text = (text if text is not None else os.environ.get("SCANGRADE_MIN_SCORE", "")).strip() or "1.0"
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"the minimum score must be a fraction between 0 and 1, not {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise InputError(f"the minimum score must be a fraction between 0 and 1, not {text!r}")
    return value


def fraction(results: dict) -> float:
    s = results["score"]
    return s["total"] / s["max_total"] if s["max_total"] > 0 else 0.0


def exit_code(results: dict, threshold: float) -> int:
    if results.get("outcome") == "not_graded":
        return EXIT_NOT_GRADED
    return EXIT_OK if fraction(results) + EPSILON >= threshold else EXIT_BELOW


def verdict_cell(info: dict) -> str:
    """✅ pass, — without cases, else ❌ and every status but pass with its count, most frequent first."""
    statuses = info.get("statuses", {})
    if slot_verdict(statuses) == "pass":
        return "✅ pass" if info.get("cases") else "—"
    bad = {k: v for k, v in statuses.items() if k != "pass" and v}
    return "❌ " + ", ".join(f"{k} ×{v}" for k, v in sorted(bad.items(), key=lambda kv: -kv[1]))


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(results: dict, threshold: float, show_hidden: bool = False) -> str:
    s, b = results["score"], results["build"]
    backend = results.get("backend", "?")
    where = results.get("environment", {}).get("device") or "unknown device"
    lines = [f"## ScanGrade: {md_escape(results['submission']['name'])} — "
             f"{fmt(s['total'])}/{fmt(s['max_total'])} points ({fraction(results):.0%})", ""]
    lines.append("Backend: **emulate** (CPU emulation: no timings, no performance points)" if backend == "emulate"
                 else f"Backend: **{backend}** on {md_escape(where)}")
    lines.append("")
    lines += ["| slot | passed | points | perf points | verdict |", "|---|---|---|---|---|"]
    for slot in SLOTS:
        info = results["slots"].get(slot)
        if info is None:
            continue
        perf = f"{fmt(info['perf_points'])}/{fmt(info['perf_max_points'])}" if info["perf_max_points"] else "—"
        lines.append(f"| `{slot}` | {info['passed']}/{info['cases']} | {fmt(info['points'])}/{fmt(info['max_points'])}"
                     f" | {perf} | {verdict_cell(info)} |")
    lines.append(f"| **total** | | **{fmt(s['points'])}/{fmt(s['max_points'])}** | "
                 + (f"**{fmt(s['perf_points'])}/{fmt(s['perf_max_points'])}**" if s["perf_max_points"] else "—")
                 + f" | **{fmt(s['total'])}/{fmt(s['max_total'])}** |")
    lines.append("")
    if "isolation" in results:
        lines += [f"_{md_escape(results['isolation']['summary'])}_", ""]
    code = exit_code(results, threshold)
    if code == EXIT_NOT_GRADED:
        lines.append("⚠️ **The grader failed** (internal error, not the submission's fault): please report it.")
        lines += [f"- {md_escape(e)}" for e in results.get("errors", [])[:5]]
    else:
        verdict = "✅ passes" if code == EXIT_OK else "❌ is below"
        lines.append(f"Score {fraction(results):.1%} {verdict} the required minimum of {threshold:.0%}"
                     " (`SCANGRADE_MIN_SCORE`).")
    if b["status"] == "layout_error":
        lines += ["", f"**Could not read the submission:** {md_escape(b['log'].strip())}"]
    if b.get("failed_slots"):
        lines += ["", "**Did not compile:** " + ", ".join(f"`student/{x}.cu`" for x in b["failed_slots"])]
    for slot, evidence in (b.get("policy_violations") or {}).items():
        lines += ["", f"**Breaks a rule of the assignment** (`student/{slot}.cu`, not linked, 0 points): "
                      f"{md_escape(evidence)}"]
    if b.get("missing_slots"):
        lines += ["", "**Missing (graded as not implemented):** "
                  + ", ".join(f"`student/{x}.cu`" for x in b["missing_slots"])]
    failing = [c for c in results["cases"] if c["status"] != "pass"]
    if failing:
        lines += ["", f"<details><summary>{len(failing)} case(s) did not pass</summary>", "",
                  "| case | status | message |", "|---|---|---|"]
        for c in failing[:MAX_FAILURES_LISTED]:
            hidden = c["visibility"] != "visible" and not show_hidden
            name = "(hidden case)" if hidden else f"`{c['id']}`"
            msg = "" if hidden else md_escape(first_line(c["message"]))[:200]
            lines.append(f"| {name} | {c['status']} | {msg} |")
        if len(failing) > MAX_FAILURES_LISTED:
            lines.append(f"| … | | {len(failing) - MAX_FAILURES_LISTED} more in the results.json artifact |")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


# --- annotations ------------------------------------------------------------------------------------

def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def compile_error_line(log: str, slot: str) -> int | None:
    """The first error's line in student/<slot>.cu from the compile log (nvcc `f.cu(12): error`,
    g++ `f.cu:12:5: error`)."""
    pattern = re.compile(rf"{re.escape(slot)}\.cu(?:\((\d+)\)|:(\d+)(?::\d+)?):\s*(?:fatal )?error")
    m = pattern.search(log or "")
    return int(m.group(1) or m.group(2)) if m else None


def policy_location(evidence: str, default: str) -> tuple[str, int | None]:
    """The file (and line) a policy violation's evidence names: `student/x.cu:3 includes <thrust/...>`,
    `student/helper.cu (a helper file ...)`, else the slot's own file."""
    m = re.match(r"(student/[\w.+-]+)(?::(\d+))?", evidence)
    return (m.group(1), int(m.group(2)) if m.group(2) else None) if m else (default, None)


def annotations(results: dict, show_hidden: bool = False) -> list[str]:
    out = []
    for slot in SLOTS:
        info = results["slots"].get(slot)
        if info is None or (info["points"] >= info["max_points"] and info["passed"] == info["cases"]):
            continue
        cases = [c for c in results["cases"] if c["slot"] == slot and c["status"] != "pass"]
        counts = ", ".join(f"{k} ×{v}" for k, v in info.get("statuses", {}).items() if k != "pass" and v)
        msg = (f"{slot}: {info['cases'] - info['passed']} of {info['cases']} cases did not pass ({counts}); "
               f"{fmt(info['points'])}/{fmt(info['max_points'])} points")
        visible = [c for c in cases if c["visibility"] == "visible" or show_hidden]
        if visible and first_line(visible[0]["message"]):
            msg += f". First: {visible[0]['id']}: {first_line(visible[0]['message'])}"
        file, line = f"student/{slot}.cu", None
        evidence = (results["build"].get("policy_violations") or {}).get(slot)
        if evidence is not None:
            file, line = policy_location(evidence, file)
        elif slot in results["build"].get("failed_slots", []):
            line = compile_error_line(results["build"].get("log", ""), slot)
        props = f"file={escape_property(file)}"
        if line is not None:
            props += f",line={line}"
        props += f",title={escape_property(f'ScanGrade: {slot}')}"
        out.append(f"::error {props}::{escape_data(msg)}")
    if results.get("outcome") == "not_graded":
        errors = "; ".join(results.get("errors", [])[:3]) or "see results.json"
        out.append(f"::error title=ScanGrade internal error::{escape_data('the grader failed (not the submission): ' + errors)}")
    return out


def summary_file(given: Path | None) -> Path | None:
    if given is not None:
        return given
    env = os.environ.get("GITHUB_STEP_SUMMARY")
    return Path(env) if env else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 at or above the threshold, 1 below, 2 bad input or no results.json, "
               "3 the grader failed (not_graded).")
    parser.add_argument("results", type=Path, help="results.json written by grade.py")
    parser.add_argument("--min-score", help="required fraction of the total points, 0..1 "
                                            "(default: $SCANGRADE_MIN_SCORE, else 1.0)")
    parser.add_argument("--summary", type=Path, help="Markdown file to append to (default: $GITHUB_STEP_SUMMARY, else stdout)")
    parser.add_argument("--show-hidden", action="store_true", help="show non-visible cases' ids and messages")
    parser.add_argument("--feedback", metavar="TEXT", help="label the summary 'Feedback, not the grade' and add TEXT "
                                                          "(the student feedback workflow)")
    args = parser.parse_args(argv)
    try:
        threshold = parse_threshold(args.min_score)
        results = load(args.results)
    except InputError as exc:
        print(f"::error title=ScanGrade::{escape_data(str(exc))}")
        print(f"summary: error: {exc}", file=sys.stderr)
        if summary_file(args.summary) is not None:
            with open(summary_file(args.summary), "a", encoding="utf-8") as f:
                f.write(f"## ScanGrade: no results\n\n{exc}\n")
        return EXIT_BAD_INPUT
    text = render(results, threshold, args.show_hidden)
    if args.feedback is not None:
        text = f"# ScanGrade feedback, not the grade\n\n> {md_escape(args.feedback)}\n\n" + text
    target = summary_file(args.summary)
    if target is None:
        sys.stdout.write(text)
    else:
        with open(target, "a", encoding="utf-8") as f:
            f.write(text)
    for line in annotations(results, args.show_hidden):
        print(line)
    code = exit_code(results, threshold)
    print(f"summary: {fmt(results['score']['total'])}/{fmt(results['score']['max_total'])} points "
          f"({fraction(results):.1%}), minimum {threshold:.0%}: exit {code}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
