"""The batch report (report.html) written by grading/batch.py: one self-contained HTML file.

In the order an instructor asks: a header (the class in one line: submissions, backend, suites, date;
the counts, mean/median score and flags; the score distribution, a histogram; with --roster the import
files and the column and scale each fills), all on a 1200x800 screen; the table of submissions (each
student's roster name when matched, else the id, linked to their feedback page (feedback.html,
scangrade/feedback.py; results.json when there is none), the id under the name; total, percent,
per-slot points, status and flags, raw name, the files: results.json, build.json, judge.log and the
exports), sortable by a click on a column's header; what the class got wrong (class_summary.py:
statuses and hints per slot by how many students they hit, each student linked, one example message;
the × reference spread, slowest and fastest correct implementations); then the details: scores per
slot (a strip plot: one dot per submission, the quartiles as a box), pass rate per case (a bar chart
per slot and a table), the roster's matching (with --roster), similar submissions (with --similarity:
similarity.py), performance (a strip plot per slot of the × reference ratios: reference time /
student time, the geometric mean over the slot's perf cases, on a log scale) and where the time went
(phases). Wherever a student appears, a submission matched to a roster row shows the roster's name,
its id as secondary text or tooltip.

Plots are inline SVG made here (geometry) and in the template (markup); the one script is the table's
sort, inline, and without it the table reads the same in the gradebook's order; no stylesheet or
image outside the file. The markup is the Jinja2 template templates/report.html.j2 (autoescaped);
this module computes what it shows.

    PYTHONPATH=grading python3 -m scangrade.batch_report DIR   re-renders DIR/report.html from
                                      DIR/batch.json and the students' results.json (e.g. after
                                      editing the template)
"""

from __future__ import annotations

import argparse
import json
import math
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
from .results import fmt_points, printable
from .vocab import SLOTS

COLORS = {"hillis_steele": "#4e79a7", "blelloch": "#f28e2b", "hierarchical": "#59a14f", "single_pass": "#b07aa1"}
FLAG_COLORS = {"layout_error": "#8c564b", "compile_error": "#8c564b", "policy_violation": "#e15759",
               "internal_error": "#d62728", "not_implemented": "#7f7f7f"}
NAMES_IN_TOOLTIP = 12

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


def score_histogram(scored: list[tuple[float, str]]) -> dict:
    """scored: (percent, who) per graded submission; 10 bars of 10 points, each bar's tooltip naming
    its students (at most NAMES_IN_TOOLTIP)."""
    bins: list[list[str]] = [[] for _ in range(10)]
    for p, who in scored:
        bins[min(9, max(0, int(p // 10)))].append(who)
    bars = []
    for i, names in enumerate(bins):
        more = f", {len(names) - NAMES_IN_TOOLTIP} more" if len(names) > NAMES_IN_TOOLTIP else ""
        listed = f": {'; '.join(sorted(names)[:NAMES_IN_TOOLTIP])}{more}" if names else ""
        bars.append((f"{10 * i}–{10 * i + 10}", len(names), f"{len(names)} submission(s) scored {10 * i}% to "
                     f"{10 * i + 10}%{'' if i == 9 else ' (exclusive)'}{listed}"))
    return bar_chart(bars, svg_id="score-histogram", y_max=count_axis([len(b) for b in bins]), y_label="submissions",
                     x_label="score (% of the maximum)", value_labels=True, width=600, height=190)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[1], q[2]


def strip_plot(rows: list[dict], *, svg_id: str, ticks: list[tuple[float, str]], lo: float, hi: float,
               log: bool = False, x_label: str = "", marks: list[tuple[float, str]] = (), width: int = 640,
               row_h: int = 40) -> dict:
    """The geometry of a strip plot for the template's strip_plot macro: one row per rows entry
    ({label, id, color, points: [(value, tooltip)]}), a dot per point (equal values stacked), the
    quartiles as a box with the median, a line from min to max; x from lo to hi (log: a log scale)."""
    left, right, top, bottom = 104, 14, 20, 44
    plot_w = width - left - right

    def x_of(v: float) -> float:
        v = min(hi, max(lo, v))
        f = (math.log(v / lo) / math.log(hi / lo)) if log else (v - lo) / (hi - lo)
        return left + plot_w * f

    out_rows = []
    for k, r in enumerate(rows):
        cy = top + row_h * k + row_h / 2
        values = sorted(v for v, _ in r["points"])
        groups: dict[int, list[tuple[float, str]]] = {}
        for v, tip in sorted(r["points"], key=lambda p: p[0]):
            groups.setdefault(round(x_of(v) / 6), []).append((v, tip))
        dots = []
        for members in groups.values():
            step = min(7.0, (row_h - 10) / max(1, len(members)))
            for j, (v, tip) in enumerate(members):
                dots.append({"x": f"{x_of(v):.1f}", "y": f"{cy + (j - (len(members) - 1) / 2) * step:.1f}",
                             "title": tip})
        box = None
        if values:
            q1, med, q3 = quartiles(values)
            box = {"x": f"{x_of(q1):.1f}", "w": f"{max(1.0, x_of(q3) - x_of(q1)):.1f}", "y": f"{cy - 9:.1f}",
                   "y2": f"{cy + 9:.1f}",
                   "med_x": f"{x_of(med):.1f}", "min_x": f"{x_of(values[0]):.1f}", "max_x": f"{x_of(values[-1]):.1f}",
                   "title": f"{r['label']}: {len(values)} submission(s), min {values[0]:.3g}, quartiles {q1:.3g}, "
                            f"median {med:.3g}, {q3:.3g}, max {values[-1]:.3g}"}
        out_rows.append({"id": r["id"], "label": r["label"], "color": r["color"], "y": f"{cy:.1f}",
                         "label_y": f"{cy + 4:.1f}", "top": f"{cy - row_h / 2:.1f}", "dots": dots, "box": box})
    base_y = top + row_h * len(rows)
    height = base_y + bottom
    return {"id": svg_id, "width": width, "height": height, "left": left, "right_x": left + plot_w, "top": top,
            "base_y": base_y, "rows": out_rows, "label_x": left - 6,
            "ticks": [{"x": f"{x_of(v):.1f}", "label": t} for v, t in ticks],
            "tick_y": base_y + 14, "mark_y": top - 6, "marks": [{"x": f"{x_of(v):.1f}", "label": t} for v, t in marks],
            "x_label": x_label, "x_label_x": f"{left + plot_w / 2:.1f}", "x_label_y": height - 8}


def slot_score_plot(graded: list[Student], name_of) -> dict | None:
    """Per slot, each graded submission's slot points (+ performance points) as % of the slot's maximum."""
    rows = []
    for slot in SLOTS:
        points = []
        for st in graded:
            v = st.results["slots"].get(slot)
            top = (v["max_points"] + v.get("perf_max_points", 0)) if v else 0
            if top:
                got = v["points"] + v.get("perf_points", 0)
                pct = 100 * got / top
                points.append((pct, f"{name_of(st)}: {got:.4g} of {top:.4g} points ({pct:.0f}%)"))
        if points:
            rows.append({"label": slot, "id": f"slot-score-{slot}", "color": COLORS[slot], "points": points})
    if not rows:
        return None
    return strip_plot(rows, svg_id="slot-scores", lo=0, hi=100, ticks=[(v, f"{v}%") for v in range(0, 101, 20)],
                      x_label="slot points (+ performance points), % of the slot's maximum")


def perf_plot(graded: list[Student], slots: list[str], name_of) -> dict | None:
    """Per slot, each timed submission's × reference ratio on a log scale (1: the reference's speed)."""
    rows = []
    for slot in slots:
        points = [(st.results["slots"][slot]["perf_ratio"],
                   f"{name_of(st)}: {st.results['slots'][slot]['perf_ratio']:.3g}× the reference's speed")
                  for st in graded if st.results["slots"].get(slot, {}).get("perf_ratio") is not None]
        if points:
            rows.append({"label": slot, "id": f"perf-{slot}", "color": COLORS.get(slot, "#4e79a7"), "points": points})
    if not rows:
        return None
    values = [v for r in rows for v, _ in r["points"] if v > 0]
    lo = 2.0 ** min(-3, math.floor(math.log2(min(values)))) if values else 0.125
    hi = 2.0 ** max(2, math.ceil(math.log2(max(values)))) if values else 4.0
    ticks = []
    e = round(math.log2(lo))
    while 2.0 ** e <= hi * 1.0001:
        ticks.append((2.0 ** e, f"{2.0 ** e:g}"))
        e += 1
    return strip_plot(rows, svg_id="perf-spread", lo=lo, hi=hi, log=True, ticks=ticks,
                      marks=[(1.0, "reference"), (0.25, "no points")],
                      x_label="× reference speed (reference time / student time), log scale")


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
    names: dict[str, str] = (record.get("roster") or {}).get("names") or {}

    def name_of(st: Student) -> str:
        return names.get(st.entry.student_id) or st.entry.student_id

    graded = [st for st in students if st.results is not None and st.outcome == "graded"]
    scored = [(100 * st.results["score"]["total"] / st.results["score"]["max_total"], name_of(st))
              for st in graded if st.results["score"]["max_total"]]
    percents = [p for p, _ in scored]
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

    perf_slots = [s for s in SLOTS if any(st.results["slots"].get(s, {}).get("perf_max_points", 0) for st in graded)]
    perf = []
    for slot in perf_slots:
        ratios = [st.results["slots"][slot]["perf_ratio"] for st in graded
                  if st.results["slots"].get(slot, {}).get("perf_ratio") is not None]
        if not ratios:
            why = "emulated runs are not timed" if record.get("backend") == "emulate" else \
                "no submission passed every case of this slot (only those are timed)"
            perf.append({"slot": slot, "count": 0, "why": why})
        else:
            perf.append({"slot": slot, "count": len(ratios), "median": statistics.median(ratios)})

    slot_max = {s: max((st.results["slots"][s]["max_points"] + st.results["slots"][s].get("perf_max_points", 0)
                        for st in graded if s in st.results["slots"]), default=0) for s in SLOTS}
    submission_rows = []
    for row in rows:
        st = by_id[row["student_id"]]
        base = f"students/{quote(st.entry.student_id)}/"
        files = [(name, base + quote(name))
                 for name in [FEEDBACK_PAGE, "results.json", "build.json", "judge.log", *FILE_NAMES.values()]
                 if (st.out / name).is_file()]
        slot_cells = []
        for s in SLOTS:
            v = st.results["slots"].get(s) if st.results is not None else None
            slot_cells.append({"points": str(row[s]),
                               "perf": fmt_points(round(v["perf_points"], 3)) if v and v.get("perf_max_points") else "",
                               "sort": f"{v['points'] + v.get('perf_points', 0):.6g}" if v else ""})
        submission_rows.append({
            "id": st.entry.student_id, "name": names.get(st.entry.student_id, ""),
            "raw_name": printable(st.entry.raw_name), "outcome": st.outcome, "reused": st.reused,
            "error": printable(st.error), "percent": row["percent"], "flags": st.flags, "files": files,
            "link": files[0][1] if files and files[0][0] in (FEEDBACK_PAGE, "results.json") else "",
            "total": f"{row['total']}/{row['max_total']}" if row["total"] != "" else "—", "total_sort": row["total"],
            "status_sort": " ".join([st.outcome, *st.flags]), "slots": slot_cells})

    shown = dict({"backend": None, "gpus": [], "started_at": "", "wall_s": 0, "max_n": None, "threshold": None},
                 **record)
    return _ENV.get_template("report.html.j2").render(
        record=shown, n_students=len(students), n_graded=len(graded), n_usable=len(usable),
        suites=[Path(s).name for s in record.get("suites", []) + record.get("hidden_suites", [])],
        percents=percents, mean=statistics.mean(percents) if percents else 0,
        median=statistics.median(percents) if percents else 0,
        full_marks=sum(p >= 100 - 1e-9 for p in percents),
        meets=sum(1 for r in rows if r.get("meets_threshold") == "yes"),
        flag_counts=flag_counts, flag_colors=FLAG_COLORS, score_chart=score_histogram(scored),
        slot_chart=slot_score_plot(graded, name_of), pass_charts=pass_charts, case_rows=case_rows, perf=perf,
        perf_chart=perf_plot(graded, perf_slots, name_of), phase_totals=record.get("phase_totals") or {},
        slots=SLOTS, slot_max=slot_max, submission_rows=submission_rows, summary=class_summary(students),
        roster=record.get("roster"), names=names, similarity=record.get("similarity"))


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
