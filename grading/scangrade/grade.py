"""Grade one ScanGrade submission: unpack, compile, judge, export, print a table.

    python3 grading/grade.py SUBMISSION [--suite FILE]... [--hidden-suite FILE (--secret S | --secret-file F)]
                             [--out DIR] [--backend auto|gpu|emulate] [--build-dir build]
                             [--formats all|gradescope,prairielearn,autolab,junit|none]
                             [--budget-s 900] [--max-n N] [--jobs N] [--case-cache DIR] [--quiet]

SUBMISSION is a folder, a .zip or a .tar.gz/.tgz containing student/ (or one folder that contains
student/). The steps:

  1. read the layout (scangrade/submission.py); a bad layout is graded as layout_error;
  2. compile each student/*.cu and link <out>/worker (scangrade/build.py) -> <out>/build.json;
  3. run the judge (toolchain.json's "judge"), which runs the worker on the suites -> <out>/results.json;
  4. export results.json to the chosen platforms' formats (scangrade/exporters.py) and write the
     student's feedback page <out>/feedback.html (scangrade/feedback.py);
  5. print the table (scangrade/report.py).

results.json is written by the judge only. Exit status mirrors the judge's: 0 graded, every case
passed; 1 graded, some case did not pass; 2 bad input (usage, missing or malformed suite); 3 internal
error (the grader is not built -- run `make` first --, the judge failed or wrote no results).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import log as logsetup
from .build import COMPILE_TIMEOUT_S, BuildResult, Recipe, ToolchainError, build, read_toolchain, write_layout_error
from .build_tools import check_reachable
from .exporters import FILE_NAMES, parse_formats, write_exports
from .feedback import FILE_NAME as FEEDBACK_PAGE, write_page
from .files import nvidia_smi_gpus
from .report import render, use_color
from .results import ResultsError, load_results
from .submission import load_submission
from .vocab import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_PASSED

REPO = Path(__file__).resolve().parents[2]
JUDGE_GRACE_S = 120   # the judge's own budget plus this, before we give up on it
log = logging.getLogger(__name__)


def detect_backend() -> str:
    """gpu when `nvidia-smi -L` lists a GPU, else emulate."""
    return "gpu" if nvidia_smi_gpus() else "emulate"


def toolchain_paths(toolchain) -> list[Path]:
    """Every existing absolute path toolchain.json names (compilers, the rewriter, include folders, libraries)."""
    if isinstance(toolchain, dict):
        return [p for v in toolchain.values() for p in toolchain_paths(v)]
    if isinstance(toolchain, list):
        return [p for v in toolchain for p in toolchain_paths(v)]
    if isinstance(toolchain, str):
        text = toolchain[2:] if toolchain.startswith(("-I", "-L")) else toolchain
        if text.startswith("/") and Path(text).exists():
            return [Path(text)]
    return []


def load_grader(build_dir: Path, backend: str, sandbox: str = "auto", bwrap: str = "bwrap") -> tuple[dict, Path, str, Recipe]:
    """The built grader: toolchain.json, the judge, the backend (auto resolved) and its compile recipe.
    Raises ToolchainError with what to do when something is not built."""
    toolchain = read_toolchain(build_dir)
    judge = Path(toolchain.get("judge") or "")
    if not toolchain.get("judge") or not judge.is_file() or not os.access(judge, os.X_OK):
        raise ToolchainError(f"the judge ({toolchain.get('judge')}) is not built: run `make` first")
    backend = detect_backend() if backend == "auto" else backend
    recipe = Recipe.from_toolchain(toolchain, backend, sandbox, bwrap)
    check_reachable(recipe.confine, [build_dir, judge, *toolchain_paths(toolchain)])
    return toolchain, judge, backend, recipe


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
    if max_n is not None:     # without it the judge grades every case (emulated: up to its own cap)
        cmd += ["--max-n", str(max_n)]
    return cmd + list(extra or [])


def add_sandbox_arguments(parser: argparse.ArgumentParser) -> None:
    """--sandbox and --bwrap (grade.py and batch.py)."""
    parser.add_argument("--sandbox", choices=["auto", "require", "off"], default="auto",
                        help="run every compile and run of student code in the sandbox (bubblewrap namespaces, "
                             "an unprivileged uid when root, cgroup or rlimit limits): auto (default) uses what "
                             "this machine allows and says so in results.json 'isolation'; require fails (exit 2) "
                             "without bubblewrap; off runs student code unconfined")
    parser.add_argument("--bwrap", default="bwrap", help="the bubblewrap executable (default: bwrap in PATH)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="grade.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Outputs in --out: build.json, worker, results.json (the judge's, see "
               "grading/results.schema.json), gradescope.json, prairielearn.json, autolab.txt, junit.xml, "
               "feedback.html (the page a student reads).\n"
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
                        help="grade only cases with n <= N (default: all; emulated runs stop at the judge's "
                             "emulation cap, recorded as max_n in results.json)")
    parser.add_argument("--jobs", type=int, default=None, help="parallel compiles (default: CPU count)")
    parser.add_argument("--compile-timeout", type=float, default=COMPILE_TIMEOUT_S,
                        help="seconds per compiled file (default: %(default)s)")
    parser.add_argument("--case-cache", type=Path, metavar="DIR",
                        help="keep the cases' inputs and oracle outputs in DIR (made 0700 when missing) and reuse "
                             "them in later runs with the same suites and judge (the judge's --case-cache; "
                             "batch.py makes one per batch). DIR must be this grader's alone. Default: each run "
                             "makes its own")
    add_sandbox_arguments(parser)
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


# --- grading one submission: grade.py's command line and every student of batch.py -------------------

@dataclass
class JudgeSeat:
    """Where and how a judge runs: batch.py hands out one per GPU pool (environment, GPU lock flags,
    a longer timeout when timing waits for other judges); grade.py uses the default."""
    env: dict[str, str] | None = None
    extra: list[str] = field(default_factory=list)
    timeout_s: float | None = None          # default: the budget + JUDGE_GRACE_S
    prefix: list[str] = field(default_factory=list)   # e.g. setpriv --pdeathsig KILL


@dataclass
class GradeJob:
    """One submission and the settings to grade it with."""
    submission: Path
    suites: list[Path]
    hidden_suites: list[Path] = field(default_factory=list)
    secret_file: Path | None = None
    out: Path | None = None                 # default: grading-results/<submission name>/
    name: str | None = None                 # default: the submission's name (folder, or archive stem)
    formats: list[str] = field(default_factory=list)
    budget_s: float = 900
    max_n: int | None = None
    jobs: int | None = None                 # parallel compiles
    compile_timeout: float = COMPILE_TIMEOUT_S
    judge_log: Path | None = None           # the judge's stdout and stderr go here (else inherited)
    capture: bool = False                   # without judge_log: capture the judge's output (quiet)
    keep_objects: bool = True               # keep <out>/obj after linking
    sandbox: str = "auto"                   # --sandbox auto|require|off for the judge (compiles: the recipe's)
    bwrap: str = "bwrap"
    case_cache: Path | None = None          # the judge's --case-cache DIR (batch.py: one folder per batch)


@dataclass
class Graded:
    """What grade_one did. `code` is grade.py's exit status; `error` a harness fault (never the
    submission's), with `code` EXIT_INTERNAL (or EXIT_BAD_INPUT)."""
    code: int
    out: Path | None = None
    name: str = ""
    results: dict | None = None
    built: BuildResult | None = None
    written: dict[str, Path] = field(default_factory=dict)
    error: str = ""
    judge_output: str = ""                  # the judge's stderr when it was captured
    judge_signal: int = 0                   # the signal that ended the judge (it was not this process's timeout)
    phases: dict[str, list[float]] = field(default_factory=dict)   # unpack, compile, judge, export: [start, end]

    @property
    def results_path(self) -> Path | None:
        return self.out / "results.json" if self.out else None


def judge_phases(results: dict | None) -> dict[str, float]:
    """The judge's split of its own time (results.json "phases", in seconds); a judge that does not
    report it counts as zeros."""
    phases = (results or {}).get("phases") or {}
    return {name: float(phases.get(f"{name}_s", 0.0))
            for name in ("correctness", "prepare", "timing", "lock_wait", "sanitizer")}


def grade_one(job: GradeJob, judge: Path, backend: str, recipe: Recipe, workdir: Path, *,
              compile_slot: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
              judge_seat: Callable[[], contextlib.AbstractContextManager[JudgeSeat | None]] = contextlib.nullcontext,
              clock: Callable[[], float] = time.monotonic) -> Graded:
    """Read the layout, compile, judge and export one submission into its output folder.

    compile_slot() is held while the submission is unpacked and compiled, judge_seat() while the
    judge runs (it yields the JudgeSeat to run with, or None for the default): batch.py bounds its
    compilers and judges with them. clock() stamps the phases."""
    graded = Graded(EXIT_INTERNAL)
    with compile_slot():
        t = clock()
        sub = load_submission(job.submission, workdir=workdir)
        graded.phases["unpack"] = [t, clock()]
        with sub:
            graded.name = job.name or sub.name
            out = graded.out = (job.out or Path("grading-results") / sub.name).resolve()
            out.mkdir(parents=True, exist_ok=True)
            # nothing stale may pass for this run's results
            for name in ["results.json", "build.json", "worker", FEEDBACK_PAGE, *FILE_NAMES.values()]:
                (out / name).unlink(missing_ok=True)
            if sub.layout_error:
                log.info("layout error: %s", sub.layout_error)
                built = write_layout_error(out, sub.layout_error)
            else:
                for note in sub.notes:
                    log.info("%s", note)
                log.info("compiling %d file(s) for the %s backend", len(sub.slot_files) + len(sub.helper_files),
                         backend)
                t = clock()
                built = build(sub, recipe, out, job.jobs, job.compile_timeout)
                graded.phases["compile"] = [t, clock()]
                log.info("build: %s%s%s (%.1f s)", built.status,
                         f", failed: {', '.join(built.failed_slots)}" if built.failed_slots else "",
                         f", missing: {', '.join(built.missing_slots)}" if built.missing_slots else "",
                         built.seconds)
    graded.built = built
    if not job.keep_objects:
        shutil.rmtree(out / "obj", ignore_errors=True)
    if built.harness_errors:
        # the harness's own stub or link did not build: not the student's fault
        graded.error = "; ".join(built.harness_errors) + f" (see {out / 'build.json'})"
        return graded

    with judge_seat() as seat:
        seat = seat or JudgeSeat()
        _run_judge(job, graded, built, judge, backend, seat, clock)
    if graded.error:
        return graded
    t = clock()
    try:
        graded.written = write_exports(graded.results, out, job.formats)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        graded.code = EXIT_INTERNAL
        graded.error = f"exporting failed: {exc!r} (results.json is intact)"
    try:   # the student's page: the grade does not depend on it
        graded.written["feedback"] = write_page(graded.results, out)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        log.warning("%s not written: %r", FEEDBACK_PAGE, exc)
    graded.phases["export"] = [t, clock()]
    return graded


def _run_judge(job: GradeJob, graded: Graded, built: BuildResult, judge: Path, backend: str, seat: JudgeSeat,
               clock: Callable[[], float]) -> None:
    out = graded.out
    cmd = seat.prefix + judge_command(judge, built.worker, out, graded.name, job.submission, backend, job.suites,
                                      job.hidden_suites, job.secret_file, job.budget_s, job.max_n,
                                      ["--sandbox", job.sandbox, "--bwrap", job.bwrap, *seat.extra,
                                       *(["--case-cache", str(job.case_cache)] if job.case_cache else [])])
    timeout = seat.timeout_s if seat.timeout_s is not None else job.budget_s + JUDGE_GRACE_S
    see_log = f" (see {job.judge_log})" if job.judge_log else ""
    log.info("judging on the %s backend (budget %g s)", backend, job.budget_s)
    t = clock()
    try:
        with contextlib.ExitStack() as stack:
            if job.judge_log:
                sink = stack.enter_context(open(job.judge_log, "w"))
                outputs = {"stdout": sink, "stderr": subprocess.STDOUT}
            else:
                outputs = {"capture_output": job.capture}
            # a session of its own: a signal to the judge's process group never reaches us
            judged = subprocess.run(cmd, timeout=timeout, stdin=subprocess.DEVNULL, env=seat.env, text=True,
                                    start_new_session=True, **outputs)
    except subprocess.TimeoutExpired:
        graded.error = f"the judge ran past {timeout:g} s and was stopped{see_log}"
        return
    except OSError as exc:
        graded.error = f"cannot run the judge {judge}: {exc}{see_log}"
        return
    finally:
        graded.phases["judge"] = [t, clock()]
    rc = judged.returncode
    graded.judge_output = judged.stderr or "" if job.capture and not job.judge_log else ""
    results_path = out / "results.json"
    if rc not in (EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL):
        graded.judge_signal = -rc if rc < 0 else 0
        graded.error = f"the judge exited with status {rc} (killed by a signal?){see_log}"
        return
    if not results_path.is_file():
        graded.code = EXIT_BAD_INPUT if rc == EXIT_BAD_INPUT else EXIT_INTERNAL
        graded.error = f"the judge exited with status {rc} and wrote no results.json{see_log}"
        return
    try:
        graded.results = load_results(results_path)
    except ResultsError as exc:
        graded.error = f"the judge wrote an unusable results.json: {exc}"
        return
    if graded.results["exit_code"] != rc:
        log.warning("the judge exited %d but results.json says exit_code %s", rc, graded.results["exit_code"])
    graded.code = rc


# --- the command line --------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logsetup.setup("grade", args.quiet)

    def fail(code: int, msg: str) -> int:
        log.error("%s", msg)
        return code

    for suite in [*args.suite, *args.hidden_suite]:
        if not suite.is_file():
            return fail(EXIT_BAD_INPUT, f"suite {suite} not found")
    if args.secret_file and not args.secret_file.is_file():
        return fail(EXIT_BAD_INPUT, f"secret file {args.secret_file} not found")
    if not args.submission.exists():
        return fail(EXIT_BAD_INPUT, f"submission {args.submission} not found")

    try:
        _toolchain, judge, backend, recipe = load_grader(args.build_dir, args.backend, args.sandbox, args.bwrap)
    except ToolchainError as exc:
        return fail(EXIT_INTERNAL, str(exc))

    if args.case_cache:
        try:
            args.case_cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            return fail(EXIT_BAD_INPUT, f"--case-cache: cannot make {args.case_cache}: {exc}")
    private = Path(tempfile.mkdtemp(prefix="scangrade-grade-"))
    os.chmod(private, 0o700)
    try:
        secret_file = args.secret_file
        if args.hidden_suite and args.secret is not None:
            secret_file = private / "secret"
            fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(args.secret)
        job = GradeJob(args.submission, args.suite, args.hidden_suite, secret_file, out=args.out,
                       formats=args.formats, budget_s=args.budget_s, max_n=args.max_n, jobs=args.jobs,
                       compile_timeout=args.compile_timeout, capture=args.quiet, sandbox=args.sandbox,
                       bwrap=args.bwrap, case_cache=args.case_cache.resolve() if args.case_cache else None)
        graded = grade_one(job, judge, backend, recipe, private)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    if graded.judge_output and (graded.error or graded.results is None):
        sys.stderr.write(graded.judge_output)
    if graded.error and graded.results is None:
        return fail(graded.code, graded.error)
    if graded.written.get("feedback"):    # the student's page by its full path; the exports by name
        log.info("feedback: %s", graded.written["feedback"])
    exports = [path.name for fmt, path in graded.written.items() if fmt != "feedback" and path]
    if exports:
        log.info("exports: %s (in %s)", " ".join(exports), graded.out)
    sys.stdout.write(render(graded.results, graded.results_path, use_color()))
    if graded.error:    # exporting failed: the table is still worth printing
        return fail(graded.code, graded.error)
    if args.print_autolab:
        autolab = graded.written.get("autolab") or (graded.out / FILE_NAMES["autolab"])
        if "autolab" not in graded.written:
            write_exports(graded.results, graded.out, ["autolab"])
        sys.stdout.write(autolab.read_text())
    return graded.code
