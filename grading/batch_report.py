#!/usr/bin/env python3
"""The batch report (report.html) written by grading/batch.py: one self-contained HTML file.

Sections: summary (counts, mean/median score, flags), score histogram, pass rate per case (a bar chart
per slot and a table), performance ratio distribution per slot (× reference: reference time / student
time, the geometric mean over the slot's perf cases), where the time went (phases), and the table of
submissions with links to each one's results.json, build.json, judge.log and exports. Plots are inline
SVG generated here; there is no script, no stylesheet and no image outside the file.

    python3 grading/batch_report.py DIR      re-renders DIR/report.html from DIR/batch.json and the
                                             students' results.json (e.g. after editing a template)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from html import escape
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exporters import FILE_NAMES, fmt_points  # noqa: E402
from submission import SLOTS  # noqa: E402

COLORS = {"hillis_steele": "#4e79a7", "blelloch": "#f28e2b", "hierarchical": "#59a14f", "single_pass": "#b07aa1"}
FLAG_COLORS = {"layout_error": "#8c564b", "compile_error": "#8c564b", "internal_error": "#d62728",
               "not_implemented": "#7f7f7f"}
PERF_BINS = [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 0.9), (0.9, 1.1), (1.1, 1.5), (1.5, 2.0),
             (2.0, float("inf"))]

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } th, td { padding: 2px 8px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f6f6f6; position: sticky; top: 0; } td.num { text-align: right; }
.flag { display: inline-block; padding: 0 5px; margin: 1px; border-radius: 3px; color: #fff; font-size: 12px;
        background: #e15759; } .muted { color: #777; } svg text { font: 11px system-ui, sans-serif; fill: #333; }
.bar { display: inline-block; height: 10px; background: #59a14f; vertical-align: middle; }
.barbg { display: inline-block; width: 100px; height: 10px; background: #eee; vertical-align: middle; }
"""


def _num(x: float) -> str:
    return f"{x:.4g}"


def count_axis(counts: list[int]) -> int:
    """A y maximum that makes 5 whole-number ticks."""
    return max(5, -(-max(counts, default=0) // 5) * 5)


def bar_chart_svg(bars: list[tuple[str, float, str]], *, svg_id: str, y_max: float, y_label: str,
                  color: str = "#4e79a7", width: int = 640, height: int = 220, label_every: int = 1,
                  percent: bool = False, x_label: str = "", value_labels: bool = False) -> str:
    """Vertical bars: (x label, value, tooltip). The y axis runs from 0 to y_max with 5 ticks."""
    left, right, top, bottom = 48, 10, 12, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(1, len(bars))
    step = plot_w / n
    bw = max(1.0, step * 0.8)
    out = [f'<svg id="{escape(svg_id)}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(y_label)}">']
    for i in range(6):   # grid and y ticks
        v = y_max * i / 5
        y = top + plot_h - plot_h * i / 5
        tick = f"{v * 100:.0f}%" if percent else _num(v)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{escape(tick)}</text>')
    for i, (label, value, title) in enumerate(bars):
        h = 0 if y_max <= 0 else plot_h * min(value, y_max) / y_max
        x = left + i * step + (step - bw) / 2
        out.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bw:.1f}" height="{h:.1f}" '
                   f'fill="{color}"><title>{escape(title)}</title></rect>')
        if value_labels and value > 0:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{top + plot_h - h - 3:.1f}" text-anchor="middle">'
                       f"{_num(value)}</text>")
        if label and i % label_every == 0:
            cx = left + i * step + step / 2
            out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 14}" text-anchor="middle">{escape(label)}</text>')
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#333"/>')
    if x_label:
        out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text x="12" y="{top + plot_h / 2:.1f}" transform="rotate(-90 12 {top + plot_h / 2:.1f})" '
               f'text-anchor="middle">{escape(y_label)}</text>')
    out.append("</svg>")
    return "".join(out)


def score_histogram(percents: list[float]) -> str:
    counts = [0] * 10
    for p in percents:
        counts[min(9, max(0, int(p // 10)))] += 1
    bars = [(f"{10 * i}–{10 * i + 10}", c, f"{c} submission(s) scored {10 * i}% to "
             f"{10 * i + 10}%{'' if i == 9 else ' (exclusive)'}") for i, c in enumerate(counts)]
    return bar_chart_svg(bars, svg_id="score-histogram", y_max=count_axis(counts), y_label="submissions",
                         x_label="score (% of the maximum)", value_labels=True)


def perf_histogram(slot: str, ratios: list[float]) -> str:
    counts = [sum(1 for r in ratios if lo <= r < hi) for lo, hi in PERF_BINS]
    labels = [f"<{PERF_BINS[0][1]}" if i == 0 else (f"≥{lo:g}" if hi == float("inf") else f"{lo:g}–{hi:g}")
              for i, (lo, hi) in enumerate(PERF_BINS)]
    bars = [(lab, c, f"{c} submission(s) at {lab} × the reference's speed") for lab, c in zip(labels, counts)]
    return bar_chart_svg(bars, svg_id=f"perf-{slot}", y_max=count_axis(counts), y_label="submissions",
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


def _flags_html(flags: list[str]) -> str:
    return "".join(f'<span class="flag" style="background:{FLAG_COLORS.get(f, "#e15759")}">{escape(f)}</span>'
                   for f in flags)


def _link(href: str, text: str) -> str:
    return f'<a href="{escape(href)}">{escape(text)}</a>'


def render_report(students: list, record: dict, columns: list[str], rows: list[dict]) -> str:
    """students: batch.Student objects (entry, out, results, flags, outcome); record: batch.json's content;
    columns/rows: the gradebook's."""
    graded = [st for st in students if st.results is not None and st.outcome == "graded"]
    percents = [100 * st.results["score"]["total"] / st.results["score"]["max_total"]
                for st in graded if st.results["score"]["max_total"]]
    by_id = {st.entry.student_id: st for st in students}
    h: list[str] = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
                    "<title>ScanGrade batch report</title>", f"<style>{STYLE}</style>", "</head>", "<body>"]
    h.append("<h1>ScanGrade batch report</h1>")
    suites = ", ".join(escape(Path(s).name) for s in record.get("suites", []) + record.get("hidden_suites", []))
    h.append(f'<p class="muted">{len(students)} submission(s) · backend {escape(str(record.get("backend")))}'
             + (f' · GPUs {escape(",".join(record["gpus"]))}' if record.get("gpus") else "")
             + f" · suites {suites} · started {escape(str(record.get('started_at', '')))}"
             + f" · wall {record.get('wall_s', 0):.0f} s"
             + (f" · n ≤ {record['max_n']}" if record.get("max_n") else "") + "</p>")

    # summary
    h.append("<h2>Summary</h2><table>")
    h.append(f"<tr><th>graded</th><td class=num>{len(graded)} of {len(students)}</td></tr>")
    if percents:
        h.append(f"<tr><th>mean score</th><td class=num>{statistics.mean(percents):.1f}%</td></tr>")
        h.append(f"<tr><th>median score</th><td class=num>{statistics.median(percents):.1f}%</td></tr>")
        h.append(f"<tr><th>full marks</th><td class=num>{sum(p >= 100 - 1e-9 for p in percents)}</td></tr>")
    if record.get("threshold") is not None:
        meets = sum(1 for r in rows if r.get("meets_threshold") == "yes")
        h.append(f"<tr><th>at or above {record['threshold']:.0%}</th><td class=num>{meets}</td></tr>")
    flag_counts: dict[str, int] = {}
    for st in students:
        for f in st.flags:
            flag_counts[f] = flag_counts.get(f, 0) + 1
    for f, n in flag_counts.items():
        h.append(f"<tr><th>{_flags_html([f])}</th><td class=num>{n}</td></tr>")
    h.append("</table>")

    # score histogram
    h.append("<h2>Score histogram</h2>")
    h.append(f'<p class="muted">total (points + performance points) as a percentage of the maximum, '
             f"{len(percents)} graded submission(s)</p>")
    h.append(score_histogram(percents))

    # pass rate per case
    usable = [st.results for st in graded if st.results["build"]["status"] != "layout_error"]
    stats = case_stats(usable)
    h.append("<h2>Pass rate per case</h2>")
    h.append(f'<p class="muted">over {len(usable)} graded submission(s) whose layout could be read</p>')
    for slot in SLOTS:
        mine = [s for s in stats if s["slot"] == slot]
        if not mine:
            continue
        bars = [("", s["passed"] / s["graded"] if s["graded"] else 0,
                 f"{s['id']}: {s['passed']}/{s['graded']} passed") for s in mine]
        h.append(f"<h3>{escape(slot)}</h3>")
        h.append(bar_chart_svg(bars, svg_id=f"pass-{slot}", y_max=1.0, y_label="pass rate", percent=True,
                               color=COLORS[slot], width=max(320, min(1100, 60 + 9 * len(bars))), height=180,
                               x_label=f"{len(bars)} cases in suite order (hover a bar for its id)"))
    h.append("<table><tr><th>case</th><th>slot</th><th>dtype</th><th>n</th><th>passed</th><th>rate</th>"
             "<th>other statuses</th></tr>")
    for s in stats:
        rate = s["passed"] / s["graded"] if s["graded"] else 0
        others = ", ".join(f"{v} {k}" for k, v in sorted(s["statuses"].items()) if k != "pass")
        h.append(f"<tr><td>{escape(s['id'])}</td><td>{escape(s['slot'])}</td><td>{escape(s['dtype'])}</td>"
                 f"<td class=num>{s['n']}</td><td class=num>{s['passed']}/{s['graded']}</td>"
                 f'<td><span class="barbg"><span class="bar" style="width:{rate * 100:.0f}px"></span></span> '
                 f"{rate:.0%}</td><td>{escape(others)}</td></tr>")
    h.append("</table>")

    # performance
    h.append("<h2>Performance (× reference)</h2>")
    perf_slots = [s for s in SLOTS if any(st.results["slots"].get(s, {}).get("perf_max_points", 0) for st in graded)]
    if not perf_slots:
        h.append('<p class="muted">the suites give no performance points</p>')
    for slot in perf_slots:
        ratios = [st.results["slots"][slot]["perf_ratio"] for st in graded
                  if st.results["slots"].get(slot, {}).get("perf_ratio") is not None]
        h.append(f"<h3>{escape(slot)}</h3>")
        if not ratios:
            why = "emulated runs are not timed" if record.get("backend") == "emulate" else \
                "no submission passed every case of this slot (only those are timed)"
            h.append(f'<p class="muted">no timings: {why}</p>')
            continue
        h.append(f'<p class="muted">{len(ratios)} submission(s); geometric mean of reference time / student time '
                 f"over the slot's perf cases (1 = the reference's speed, full points; ≤ 0.25: none); median "
                 f"{statistics.median(ratios):.2f}</p>")
        h.append(perf_histogram(slot, ratios))

    # phases
    totals = record.get("phase_totals") or {}
    if totals:
        h.append("<h2>Where the time went</h2><table><tr><th>phase</th><th>sum (s)</th><th>wall (s)</th></tr>")
        for phase, v in totals.items():
            wall = "—" if v.get("wall_s") is None else f"{v['wall_s']:.1f}"
            h.append(f"<tr><td>{escape(phase)}</td><td class=num>{v['sum_s']:.1f}</td><td class=num>{wall}</td></tr>")
        h.append("</table>")

    # submissions
    h.append("<h2>Submissions</h2><table><tr>"
             + "".join(f"<th>{escape(c)}</th>" for c in ["student", "raw name", "outcome", "total", "%",
                                                          *SLOTS, "flags", "files"])
             + "</tr>")
    for row in rows:
        st = by_id[row["student_id"]]
        base = f"students/{quote(st.entry.student_id)}/"
        files = []
        for name in ["results.json", "build.json", "judge.log", *FILE_NAMES.values()]:
            if (st.out / name).is_file():
                files.append(_link(base + quote(name), name))
        total = f"{row['total']}/{row['max_total']}" if row["total"] != "" else "—"
        ident = _link(base + "results.json", st.entry.student_id) if (st.out / "results.json").is_file() \
            else escape(st.entry.student_id)
        note = f'<div class="muted">{escape(st.error)}</div>' if st.error else ""
        h.append(f"<tr><td>{ident}</td><td>{escape(st.entry.raw_name)}</td><td>{escape(st.outcome)}"
                 + ("" if not st.reused else ' <span class="muted">(reused)</span>') + f"{note}</td>"
                 f"<td class=num>{escape(total)}</td><td class=num>{escape(row['percent'])}</td>"
                 + "".join(f"<td class=num>{escape(str(row[s]))}</td>" for s in SLOTS)
                 + f"<td>{_flags_html(st.flags)}</td><td>{' '.join(files)}</td></tr>")
    h.append("</table>")
    h.append('<p class="muted">Generated by grading/batch.py. Flags: the statuses of any case that did not pass, '
             "plus layout/compile errors of the submission and internal_error when the grader itself failed "
             "(never the student's fault: regrade).</p>")
    h.append("</body></html>")
    return "\n".join(h) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Re-render a batch's report.html from DIR/batch.json.")
    parser.add_argument("dir", type=Path, help="the batch's --out folder")
    args = parser.parse_args(argv)
    from batch import Entry, Student, gradebook_rows, write_atomic  # noqa: E402
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
