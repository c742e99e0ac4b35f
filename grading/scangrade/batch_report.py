"""The batch report (report.html) written by grading/batch.py: one self-contained HTML file.

Sections: summary (counts, mean/median score, flags), what the class got wrong (class_summary.py:
statuses and hints per slot by how many students they hit, each student linked, one example message;
the × reference spread, slowest and fastest correct implementations), the roster's matching (with
--roster), similar submissions (with --similarity: similarity.py), score histogram, pass rate per case (a bar chart
per slot and a table), performance ratio distribution per slot (× reference: reference time / student
time, the geometric mean over the slot's perf cases), where the time went (phases), and the table of
submissions: each student's id links to their feedback page (feedback.html, scangrade/feedback.py;
results.json when there is none), the files column to it, results.json, build.json, judge.log and the
exports. Plots are inline SVG; there is no script, no stylesheet and no image outside the file. The
markup is the Jinja2 template templates/report.html.j2; this module computes what it shows.

    PYTHONPATH=grading python3 -m scangrade.batch_report DIR   re-renders DIR/report.html from
                                      DIR/batch.json and the students' results.json (e.g. after
                                      editing the template)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from urllib.parse import quote

import jinja2

from .class_summary import class_summary
from .exporters import FILE_NAMES
from .feedback import FILE_NAME as FEEDBACK_PAGE
from .files import write_atomic
from .gradebook import Student, gradebook_rows
from .lms import Entry
from .results import printable
from .vocab import SLOTS

COLORS = {"hillis_steele": "#4e79a7", "blelloch": "#f28e2b", "hierarchical": "#59a14f", "single_pass": "#b07aa1"}
FLAG_COLORS = {"layout_error": "#8c564b", "compile_error": "#8c564b", "policy_violation": "#e15759",
               "internal_error": "#d62728", "not_implemented": "#7f7f7f"}
PERF_BINS = [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 0.9), (0.9, 1.1), (1.1, 1.5), (1.5, 2.0),
             (2.0, float("inf"))]

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("scangrade", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _num(x: float) -> str:
    return f"{x:.4g}"


def count_axis(counts: list[int]) -> int:
    """A y maximum that makes 5 whole-number ticks."""
    return max(5, -(-max(counts, default=0) // 5) * 5)


def bar_chart(bars: list[tuple[str, float, str]], *, svg_id: str, y_max: float, y_label: str,
              color: str = "#4e79a7", width: int = 640, height: int = 220, label_every: int = 1,
              percent: bool = False, x_label: str = "", value_labels: bool = False) -> dict:
    """The geometry of a vertical bar chart for the template's bar_chart macro: (x label, value,
    tooltip) per bar; the y axis runs from 0 to y_max with 5 ticks."""
    left, right, top, bottom = 48, 10, 12, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(1, len(bars))
    step = plot_w / n
    bw = max(1.0, step * 0.8)
    ticks = []
    for i in range(6):   # grid and y ticks
        v = y_max * i / 5
        y = top + plot_h - plot_h * i / 5
        ticks.append({"y": f"{y:.1f}", "text_y": f"{y + 4:.1f}", "label": f"{v * 100:.0f}%" if percent else _num(v)})
    out_bars = []
    for i, (label, value, title) in enumerate(bars):
        h = 0 if y_max <= 0 else plot_h * min(value, y_max) / y_max
        x = left + i * step + (step - bw) / 2
        out_bars.append({"x": f"{x:.1f}", "y": f"{top + plot_h - h:.1f}", "h": f"{h:.1f}", "title": title,
                         "cx": f"{x + bw / 2:.1f}", "value_y": f"{top + plot_h - h - 3:.1f}",
                         "value_label": _num(value) if value_labels and value > 0 else "",
                         "label": label if label and i % label_every == 0 else "",
                         "label_x": f"{left + i * step + step / 2:.1f}"})
    return {"id": svg_id, "width": width, "height": height, "left": left, "right_x": left + plot_w,
            "bar_w": f"{bw:.1f}", "ticks": ticks, "bars": out_bars, "color": color, "base_y": top + plot_h,
            "label_y": top + plot_h + 14, "x_label": x_label, "x_label_x": f"{left + plot_w / 2:.1f}",
            "y_label": y_label, "mid_y": f"{top + plot_h / 2:.1f}"}


def score_histogram(percents: list[float]) -> dict:
    counts = [0] * 10
    for p in percents:
        counts[min(9, max(0, int(p // 10)))] += 1
    bars = [(f"{10 * i}–{10 * i + 10}", c, f"{c} submission(s) scored {10 * i}% to "
             f"{10 * i + 10}%{'' if i == 9 else ' (exclusive)'}") for i, c in enumerate(counts)]
    return bar_chart(bars, svg_id="score-histogram", y_max=count_axis(counts), y_label="submissions",
                     x_label="score (% of the maximum)", value_labels=True)


def perf_histogram(slot: str, ratios: list[float]) -> dict:
    counts = [sum(1 for r in ratios if lo <= r < hi) for lo, hi in PERF_BINS]
    labels = [f"<{PERF_BINS[0][1]}" if i == 0 else (f"≥{lo:g}" if hi == float("inf") else f"{lo:g}–{hi:g}")
              for i, (lo, hi) in enumerate(PERF_BINS)]
    bars = [(lab, c, f"{c} submission(s) at {lab} × the reference's speed") for lab, c in zip(labels, counts)]
    return bar_chart(bars, svg_id=f"perf-{slot}", y_max=count_axis(counts), y_label="submissions",
                     color=COLORS.get(slot, "#4e79a7"), width=520, height=220, value_labels=True,
                     x_label="× reference speed (reference time / student time)")


def case_stats(results: list[dict]) -> list[dict]:
    """Per case, in suite order: passed / graded over the given results."""
    order: list[str] = []
    stats: dict[str, dict] = {}
    for r in results:
        for c in r["cases"]:
            s = stats.get(c["id"])
            if s is None:
                order.append(c["id"])
                s = stats[c["id"]] = {"id": c["id"], "slot": c["slot"], "dtype": c["dtype"], "n": c["n"],
                                      "kind": c["kind"], "passed": 0, "graded": 0, "statuses": {}}
            s["graded"] += 1
            s["passed"] += c["status"] == "pass"
            s["statuses"][c["status"]] = s["statuses"].get(c["status"], 0) + 1
    return [stats[i] for i in order]


def render_report(students: list[Student], record: dict, columns: list[str], rows: list[dict]) -> str:
    """students: the batch's Student records; record: batch.json's content; columns/rows: the gradebook's."""
    graded = [st for st in students if st.results is not None and st.outcome == "graded"]
    percents = [100 * st.results["score"]["total"] / st.results["score"]["max_total"]
                for st in graded if st.results["score"]["max_total"]]
    by_id = {st.entry.student_id: st for st in students}
    flag_counts: dict[str, int] = {}
    for st in students:
        for f in st.flags:
            flag_counts[f] = flag_counts.get(f, 0) + 1

    usable = [st.results for st in graded if st.results["build"]["status"] != "layout_error"]
    stats = case_stats(usable)
    pass_charts = []
    for slot in SLOTS:
        mine = [s for s in stats if s["slot"] == slot]
        if mine:
            bars = [("", s["passed"] / s["graded"] if s["graded"] else 0,
                     f"{s['id']}: {s['passed']}/{s['graded']} passed") for s in mine]
            pass_charts.append((slot, bar_chart(
                bars, svg_id=f"pass-{slot}", y_max=1.0, y_label="pass rate", percent=True, color=COLORS[slot],
                width=max(320, min(1100, 60 + 9 * len(bars))), height=180,
                x_label=f"{len(bars)} cases in suite order (hover a bar for its id)")))
    case_rows = [dict(s, rate=s["passed"] / s["graded"] if s["graded"] else 0,
                      others=", ".join(f"{v} {k}" for k, v in sorted(s["statuses"].items()) if k != "pass"))
                 for s in stats]

    perf = []
    for slot in [s for s in SLOTS if any(st.results["slots"].get(s, {}).get("perf_max_points", 0) for st in graded)]:
        ratios = [st.results["slots"][slot]["perf_ratio"] for st in graded
                  if st.results["slots"].get(slot, {}).get("perf_ratio") is not None]
        if not ratios:
            why = "emulated runs are not timed" if record.get("backend") == "emulate" else \
                "no submission passed every case of this slot (only those are timed)"
            perf.append({"slot": slot, "chart": None, "why": why})
        else:
            perf.append({"slot": slot, "chart": perf_histogram(slot, ratios), "count": len(ratios),
                         "median": statistics.median(ratios)})

    submission_rows = []
    for row in rows:
        st = by_id[row["student_id"]]
        base = f"students/{quote(st.entry.student_id)}/"
        files = [(name, base + quote(name))
                 for name in [FEEDBACK_PAGE, "results.json", "build.json", "judge.log", *FILE_NAMES.values()]
                 if (st.out / name).is_file()]
        submission_rows.append({
            "id": st.entry.student_id, "raw_name": printable(st.entry.raw_name), "outcome": st.outcome,
            "reused": st.reused, "error": printable(st.error), "percent": row["percent"], "flags": st.flags, "files": files,
            "link": files[0][1] if files and files[0][0] in (FEEDBACK_PAGE, "results.json") else "",
            "total": f"{row['total']}/{row['max_total']}" if row["total"] != "" else "—",
            "slots": [str(row[s]) for s in SLOTS]})

    shown = dict({"backend": None, "gpus": [], "started_at": "", "wall_s": 0, "max_n": None, "threshold": None},
                 **record)
    return _ENV.get_template("report.html.j2").render(
        record=shown, n_students=len(students), n_graded=len(graded), n_usable=len(usable),
        suites=[Path(s).name for s in record.get("suites", []) + record.get("hidden_suites", [])],
        percents=percents, mean=statistics.mean(percents) if percents else 0,
        median=statistics.median(percents) if percents else 0,
        full_marks=sum(p >= 100 - 1e-9 for p in percents),
        meets=sum(1 for r in rows if r.get("meets_threshold") == "yes"),
        flag_counts=flag_counts, flag_colors=FLAG_COLORS, score_chart=score_histogram(percents),
        pass_charts=pass_charts, case_rows=case_rows, perf=perf, phase_totals=record.get("phase_totals") or {},
        submission_columns=["student", "raw name", "outcome", "total", "%", *SLOTS, "flags", "files"],
        submission_rows=submission_rows, summary=class_summary(students), roster=record.get("roster"),
        similarity=record.get("similarity"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Re-render a batch's report.html from DIR/batch.json.")
    parser.add_argument("dir", type=Path, help="the batch's --out folder")
    args = parser.parse_args(argv)
    try:
        record = json.loads((args.dir / "batch.json").read_text())
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.dir / 'batch.json'}: {exc}", file=sys.stderr)
        return 2
    students = []
    for s in record["students"]:
        st = Student(Entry(s["raw_name"], Path(s["raw_name"]), s["kind"], s["student_id"], s["lms"], s["notes"]),
                     args.dir.resolve() / "students" / s["student_id"], outcome=s["outcome"], flags=s["flags"],
                     reused=s["reused"], error=s["error"], gpu=s["gpu"], phases=s["phases"],
                     judge_phases=s["judge_phases"])
        try:
            st.results = json.loads(st.results_path.read_text())
        except (OSError, ValueError):
            st.results = None
        students.append(st)
    columns, rows = gradebook_rows(students, args.dir.resolve(), record.get("threshold"))
    write_atomic(args.dir / "report.html", render_report(students, record, columns, rows))
    print(args.dir / "report.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
