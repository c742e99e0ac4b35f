"""batch.py's command line and what it dispatches to: the options (parse_args, with the usage text
that --help prints), the checks made before anything is graded (prepare: the suites, the built grader,
a preflight judge, the class taken from a folder or from repositories), then one of the modes: a local
run (batch_local), a Slurm submission, one Slurm shard or a Slurm finish (batch_slurm).
"""

from __future__ import annotations

import argparse
import logging
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from . import instructor
from . import log as logsetup
from .batch_class import Setup, Stop, load_inputs, resolve_jobs
from .batch_local import run_local
from .batch_seats import JUDGES_PER_GPU
from .batch_slurm import slurm_finish, slurm_shard, slurm_submit
from .build import write_layout_error
from .exporters import parse_formats
from .grade import add_sandbox_arguments, judge_command
from .lms import discover, Entry
from . import repos as repomod
from . import slurm
from .vocab import EXIT_BAD_INPUT

REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)

USAGE = """Grade a folder of submissions with one command: a gradebook, a report and every student's results.

    python3 grading/batch.py SUBMISSIONS_DIR --out DIR [--suite FILE]... [--hidden-suite FILE --secret-file F]
                             [--backend auto|gpu|emulate] [--build-dir build] [--jobs N] [--gpus auto|0,1]
                             [--judges-per-gpu N] [--max-n N] [--budget-s S] [--formats all|none|LIST]
                             [--resume | --no-resume] [--threshold FRACTION]
    python3 grading/batch.py --repos FILE [--deadline ISO-8601] --out DIR [same options]
    python3 grading/batch.py SUBMISSIONS_DIR --out DIR --slurm --backend gpu|emulate [--tasks N]
                             [--partition P] [--account A] [--time T] [--gpus-per-task N] [--array-parallel M]
                             [--sbatch-arg=FLAG]... [--no-wait] [same options]

SUBMISSIONS_DIR holds one entry per student: a folder, a .zip or a .tar.gz/.tgz (anything else is listed
too, with a layout_error). Each is graded exactly like grade.py grades one submission (layout check,
compile, judge, exports), and the batch writes:

  DIR/students/<id>/     results.json (the judge's), build.json, the exports, feedback.html (the page the
                         student reads), judge.log, stamp.json
  DIR/gradebook.csv      one row per entry, sorted by id (columns below)
  DIR/report.html        self-contained: the score distribution, the submissions (sortable), what the
                         class got wrong, then scores per slot, pass rate per case, perf ratios
  DIR/batch.json         the batch's record: settings, per-student phases and outcome, phase totals
  DIR/batch.log          one JSON line per finished student, appended as they finish

--repos FILE instead of SUBMISSIONS_DIR: one git repository a line (URL, NAME URL, or NAME URL COMMIT;
# comments). Each is cloned (bare, no credential prompts, --clone-timeout), the commit is chosen (the
third column, else the last first-parent commit of the default branch at or before --deadline, else
its tip), only its student/*.cu and student/*.cuh are exported to DIR/submissions/<name>/, and the
class is graded exactly like a folder of submissions. The gradebook gains the columns repository,
commit, commit_date, commit_rule and repo_error; a repository that cannot be cloned or has no such
commit gets a not_graded row with the git error (scangrade/repos.py has the rules).

Student ids come from LMS export names (scangrade/lms.py): Canvas, Moodle, Gradescope, else the
name made safe.

Concurrency: submissions compile in parallel (--jobs at once, one compile process each, so no more
than --jobs compilers run); judges run in one pool per GPU (CUDA_VISIBLE_DEVICES set for the pool,
--judges-per-gpu judges each) and share DIR/locks/gpu<N>.lock through the judge's --gpu-lock:
correctness and compute-sanitizer runs of several submissions go on side by side, and a judge times
its submission's perf cases with the GPU to itself. The reference, CUB and copy baselines are timed
once per case and GPU and kept in DIR/locks/baselines-gpu<N>.json (the judge's --baseline-cache). On
the emulate backend one pool of --jobs judges shares the CPU slots with the compiles. Run as root,
each judge's student code runs under a sandbox uid of its own; batches on one machine claim
different blocks of them (/run/lock/scangrade-sandbox-uids-*.lock).

Case data: every judge of the batch grades the same cases with the same seeds and secret, so each
case's input and oracle output is made once and shared read-only through a folder of the batch (the
judge's --case-cache): /dev/shm/scangrade-cases-<pid>-<random> when /dev/shm has room for every case
and the judges' channels, else in the batch's private temporary folder; 0700, out of every
sandbox's reach (bubblewrap gives each worker its own /dev/shm and /tmp), and removed when the batch
ends, however it ends. Not with --sandbox off.

Resume (default): a student whose stamp.json matches this run is not graded again. The stamp holds
the submission's content hash, the suites' sha256s, the harness version (toolchain.json), the
backend, --max-n, --budget-s and a fingerprint of the secret (a salted hash, never the secret). A
student without a stamp (killed mid-way, or the grader failed) is graded again.

Slurm (--slurm): the students to grade are split into --tasks shards of about equal expected work
(the judge's time at their last grading, else the suites' weight of their slots) and ONE array job is
submitted (sbatch --parsable): task K runs this command with --plan OUT/slurm/<run>/plan.json on
shard K, a local batch of those students on the GPUs Slurm gave it (--gres=gpu:N, CUDA_VISIBLE_DEVICES)
into the same DIR/students/ with the same stamps and resume rule, and no gradebook. A second job
(--dependency=afterany:<array job>) runs --slurm-finish: the gradebook and report from what was
graded; a student whose task ended first (scancel, time limit, node lost) has run `not_run` and its
task's Slurm state (sacct, else scontrol). By default this command waits, with a progress line, and
writes them itself; --no-wait returns once the jobs are submitted. Running the same command again
grades only the students without a matching stamp. DIR/slurm/<run>/ keeps the plan, the two job
scripts, logs/ (each task's output) and records/ (each task's finished students).

Gradebook columns: see scangrade/gradebook.py (run: graded, reused, not_taken (--repos), not_run (--slurm)).

Exit status: 0 every entry graded (--slurm --no-wait: both jobs submitted); 1 (--repos) every entry
taken was graded but some repository could not be taken (its row's repo_error says why); 2 bad input
(usage, missing or malformed suite); 3 the grader is not built, or some entry could not be graded
(internal_error rows: see their judge.log); 4 (--slurm) sbatch refused the job (its message is
printed; nothing was submitted or changed), a run of this class is still in the queue, or some Slurm
task ended before grading all its students (rerun the same command to grade only those).
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="batch.py", description=USAGE.split("\n\n")[0],
                                     epilog=USAGE.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_class_arguments(parser)
    add_run_arguments(parser)
    add_slurm_arguments(parser)
    args = parser.parse_args(argv)
    check_args(parser, args)
    check_slurm_args(parser, args)
    instructor.check_arguments(parser, args)
    args.jobs_given = args.jobs   # before any default: the Slurm tasks' --cpus-per-task
    args.suite = [s.resolve() for s in (args.suite or [REPO / "testcases" / "public.json"])]
    args.hidden_suite = [s.resolve() for s in args.hidden_suite]
    args.out = args.out.resolve()
    return args


def add_class_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the class comes from (a folder, or repositories at a deadline), where it goes, its suites."""
    parser.add_argument("submissions", type=Path, nargs="?",
                        help="folder with one entry (folder, .zip, .tar.gz) per student (or --repos)")
    parser.add_argument("--repos", type=Path, help="file listing the students' git repositories (URL, NAME URL or "
                        "NAME URL COMMIT a line): graded at --deadline instead of a folder")
    parser.add_argument("--deadline", help="with --repos: ISO 8601 with an offset (2025-03-01T23:59:00-05:00); each "
                        "repository is graded at its default branch's last first-parent commit at or before it "
                        "(default: the tip)")
    parser.add_argument("--clone-timeout", type=float, default=repomod.CLONE_TIMEOUT_S,
                        help="with --repos: seconds per clone (default: %(default)s)")
    parser.add_argument("--git-config", type=Path, help="with --repos: a git config file for the clones only "
                        "(e.g. an http extraheader with a read token); never seen by the judge")
    parser.add_argument("--out", type=Path, required=True, help="output folder (created; reused by --resume)")
    parser.add_argument("--suite", type=Path, action="append", help="suite JSON (repeatable; default: testcases/public.json)")
    parser.add_argument("--hidden-suite", type=Path, action="append", default=[],
                        help="instructor suite whose seeds are mixed with the secret (repeatable)")
    parser.add_argument("--secret-file", type=Path, help="file holding the instructor secret (with --hidden-suite)")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """How the class is graded on this machine: backend, CPU slots, GPUs, limits, exports, resume, sandbox."""
    parser.add_argument("--backend", choices=["auto", "gpu", "emulate"], default="auto",
                        help="gpu, CPU emulation, or auto: gpu when nvidia-smi -L lists a GPU (default; not with --slurm)")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build",
                        help="the CMake build folder holding grading/toolchain.json (default: build/)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="CPU slots: submissions compiled at once, and emulated judges (default: the CPUs Slurm "
                             "gave this job inside an allocation, else the CPU count; --slurm: each task's "
                             "--cpus-per-task)")
    parser.add_argument("--gpus", default="auto", help="auto (CUDA_VISIBLE_DEVICES, else nvidia-smi -L) or a "
                        "comma list of GPU indices; one judge pool and one GPU lock per GPU")
    parser.add_argument("--judges-per-gpu", type=int, default=None,
                        help=f"judges running at once per GPU (default: --jobs split over the GPUs, at most "
                             f"{JUDGES_PER_GPU}; emulate: --jobs)")
    parser.add_argument("--max-n", type=int, default=None, help="grade only cases with n <= N (default: all; emulated runs stop at the judge's "
                        "emulation cap)")
    parser.add_argument("--budget-s", type=float, default=900, help="each judge's time budget (default: 900)")
    parser.add_argument("--compile-timeout", type=float, default=120, help="seconds per compiled file (default: 120)")
    parser.add_argument("--formats", default="all",
                        help="exports per student: all, none, or a comma list of gradescope,prairielearn,autolab,junit")
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                        help="skip students whose stamp matches this run (default: on)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="a passing fraction of max_total (0..1): fills gradebook column meets_threshold")
    add_sandbox_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    instructor.add_arguments(parser)


def add_slurm_arguments(parser: argparse.ArgumentParser) -> None:
    """--slurm and the options of its jobs; --plan and --slurm-finish, which the jobs run."""
    cluster = parser.add_argument_group(
        "Slurm", "grade on a Slurm cluster: one array job over shards of the class, then the gradebook "
                 "(grading/docs/slurm.md). OUT, the submissions and the build folder must be on "
                 "a filesystem every node mounts at the same path")
    cluster.add_argument("--slurm", action="store_true",
                         help="submit the grading to Slurm (sbatch) instead of grading on this machine; needs "
                              "--backend gpu or emulate")
    cluster.add_argument("--tasks", type=int, help="array tasks, i.e. shards of the students to grade (default: one "
                         f"per {slurm.STUDENTS_PER_TASK} students)")
    cluster.add_argument("--partition", help="sbatch --partition for both jobs")
    cluster.add_argument("--account", help="sbatch --account for both jobs")
    cluster.add_argument("--time", help="time limit of each array task and of the finishing job (sbatch --time, "
                         "e.g. 1:00:00)")
    cluster.add_argument("--gpus-per-task", type=int, default=None,
                         help="GPUs per array task, requested as --gres=gpu:N (default: 1 on the gpu backend; "
                              "the emulate backend requests none)")
    cluster.add_argument("--array-parallel", type=int, metavar="M",
                         help="at most M array tasks running at once (--array=0-K%%M)")
    cluster.add_argument("--sbatch-arg", action="append", default=[], metavar="FLAG",
                         help="one more sbatch flag for both jobs, written with '=': --sbatch-arg=--qos=short "
                              "(repeatable)")
    cluster.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                         help="wait for the array job with a progress line, then write the gradebook here (default); "
                              "--no-wait: return once submitted, the dependent job writes the gradebook")
    cluster.add_argument("--poll-s", type=float, default=15,
                         help="seconds between progress checks while waiting (default: %(default)s)")
    cluster.add_argument("--slurm-finish", action="store_true",
                         help="write the gradebook and report of OUT's last Slurm run from what its tasks graded "
                              "(the dependent job runs this; by hand: only --out is needed)")
    cluster.add_argument("--plan", type=Path, help="a run's OUT/slurm/<run>/plan.json: grade one shard of it (what each "
                         "array task runs), or with --slurm-finish finish that run")
    cluster.add_argument("--shard", type=int, help="with --plan: the shard to grade (default: $SLURM_ARRAY_TASK_ID)")


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What argparse cannot check alone; turns --formats and --deadline into their values."""
    try:
        args.formats = parse_formats(args.formats)
    except ValueError as exc:
        parser.error(str(exc))
    if not args.slurm_finish and (args.submissions is None) == (args.repos is None):
        parser.error("give either SUBMISSIONS_DIR or --repos FILE")
    if args.repos is None and (args.deadline or args.git_config):
        parser.error("--deadline and --git-config apply to --repos")
    if args.deadline:
        try:
            args.deadline = repomod.parse_deadline(args.deadline)
        except ValueError as exc:
            parser.error(str(exc))
    if args.hidden_suite and not args.secret_file:
        parser.error("--hidden-suite needs --secret-file")
    if args.secret_file and not args.hidden_suite:
        parser.error("--secret-file only applies to --hidden-suite")
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.judges_per_gpu is not None and args.judges_per_gpu < 1:
        parser.error("--judges-per-gpu must be at least 1")
    if args.budget_s <= 0:
        parser.error("--budget-s must be positive")
    if args.threshold is not None and not 0 <= args.threshold <= 1:
        parser.error("--threshold is a fraction between 0 and 1")
    if args.gpus != "auto" and not re.fullmatch(r"\d+(,\d+)*", args.gpus):
        parser.error("--gpus: auto or a comma list of indices such as 0,1")


def check_slurm_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    modes = [name for name, on in (("--slurm", args.slurm), ("--slurm-finish", args.slurm_finish),
                                   ("--plan", args.plan is not None and not args.slurm_finish)) if on]
    if len(modes) > 1:
        parser.error(f"{' and '.join(modes)} do not go together")
    submit_only = {"--tasks": args.tasks, "--partition": args.partition, "--account": args.account,
                   "--time": args.time, "--gpus-per-task": args.gpus_per_task, "--array-parallel": args.array_parallel,
                   "--sbatch-arg": args.sbatch_arg or None}
    given = [flag for flag, value in submit_only.items() if value is not None]
    if given and not args.slurm:
        parser.error(f"{', '.join(given)} apply to --slurm")
    if args.shard is not None and args.plan is None:
        parser.error("--shard needs --plan")
    if not args.slurm:
        return
    if args.backend == "auto":
        parser.error("--slurm needs --backend gpu or --backend emulate (the grading nodes, not this one, decide "
                     "what auto would mean)")
    if args.gpus != "auto":
        parser.error("--slurm: Slurm chooses each task's GPUs (CUDA_VISIBLE_DEVICES); use --gpus-per-task")
    if args.gpus_per_task is None:
        args.gpus_per_task = 1 if args.backend == "gpu" else 0
    if args.backend == "gpu" and args.gpus_per_task < 1:
        parser.error("--backend gpu needs --gpus-per-task 1 or more")
    if args.backend == "emulate" and args.gpus_per_task:
        parser.error("--backend emulate grades on CPUs: leave out --gpus-per-task")
    for flag, value in (("--tasks", args.tasks), ("--array-parallel", args.array_parallel)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be at least 1")
    if args.poll_s <= 0:
        parser.error("--poll-s must be positive")


def preflight(judge: Path, args: argparse.Namespace, backend: str, private: Path) -> str | None:
    """Run the judge once on a layout error (no worker starts): malformed suites or an unreadable
    secret show up here, before anything is compiled. Returns the judge's message or None."""
    write_layout_error(private, "preflight")
    cmd = judge_command(judge, None, private, "preflight", private, backend, args.suite, args.hidden_suite,
                        args.secret_file, args.budget_s, args.max_n)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run the judge {judge}: {exc}"
    if r.returncode == 2:
        return (r.stderr or r.stdout).strip() or "the judge refused its arguments (exit 2)"
    if r.returncode not in (0, 1):
        return None if (private / "results.json").is_file() else f"the judge exited {r.returncode}: {r.stderr.strip()}"
    return None


def prepare(args: argparse.Namespace) -> Setup:
    """Check the inputs, run the preflight judge, take the class (a folder's entries, or the
    repositories' commits)."""
    specs: list[repomod.RepoSpec] = []
    if args.repos is not None:
        try:
            specs = repomod.parse_repo_list(args.repos)
        except repomod.RepoListError as exc:
            raise Stop(EXIT_BAD_INPUT, str(exc)) from None
        if not specs:
            raise Stop(EXIT_BAD_INPUT, f"{args.repos} lists no repository")
        args.submissions = args.out / "submissions"
    if args.repos is None and not args.submissions.is_dir():
        raise Stop(EXIT_BAD_INPUT, f"{args.submissions} is not a folder")
    toolchain, judge, backend, recipe = load_inputs(args)
    resolve_jobs(args)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scangrade-preflight-") as tmp:
        problem = preflight(judge, args, backend, Path(tmp))
    if problem:
        raise Stop(EXIT_BAD_INPUT, problem)
    intakes: list[repomod.Intake] = []
    if args.repos is not None:
        intakes = repomod.take_class(specs, args.deadline, args.submissions, jobs=args.jobs,
                                     clone_timeout=args.clone_timeout, git_config=args.git_config)
        entries = [Entry(it.spec.name, args.submissions / it.spec.name, "folder", it.spec.name, "git", it.notes)
                   for it in intakes if not it.error]
        log.info("%d repositories: %d taken, %d not (%s)", len(intakes), len(entries), len(intakes) - len(entries),
                 f"deadline {args.deadline.isoformat()}" if args.deadline else "default-branch tips")
    else:
        entries = discover(args.submissions, {args.out})
    if not entries and not intakes:
        raise Stop(EXIT_BAD_INPUT, f"{args.submissions} holds no submissions")
    return Setup(toolchain, judge, backend, recipe, entries, intakes)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logsetup.setup("batch", args.quiet)
    logging.getLogger("scangrade.grade").setLevel(logging.WARNING)   # no per-student chatter
    try:
        if args.slurm_finish:
            return slurm_finish(args, parse_args)
        if args.plan is not None:
            return slurm_shard(args)
        setup = prepare(args)
        return slurm_submit(args, setup) if args.slurm else run_local(args, setup)
    except Stop as stop:
        log.error("%s", stop)
        return stop.code


if __name__ == "__main__":
    sys.exit(main())
