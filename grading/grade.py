#!/usr/bin/env python3
"""Grade one ScanGrade submission: unpack, compile, judge, export, print a table.

    python3 grading/grade.py SUBMISSION [--suite FILE]... [--hidden-suite FILE (--secret S | --secret-file F)]
                             [--out DIR] [--backend auto|gpu|emulate] [--build-dir build]
                             [--formats all|gradescope,prairielearn,autolab,junit|none]
                             [--budget-s 900] [--max-n N] [--jobs N] [--quiet]

SUBMISSION is a folder, a .zip or a .tar.gz/.tgz containing student/ (or one folder that contains
student/). The steps:

  1. read the layout (grading/submission.py); a bad layout is graded as layout_error;
  2. compile each student/*.cu and link <out>/worker (grading/build.py) -> <out>/build.json;
  3. run the judge (toolchain.json's "judge"), which runs the worker on the suites -> <out>/results.json;
  4. export results.json to the chosen platforms' formats (grading/exporters.py);
  5. print the table (grading/report.py).

results.json is written by the judge only. Exit status mirrors the judge's: 0 graded, every case
passed; 1 graded, some case did not pass; 2 bad input (usage, missing or malformed suite); 3 internal
error (the grader is not built -- run `make` first --, the judge failed or wrote no results).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import (Recipe, ToolchainError, build, read_toolchain, write_layout_error,  # noqa: E402
                   COMPILE_TIMEOUT_S)
from exporters import FILE_NAMES, ResultsError, load_results, parse_formats, write_exports  # noqa: E402
from report import render, use_color  # noqa: E402
from submission import load_submission  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
JUDGE_GRACE_S = 120   # the judge's own budget plus this, before we give up on it


def detect_backend() -> str:
    """gpu when `nvidia-smi -L` lists a GPU, else emulate."""
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        return "emulate"
    try:
        r = subprocess.run([nvidia_smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "emulate"
    return "gpu" if r.returncode == 0 and any(l.startswith("GPU ") for l in r.stdout.splitlines()) else "emulate"


def load_grader(build_dir: Path, backend: str) -> tuple[dict, Path, str, Recipe]:
    """The built grader: toolchain.json, the judge, the backend (auto resolved) and its compile recipe.
    Raises ToolchainError with what to do when something is not built."""
    toolchain = read_toolchain(build_dir)
    judge = Path(toolchain.get("judge") or "")
    if not toolchain.get("judge") or not judge.is_file() or not os.access(judge, os.X_OK):
        raise ToolchainError(f"the judge ({toolchain.get('judge')}) is not built: run `make` first")
    backend = detect_backend() if backend == "auto" else backend
    return toolchain, judge, backend, Recipe.from_toolchain(toolchain, backend)


def judge_command(judge: Path, worker: Path | None, out: Path, name: str, submission: Path, backend: str,
                  suites: list[Path], hidden_suites: list[Path], secret_file: Path | None, budget_s: float,
                  max_n: int | None, extra: list[str] | None = None) -> list[str]:
    """The judge's command line for one submission (grading/batch.py builds its runs with it too)."""
    cmd = [str(judge)]
    if worker is not None:
        cmd += ["--worker", str(worker)]
    cmd += ["--out", str(out / "results.json"), "--submission-name", name,
            "--submission-path", str(Path(submission).resolve()), "--backend", backend,
            "--build-json", str(out / "build.json")]
    for suite in suites:
        cmd += ["--suite", str(Path(suite).resolve())]
    if hidden_suites:
        for suite in hidden_suites:
            cmd += ["--hidden-suite", str(Path(suite).resolve())]
        cmd += ["--secret-file", str(Path(secret_file).resolve())]
    cmd += ["--budget-s", f"{budget_s:g}"]
    if max_n is not None:
        cmd += ["--max-n", str(max_n)]
    return cmd + list(extra or [])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="grade.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Outputs in --out: build.json, worker, results.json (the judge's, see "
               "grading/results.schema.json), gradescope.json, prairielearn.json, autolab.txt, junit.xml.\n"
               "Exit status: 0 all passed, 1 some case did not pass, 2 bad input, 3 internal error.")
    parser.add_argument("submission", type=Path, help="folder, .zip or .tar.gz with student/")
    parser.add_argument("--suite", type=Path, action="append",
                        help="suite JSON (repeatable; default: testcases/public.json)")
    parser.add_argument("--hidden-suite", type=Path, action="append", default=[],
                        help="instructor suite whose seeds are mixed with the secret (repeatable)")
    secret = parser.add_mutually_exclusive_group()
    secret.add_argument("--secret", help="the instructor secret (prefer --secret-file: arguments are visible in ps)")
    secret.add_argument("--secret-file", type=Path, help="file holding the instructor secret")
    parser.add_argument("--out", type=Path, help="output folder (default: grading-results/<submission-name>/)")
    parser.add_argument("--backend", choices=["auto", "gpu", "emulate"], default="auto",
                        help="gpu, CPU emulation, or auto: gpu when nvidia-smi -L lists a GPU (default)")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build",
                        help="the CMake build folder holding grading/toolchain.json (default: build/)")
    parser.add_argument("--formats", default="all",
                        help="all, none, or a comma list of gradescope,prairielearn,autolab,junit (default: all)")
    parser.add_argument("--budget-s", type=float, default=900, help="the judge's time budget in seconds (default: 900)")
    parser.add_argument("--max-n", type=int, default=None,
                        help="grade only cases with n <= N (e.g. 4194305, the emulation cap: quick emulated runs)")
    parser.add_argument("--jobs", type=int, default=None, help="parallel compiles (default: CPU count)")
    parser.add_argument("--compile-timeout", type=float, default=COMPILE_TIMEOUT_S,
                        help="seconds per compiled file (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="print only the table (and errors)")
    parser.add_argument("--print-autolab", action="store_true",
                        help="print autolab.txt after the table, so that Autolab's score line is stdout's last line")
    args = parser.parse_args(argv)
    try:
        args.formats = parse_formats(args.formats)
    except ValueError as exc:
        parser.error(str(exc))
    if args.hidden_suite and not (args.secret or args.secret_file):
        parser.error("--hidden-suite needs --secret or --secret-file")
    if (args.secret or args.secret_file) and not args.hidden_suite:
        parser.error("--secret/--secret-file only apply to --hidden-suite")
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.budget_s <= 0:
        parser.error("--budget-s must be positive")
    if not args.suite:
        args.suite = [REPO / "testcases" / "public.json"]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"grade: {msg}", file=sys.stderr, flush=True)

    def fail(code: int, msg: str) -> int:
        print(f"grade: error: {msg}", file=sys.stderr)
        return code

    for suite in [*args.suite, *args.hidden_suite]:
        if not suite.is_file():
            return fail(EXIT_BAD_INPUT, f"suite {suite} not found")
    if args.secret_file and not args.secret_file.is_file():
        return fail(EXIT_BAD_INPUT, f"secret file {args.secret_file} not found")
    if not args.submission.exists():
        return fail(EXIT_BAD_INPUT, f"submission {args.submission} not found")

    try:
        toolchain, judge, backend, recipe = load_grader(args.build_dir, args.backend)
    except ToolchainError as exc:
        return fail(EXIT_INTERNAL, str(exc))

    private = Path(tempfile.mkdtemp(prefix="scangrade-grade-"))
    os.chmod(private, 0o700)
    try:
        with load_submission(args.submission, workdir=private) as sub:
            out = (args.out or Path("grading-results") / sub.name).resolve()
            out.mkdir(parents=True, exist_ok=True)
            # nothing stale may pass for this run's results
            for name in ["results.json", "build.json", "worker", *FILE_NAMES.values()]:
                (out / name).unlink(missing_ok=True)

            if sub.layout_error:
                say(f"layout error: {sub.layout_error}")
                built = write_layout_error(out, sub.layout_error)
            else:
                for note in sub.notes:
                    say(note)
                say(f"compiling {len(sub.slot_files) + len(sub.helper_files)} file(s) for the {backend} backend")
                built = build(sub, recipe, out, args.jobs, args.compile_timeout)
                say(f"build: {built.status}"
                    + (f", failed: {', '.join(built.failed_slots)}" if built.failed_slots else "")
                    + (f", missing: {', '.join(built.missing_slots)}" if built.missing_slots else "")
                    + f" ({built.seconds:.1f} s)")
            if built.harness_errors:
                # the harness's own stub or link did not build: not the student's fault
                return fail(EXIT_INTERNAL, "; ".join(built.harness_errors) + f" (see {out / 'build.json'})")

            secret_file = args.secret_file
            if args.hidden_suite and args.secret is not None:
                secret_file = private / "secret"
                fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(args.secret)
            cmd = judge_command(judge, built.worker, out, sub.name, args.submission, backend, args.suite,
                                args.hidden_suite, secret_file, args.budget_s, args.max_n)

            say(f"judging on the {backend} backend (budget {args.budget_s:g} s)")
            try:
                judged = subprocess.run(cmd, timeout=args.budget_s + JUDGE_GRACE_S,
                                        stdin=subprocess.DEVNULL,
                                        capture_output=args.quiet, text=True)
            except subprocess.TimeoutExpired:
                return fail(EXIT_INTERNAL, f"the judge ran past its budget + {JUDGE_GRACE_S} s and was stopped")
            except OSError as exc:
                return fail(EXIT_INTERNAL, f"cannot run the judge {judge}: {exc}")
            rc = judged.returncode
            results_path = out / "results.json"
            if rc not in (EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL):
                if args.quiet and judged.stderr:
                    sys.stderr.write(judged.stderr)
                return fail(EXIT_INTERNAL, f"the judge exited with status {rc} (killed by a signal?)")
            if not results_path.is_file():
                if args.quiet and judged.stderr:
                    sys.stderr.write(judged.stderr)
                return fail(EXIT_BAD_INPUT if rc == EXIT_BAD_INPUT else EXIT_INTERNAL,
                            f"the judge exited with status {rc} and wrote no results.json")
            try:
                results = load_results(results_path)
            except ResultsError as exc:
                return fail(EXIT_INTERNAL, f"the judge wrote an unusable results.json: {exc}")
            if results["exit_code"] != rc:
                say(f"warning: the judge exited {rc} but results.json says exit_code {results['exit_code']}")

            try:
                written = write_exports(results, out, args.formats)
            except (OSError, KeyError, TypeError, ValueError) as exc:
                print(render(results, results_path, use_color()), end="")
                return fail(EXIT_INTERNAL, f"exporting failed: {exc!r} (results.json is intact)")
            for fmt, path in written.items():
                say(f"{fmt}: {path}")
            sys.stdout.write(render(results, results_path, use_color()))
            if args.print_autolab:
                autolab = written.get("autolab") or (out / FILE_NAMES["autolab"])
                if "autolab" not in written:
                    write_exports(results, out, ["autolab"])
                sys.stdout.write(autolab.read_text())
            return rc
    finally:
        shutil.rmtree(private, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
