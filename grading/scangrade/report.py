"""Print a ScanGrade results.json as a table: one row per slot, a total, the backend and notes.

    python3 grading/report.py results.json

Columns: slot | passed | points | perf pts | time | GB/s | × ref | × CUB. Time, GB/s and the ratios
are those of the slot's largest timed (perf) case: the median of its repetitions. Colour only when
stdout is a terminal (and NO_COLOR is unset).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .results import add_results_arguments, fmt_points, results_from_args
from .vocab import NOTED, SLOTS, slot_verdict

HEADERS = ("slot", "passed", "points", "perf pts", "time", "GB/s", "× ref", "× CUB")
NOT_COUNTED = {"pass"}
WHOLE_SLOT = ("not_implemented", "compile_error", "policy_violation")   # statuses that stop a whole slot


def largest_timed_case(results: dict, slot: str) -> dict | None:
    timed = [c for c in results["cases"] if c["slot"] == slot and c.get("timing")]
    return max(timed, key=lambda c: c["n"]) if timed else None


def _passed_cell(info: dict) -> str:
    """NOT IMPLEMENTED, COMPILE ERROR or POLICY VIOLATION when that is every case's status, else
    passed/cases."""
    verdict = slot_verdict(info["statuses"])
    if info["cases"] and verdict in WHOLE_SLOT \
            and info["statuses"][verdict] == info["cases"]:
        return verdict.replace("_", " ").upper()
    return f"{info['passed']}/{info['cases']}"


def table_rows(results: dict) -> list[tuple[str, ...]]:
    rows = []
    emulated = results["backend"] == "emulate"
    for slot in SLOTS:
        info = results["slots"].get(slot)
        if info is None:
            continue
        case = None if emulated else largest_timed_case(results, slot)
        t = case["timing"] if case else None
        perf = "—" if info["perf_max_points"] == 0 else \
            f"{fmt_points(info['perf_points'])}/{fmt_points(info['perf_max_points'])}"
        rows.append((
            slot,
            _passed_cell(info),
            f"{fmt_points(info['points'])}/{fmt_points(info['max_points'])}",
            perf,
            f"{t['median_ms']:.4g} ms" if t else "—",
            f"{t['gbps']:.4g}" if t else "—",
            f"{t['ratio_to_reference']:.3g}" if t else "—",
            f"{t['ratio_to_cub']:.3g}" if t else "—",
        ))
    return rows


def notes(results: dict, results_path: Path | None = None) -> list[str]:
    out = []
    b = results["build"]
    if b["status"] == "layout_error":
        out.append(f"layout error: {b['log'].strip()}")
    if b["missing_slots"]:
        out.append("missing (graded as not implemented): " + ", ".join(f"student/{s}.cu" for s in b["missing_slots"]))
    if b["failed_slots"]:
        out.append("did not compile: " + ", ".join(b["failed_slots"]))
    for slot, evidence in (b.get("policy_violations") or {}).items():
        out.append(f"policy violation (not linked, 0 points): student/{slot}.cu: {evidence}")
    if b.get("warnings"):
        out.append(f"compiler warnings: {b['warnings']}")
    counts: dict[str, int] = {}
    for c in results["cases"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    noted = [f"{counts[s]} {s.replace('_', ' ')}" for s in NOTED if counts.get(s)]
    if noted:
        out.append("cases: " + ", ".join(noted))
    for slot in SLOTS if results["outcome"] == "graded" else ():
        info = results["slots"].get(slot)
        if not info:
            continue
        bad = {k: v for k, v in info["statuses"].items() if k not in NOT_COUNTED and v}
        if bad and _passed_cell(info) not in tuple(s.replace("_", " ").upper() for s in WHOLE_SLOT):
            out.append(f"{slot}: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(bad.items())))
    sp = results["sanitizer_pass"]
    out.append(f"sanitizer: {'ran' if sp['ran'] else 'not run'} ({sp['reason']})")
    if results["outcome"] == "not_graded":
        out.append("NOT GRADED: the grader failed (internal error): please report")
    for e in results.get("errors", []):
        out.append(f"harness error: {e}")
    if results["student_output"]["truncated"]:
        out.append("the submission printed a lot: its output was truncated")
    if results_path is not None:
        out.append(f"results: {results_path}")
    return out


EMULATION_CAP = 2**22 + 1   # the judge's default max_n on the emulation backend (kEmulationMaxN)


def methodology(results: dict) -> str | None:
    for c in results["cases"]:
        if c.get("timing") and c["timing"].get("method"):
            return c["timing"]["method"]
    return None


def left_out_by_size(results: dict) -> str | None:
    """Next to the total: the suites' cases above max_n (the emulation cap, or --max-n), which it leaves out."""
    in_suites = sum(s.get("cases", 0) for s in results.get("suites") or [])
    left = in_suites - len(results["cases"])
    max_n = results.get("max_n")
    if left <= 0 or not max_n:
        return None
    why = ("above the emulation cap of 2^22 + 1 (GPU only)"
           if results["backend"] == "emulate" and max_n == EMULATION_CAP else f"n > {max_n} (--max-n)")
    return f"not in the total: {left} of {in_suites} cases, {why}"


def render(results: dict, results_path: Path | None = None, color: bool = False) -> str:
    rows = table_rows(results)
    s = results["score"]
    total = ("total", f"{sum(r['passed'] for r in results['slots'].values())}/"
             f"{sum(r['cases'] for r in results['slots'].values())}",
             f"{fmt_points(s['points'])}/{fmt_points(s['max_points'])}",
             f"{fmt_points(s['perf_points'])}/{fmt_points(s['perf_max_points'])}"
             if s["perf_max_points"] else "—",
             f"= {fmt_points(s['total'])}/{fmt_points(s['max_total'])}", "", "", "")
    widths = [max(len(h), *(len(r[i]) for r in rows + [total])) for i, h in enumerate(HEADERS)]

    def line(cells: tuple[str, ...], colors: tuple[str, ...] = ()) -> str:
        parts = []
        for i, (cell, w) in enumerate(zip(cells, widths)):
            text = cell.ljust(w) if i < 2 else cell.rjust(w)
            if color and i < len(colors) and colors[i]:
                text = f"\033[{colors[i]}m{text}\033[0m"
            parts.append(text)
        return "  ".join(parts).rstrip()

    out = [f"ScanGrade results: {results['submission']['name']}", line(HEADERS),
           "  ".join("-" * w for w in widths)]
    for r, slot in zip(rows, [s for s in SLOTS if s in results["slots"]]):
        info = results["slots"][slot]
        ok = info["cases"] > 0 and info["passed"] == info["cases"]
        out.append(line(r, ("1", "32" if ok else "31")))
    out.append("  ".join("-" * w for w in widths))
    out.append(line(total, ("1", "", "1")))
    left_out = left_out_by_size(results)
    if left_out:
        out.append(left_out)
    env = results["environment"]
    if results["backend"] == "emulate":
        out.append(f"backend: emulate on {env['host']} (emulated: no timings)")
    else:
        device = env["device"]
        if "driver" not in device:     # the judge's device string may already name them
            device += f" (driver {env['driver'] or '?'}, runtime {env['cuda_runtime'] or '?'})"
        out.append(f"backend: gpu, {device}")
    if "isolation" in results:   # what protected the runs of student code, in one line
        out.append(results["isolation"]["summary"])
    method = methodology(results)
    if method and results["backend"] == "gpu":   # its first clause; the whole method is in results.json
        first = method.split(";")[0]
        out.append(f"timings: {first}" + ("" if first == method else " (the whole method: results.json, "
                                                                       "cases[].timing.method)"))
    for n in notes(results, results_path):
        out.append(f"note: {n}" if not n.startswith("results:") else n)
    return "\n".join(out) + "\n"


def use_color(stream=sys.stdout) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print a ScanGrade results.json as a table.",
                                     epilog="Exit status: 0 printed, 2 unreadable results.json.")
    add_results_arguments(parser)
    args = parser.parse_args(argv)
    results = results_from_args(args)
    if results is None:
        return 2
    sys.stdout.write(render(results, args.results, use_color()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
