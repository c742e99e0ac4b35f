"""feedback.html's markup: the page's one template, filled from feedback.page_model (which computes
what it shows) with the standard library only, so that `make grade` writes the page wherever python3
runs: nothing to install where pip refuses `pip install --user` (PEP 668: Debian 12, Ubuntu 24.04) or
is missing. PAGE is the page's fixed text (head, stylesheet, footer), each function below one part of
its body. Every value from the model is escaped (esc: html.escape, quotes too) where it is put in:
names, messages, logs and the program's output hold what the student's code and compiler printed.
No script, no stylesheet, font or image from elsewhere; one column on a phone (the @media rule).

A .py module, not a template file: the PrairieLearn image's tree copies the package's Python files only.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from string import Template

# $name, $version and $body are filled with escaped text (render)
PAGE = Template("""\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ScanGrade feedback: $name</title>
<style>
:root { color-scheme: light; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; background: #fff;
       margin: 0 auto; max-width: 60rem; padding: .75rem 1rem 3rem; }
h1 { font-size: 1.45rem; margin: .5rem 0 .25rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; padding-bottom: .2rem; border-bottom: 1px solid #d0d7de;
     display: flex; flex-wrap: wrap; gap: .25rem .6rem; align-items: baseline; }
h2 code { font-size: .85em; color: #57606a; font-weight: normal; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
.muted { color: #57606a; } .small { font-size: .875rem; }
.score { font-size: 2.2rem; font-weight: 700; margin: .25rem 0; }
.score.full { color: #1a7f37; } .score small { font-size: 1rem; font-weight: 400; color: #57606a; }
.notice { border-left: 4px solid #cf222e; background: #fff5f5; padding: .5rem .75rem; margin: .75rem 0;
          overflow-wrap: anywhere; }
.notice.info { border-color: #0969da; background: #f3f8ff; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; margin: .4rem 0; font-size: .95rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #d8dee4; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num, th.num { text-align: right; white-space: nowrap; }
a { color: #0969da; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 1rem; font-size: .8rem; font-weight: 600;
         color: #fff; background: #cf222e; white-space: nowrap; vertical-align: .1em; }
.badge.s-pass { background: #1a7f37; } .badge.s-not_implemented { background: #6e7781; }
.badge.s-compile_error, .badge.s-policy_violation { background: #9a6700; }
.badge.s-internal_error { background: #8250df; }
pre { font: .85rem/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f6f8fa;
      border: 1px solid #d8dee4; border-radius: 6px; padding: .6rem .75rem; margin: .4rem 0;
      white-space: pre-wrap; overflow-wrap: anywhere; }
pre.fb .l-hint { display: inline-block; width: 100%; box-sizing: border-box; background: #fff8c5;
                 border-left: 4px solid #d4a72c; padding: 0 .4rem; font-weight: 600; }
pre.fb .l-why { color: #57606a; }
pre.fb .l-seed { color: #57606a; }
pre.fb .l-replay { display: inline-block; width: 100%; box-sizing: border-box; background: #ddf4ff;
                   border-left: 4px solid #0969da; padding: 0 .4rem; }
pre.fb .l-error { color: #cf222e; font-weight: 600; }
pre.long { max-height: 32rem; overflow-y: auto; }
details { margin: .4rem 0; } summary { cursor: pointer; }
details pre { margin-left: 1rem; }
footer { margin-top: 3rem; }
@media (max-width: 40rem) {
  body { font-size: 15px; padding: .5rem .6rem 2rem; }
  table { font-size: .85rem; } th, td { padding: .25rem .3rem; }
  .badge { white-space: normal; text-align: center; }
  pre { font-size: .78rem; padding: .5rem; }
}
</style>
</head>
<body>
<h1>ScanGrade feedback: $name</h1>
$body
<footer class="muted small"><p>The replay commands rerun a case with <code>make test</code> in your copy of the \
assignment: GoogleTest's filter (<code>GTEST_FILTER</code>) picks the case, and its input is made from the same \
seed. Written by ScanGrade $version from results.json.</p></footer>
</body>
</html>
""")
TIMED_HEAD = ('<tr><th>case</th><th class="num">median ms</th><th class="num">GB/s</th><th class="num">× reference</th>'
              '<th class="num">× CUB</th><th class="num">reps</th></tr>')
TIMED_NOTE = ('<p class="muted small">× reference: the reference solution\'s time / yours (above 1: faster than the '
              "reference); × CUB likewise against CUB's scan.</p>")


def esc(value: object) -> str:
    """value as HTML text: &, <, >, " and ' escaped."""
    return escape(str(value), quote=True)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def cells(values: Iterable[object]) -> str:
    """Numbers' cells (right-aligned)."""
    return "".join(f'<td class="num">{esc(v)}</td>' for v in values)


def badge(status: str) -> str:
    text = "passed" if status == "pass" else status.replace("_", " ")
    return f'<span class="badge s-{esc(status)}">{esc(text)}</span>'


def feedback_lines(lines) -> str:
    """A case's feedback as one <pre>: its lines, each a span whose class is the line's kind, so the
    page's text is exactly the Gradescope output of that case."""
    spans = (f'<span class="l-{esc(line.kind)}">{esc(line.text)}</span>' for line in lines)
    return '<pre class="fb">' + "\n".join(spans) + "</pre>"


def summary(m: dict) -> list[str]:
    """The score, how it was graded, the grader's failure, an unreadable layout and the build's notes."""
    score = f"{esc(m['total'])} / {esc(m['max_total'])} <small>points"
    if m["perf_points"]:
        score += f" (correctness {esc(m['points'])}, performance {esc(m['perf_points'])})"
    graded = f"graded on the {esc(m['backend'])} · ScanGrade {esc(m['version'])} · {esc(m['started_at'])}"
    if m["instructor"]:
        graded += " · <strong>instructor view: hidden cases shown</strong>"
    if m["method"]:
        graded += f"<br>timings: {esc(m['method'])}"
    if m["left_out"]:
        graded = f"{esc(m['left_out'])}<br>{graded}"
    out = [f'<p class="score{" full" if m["full"] else ""}">{score}</small></p>',
           f'<p class="muted small">{graded}</p>']
    if m["not_graded"]:
        out.append('<div class="notice"><strong>The grader failed (internal error, not your fault).</strong> '
                   "This score is not final: please report it."
                   + "".join(f"<br><code>{esc(e)}</code>" for e in m["errors"]) + "</div>")
    if m["layout_error"]:
        out.append('<div class="notice"><strong>Your submission could not be read:</strong> '
                   f'{esc(m["layout_error"])}</div>')
    out += [f'<div class="notice info">{esc(n)}</div>' for n in m["notes"]]
    return out


def slot_table(m: dict) -> list[str]:
    """One row per slot: verdict, cases passed, points and performance points."""
    if not m["slots"]:
        return []
    perf = m["perf_points"]
    out = ['<div class="scroll"><table>', '<tr><th>slot</th><th>verdict</th><th class="num">passed</th>'
           '<th class="num">points</th>' + ('<th class="num">perf</th>' if perf else "") + "</tr>"]
    for s in m["slots"]:
        out.append(f'<tr><td><a href="#slot-{esc(s.slot)}">{esc(s.slot)}</a></td><td>{badge(s.verdict)}</td>'
                   + cells([f"{s.passed}/{s.cases}", s.points, *([s.perf_points or "—"] if perf else [])]) + "</tr>")
    return [*out, "</table></div>"]


def slot_section(s) -> list[str]:
    """A slot's section: its first case that did not pass, the hidden ones, the others, its timings."""
    line = f"{esc(s.passed)} of {esc(s.cases)} cases passed · {esc(s.points)} points"
    if s.perf_points:
        line += f" · performance {esc(s.perf_points)}"
    if s.verdict != "pass":
        line += f" · {esc(s.verdict_text)}"
    out = [f'<section id="slot-{esc(s.slot)}">',
           f"<h2>{esc(s.slot)} {badge(s.verdict)} <code>{esc(s.file)}</code></h2>", f"<p>{line}</p>"]
    if s.first:
        if s.every_case:
            out.append(f"<h3>Every case: {badge(s.first['status'])}</h3>")
        else:
            out += [f"<h3>First case that did not pass: {esc(s.first_title)} {badge(s.first['status'])}</h3>",
                    f'<p class="muted small">case <code>{esc(s.first["id"])}</code> · '
                    f"{esc(s.first_points)} points</p>"]
        out.append(feedback_lines(s.lines))
    if s.hidden_failed:
        out.append(f'<p class="muted">{plural(s.hidden_failed, "hidden test")} did not pass '
                   "(hidden tests show no input or message).</p>")
    if s.others:
        out.append(f"<details><summary>{plural(len(s.others), 'other case')} that did not pass</summary>")
        out += [f"<details><summary>{esc(o.title)} {badge(o.status)}</summary>\n{feedback_lines(o.lines)}</details>"
                for o in s.others]
        out.append("</details>")
    return [*out, *performance(s), "</section>"]


def performance(s) -> list[str]:
    """A slot's timed cases (a hidden one: its title only) and how its performance points were given."""
    if not (s.timed or s.perf_note):
        return []
    out = ["<h3>Performance</h3>"]
    if s.perf_note:
        out.append(f'<p class="muted small">{esc(s.perf_note)}</p>')
    if s.timed:
        out += ['<div class="scroll"><table>', TIMED_HEAD]
        for t in s.timed:
            rest = (cells([t.median_ms, t.gbps, t.ratio_to_reference, t.ratio_to_cub, t.reps]) if t.median_ms
                    else '<td class="num muted" colspan="5">hidden</td>')
            out.append(f"<tr><td>{esc(t.title)}</td>{rest}</tr>")
        out += ["</table></div>", TIMED_NOTE]
    return out


def build_and_output(m: dict) -> list[str]:
    """The build (the compile log, or where it is shown) and what the student's program printed."""
    b = m["build"]
    state = ("did not compile" if b["failed"] else "compiled" if b["status"] == "ok"
             else b["status"].replace("_", " "))
    seconds = "" if b["seconds"] is None else f" ({b['seconds']:.1f} s)"
    out = ["<h2>Build</h2>", f"<p>{esc(state)}{seconds} · {plural(b['warnings'], 'compiler warning')}</p>"]
    if b["log"] and b["log_in"]:
        out.append(f'<p>The compile log, errors and warnings, is under <a href="#slot-{esc(b["log_in"])}">'
                   f'{esc(b["log_in"])}</a>.</p>')
    elif b["log"]:
        out += [f"<h3>{'Compile log' if b['failed'] else 'Compiler warnings'}</h3>",
                f'<pre class="long">{esc(b["log"])}</pre>']
    if m["student_output"]:
        out += ["<h2>What your program printed</h2>", f'<pre class="long">{esc(m["student_output"])}</pre>']
        if m["output_truncated"]:
            out.append('<p class="muted small">(truncated: only its first and last part are kept)</p>')
    elif m["output_withheld"]:
        out += ["<h2>What your program printed</h2>", '<p class="muted">not shown: this grading has hidden tests, '
                "and your program's output could show their inputs.</p>"]
    return out


def render(model: dict) -> str:
    """The page for feedback.page_model's model."""
    body = [*summary(model), *slot_table(model)]
    for s in model["slots"]:
        body += slot_section(s)
    body += build_and_output(model)
    return PAGE.substitute(name=esc(model["name"]), version=esc(model["version"]), body="\n".join(body))
