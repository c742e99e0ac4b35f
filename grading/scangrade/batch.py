"""Grade a folder of submissions with one command: a gradebook, a report and every student's results.

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
  DIR/report.html        self-contained: score histogram, pass rate per case, perf ratios, submissions
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

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import heapq
import io
import json
import logging
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from . import log as logsetup
from . import instructor
from .batch_report import render_report
from .build import Recipe, ToolchainError, write_layout_error
from .exporters import FILE_NAMES, ResultsError, fmt_points, load_results, parse_formats, write_exports
from .feedback import FILE_NAME as FEEDBACK_PAGE, write_page
from .grade import (JUDGE_GRACE_S, GradeJob, JudgeSeat, add_sandbox_arguments, grade_one, judge_command, judge_phases,
                    load_grader)
from .gradebook import Student, flags_of, gradebook_rows, phase_totals, write_atomic, write_gradebook
from .lms import Entry, discover
from . import repos as repomod
from . import slurm
from .vocab import EXIT_BAD_INPUT, EXIT_INTERNAL

REPO = Path(__file__).resolve().parents[2]
# Judges running side by side get a sandbox uid each (when run as root): RLIMIT_NPROC counts the
# processes of a uid, so one submission's fork bomb must not use up another's allowance, and a
# sandbox's end kills every process of its uid. Batches on one machine (Slurm tasks sharing a node)
# claim blocks of uids through a lock file each, held while they run.
SANDBOX_UID_BASE = 61000
# Judges per GPU by default: more judges on one GPU grade a class no faster, since every process
# that uses the GPU adds context switches and waits in the driver (one H100, 48 submissions:
# 8 judges 82 s, 12 judges 95 s, 16 judges 103 s; README "Benchmark").
JUDGES_PER_GPU = 8
UID_BLOCK, UID_BLOCKS = 256, 16          # 61000..65095, below nobody (65534)
UID_LOCK_DIRS = (Path("/run/lock"), Path("/var/lock"), Path(tempfile.gettempdir()))
EXIT_OK = 0
EXIT_REPOS_NOT_TAKEN = 1   # --repos: everything taken was graded, some repository could not be taken
STAMP_VERSION = 1
# the case cache (the judge's --case-cache, grading/judge/case_cache.h)
SHM = Path("/dev/shm")
CASE_CACHE_PREFIX = "scangrade-cases-"
SHM_KEEP_FREE = 8 << 30        # what the judges want free in /dev/shm for their channels (results.cpp channel_base)
EMULATION_MAX_N = (1 << 22) + 1   # the judge's cap on the emulate backend (harness/.../emulated_run.h)
log = logging.getLogger(__name__)


# --- the case cache ------------------------------------------------------------------------------------

def case_data_bytes(suites: list[Path], max_n: int | None) -> int:
    """The most the case cache holds for these suites: per case a 64-byte header, the input (4 bytes
    an element) and the expected values (8)."""
    total = 0
    for path in suites:
        try:
            cases = json.loads(Path(path).read_text()).get("cases", [])
        except (OSError, ValueError, AttributeError):
            continue   # the preflight judge has said what is wrong with it
        for c in cases if isinstance(cases, list) else []:
            n = c.get("n") if isinstance(c, dict) else None
            if isinstance(n, int) and (max_n is None or n <= max_n):
                total += 64 + 12 * n
    return total


def sweep_stale_case_caches(shm: Path = SHM) -> None:
    """Removes this user's case caches left in /dev/shm by batches that are gone (killed)."""
    for folder in shm.glob(f"{CASE_CACHE_PREFIX}*-*"):
        pid = folder.name[len(CASE_CACHE_PREFIX):].split("-")[0]
        try:
            if not pid.isdigit() or folder.lstat().st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:   # alive (another user's), or gone meanwhile
            continue


def make_case_cache(private: Path, need: int, shm: Path = SHM) -> Path:
    """The batch's case cache folder (0700): in /dev/shm when it has room for `need` bytes and the
    judges' channels, else in the batch's private folder."""
    with contextlib.suppress(OSError):
        sweep_stale_case_caches(shm)
        fs = os.statvfs(shm)
        if os.access(shm, os.W_OK | os.X_OK) and fs.f_bavail * fs.f_frsize >= need + SHM_KEEP_FREE:
            return Path(tempfile.mkdtemp(prefix=f"{CASE_CACHE_PREFIX}{os.getpid()}-", dir=shm))
    folder = private / "cases"
    folder.mkdir(mode=0o700)
    return folder


# --- hashes and stamps ----------------------------------------------------------------------------------

def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def content_hash(path: Path) -> str:
    """sha256 of a file, or of a folder's sorted (relative path, link target or file sha256) list."""
    if path.is_file():
        return sha256_file(path)
    h = hashlib.sha256()
    if path.is_dir():
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
                p = Path(dirpath) / name
                rel = p.relative_to(path).as_posix()
                if p.is_symlink():
                    h.update(f"L {rel}\0{os.readlink(p)}\0".encode())
                elif p.is_file():
                    h.update(f"F {rel}\0{sha256_file(p)}\0".encode())
    return h.hexdigest()


def secret_fingerprint(secret: str | None) -> str | None:
    """A salted hash that changes when the secret does; the secret cannot be read back from it."""
    if secret is None:
        return None
    return hashlib.sha256(b"scangrade-batch-secret-fingerprint\0" + secret.encode()).hexdigest()[:32]


# --- progress -------------------------------------------------------------------------------------------

class Progress:
    """Progress on stderr: on a terminal a tqdm bar (done/total, compiling and judging counts, elapsed,
    ETA) with a line per finished student above it; elsewhere only the lines, each with the ETA.
    Reused students leave the bar's total, so the ETA is that of the students still to grade."""

    def __init__(self, total: int, stream=sys.stderr, enabled: bool = True) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.tty = enabled and stream.isatty()
        self.done = self.compiling = self.judging = 0
        self.lock = threading.Lock()
        # off a terminal the bar still keeps the rate (for the ETA) but draws nowhere
        self.bar = tqdm(total=total, file=stream if self.tty else io.StringIO(), unit="sub", smoothing=0,
                        dynamic_ncols=True, bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}{postfix} "
                                                       "[{elapsed} elapsed, ETA {remaining}]")

    def eta(self) -> str:
        return tqdm.format_meter(**dict(self.bar.format_dict, bar_format="{remaining}"))

    def change(self, compiling: int = 0, judging: int = 0) -> None:
        with self.lock:
            self.compiling += compiling
            self.judging += judging
            self.bar.set_postfix_str(f"({self.compiling} compiling, {self.judging} judging)")

    def finished(self, st: Student) -> None:
        with self.lock:
            self.done += 1
            if st.reused:
                self.bar.total -= 1
                self.bar.refresh()
            else:
                self.bar.update()
            if not self.enabled:
                return
            score = st.results["score"] if st.results else None
            text = (f"{fmt_points(score['total'])}/{fmt_points(score['max_total'])}" if score else "not graded")
            msg = (f"[{self.done:>{len(str(self.total))}}/{self.total}] {st.entry.student_id}: {text}"
                   + (f" [{' '.join(st.flags)}]" if st.flags else "") + (" (reused)" if st.reused else "")
                   + (f" error: {st.error.splitlines()[0]}" if st.error else ""))
            if self.tty:
                self.bar.write(msg, file=self.stream)
            else:
                self.stream.write(f"{msg} (ETA {self.eta()})\n")
                self.stream.flush()

    def close(self) -> None:
        with self.lock:
            self.bar.close()


# --- the batch ------------------------------------------------------------------------------------------

def previous_judge_s(stamp: Path) -> float | None:
    """The judge's seconds the last time (an old stamp's judge phases), or None."""
    try:
        phases = json.loads(stamp.read_text()).get("judge_phases") or {}
        return float(sum(phases.get(k, 0.0) for k in ("correctness", "timing", "sanitizer")))
    except (OSError, ValueError, AttributeError, TypeError):
        return None


class Seats:
    """The judge seats of one pool. A free seat goes to the waiting submission expected to take the
    longest (the queue's longest-first order: a long submission started last would end the batch
    alone), ties in the order they came."""

    def __init__(self, count: int) -> None:
        self.free = count
        self.cond = threading.Condition()
        self.waiting: list[tuple[float, int]] = []   # heap of (-expected seconds, arrival)
        self.arrivals = 0

    @contextlib.contextmanager
    def seat(self, expected_s: float) -> Iterator[None]:
        with self.cond:
            ticket = (-expected_s, self.arrivals)
            self.arrivals += 1
            heapq.heappush(self.waiting, ticket)
            while not (self.free > 0 and self.waiting[0] == ticket):
                self.cond.wait()
            heapq.heappop(self.waiting)
            self.free -= 1
            self.cond.notify_all()
        try:
            yield
        finally:
            with self.cond:
                self.free += 1
                self.cond.notify_all()


def suite_weights(suites: list[Path]) -> dict[str, float]:
    """Per slot, what its cases cost a judge, roughly: one per case plus one per 2^22 elements (the
    large cases dominate a slot's time). Unreadable suites weigh nothing (batch.py reports them)."""
    weights: dict[str, float] = {}
    for path in suites:
        try:
            cases = json.loads(Path(path).read_text()).get("cases", [])
        except (OSError, ValueError, AttributeError):
            continue
        for c in cases if isinstance(cases, list) else []:
            if isinstance(c, dict) and isinstance(c.get("slot"), str) and isinstance(c.get("n"), int):
                weights[c["slot"]] = weights.get(c["slot"], 0.0) + 1.0 + c["n"] / float(1 << 22)
    return weights


def expected_judge_s(build_json: Path, weights: dict[str, float], previous_s: float | None) -> float:
    """How long a submission's judge is expected to take, for the queue's order: what it took the
    last time this batch graded it (the old stamp), else the weight of the slots that compiled
    (missing, failed and policy-stubbed slots cost nothing)."""
    if previous_s is not None:
        return previous_s
    try:
        build = json.loads(build_json.read_text())
    except (OSError, ValueError):
        return 0.0
    if not isinstance(build, dict) or build.get("status") == "layout_error":
        return 0.0
    idle = {*build.get("missing_slots", []), *build.get("failed_slots", []), *build.get("policy_violations", {})}
    return sum(w for slot, w in weights.items() if slot not in idle)


def claim_sandbox_uids(count: int, lock_dirs: tuple[Path, ...] = UID_LOCK_DIRS) -> tuple[list[int], list]:
    """`count` sandbox uids no other batch on this machine is using: free blocks of UID_BLOCK, each
    held with an flock on its file (released when the batch ends, however it ends). Returns the uids
    and the open lock files. Not root: the judge runs student code as itself, any uids do."""
    if os.geteuid() != 0:
        return [SANDBOX_UID_BASE + i for i in range(count)], []
    folder = next((d for d in lock_dirs if d.is_dir() and os.access(d, os.W_OK | os.X_OK)), None)
    if folder is None:
        raise OSError(f"no writable folder for the sandbox uid locks among {', '.join(map(str, lock_dirs))}")
    uids: list[int] = []
    held = []
    for block in range(UID_BLOCKS):
        if len(uids) >= count:
            break
        base = SANDBOX_UID_BASE + block * UID_BLOCK
        f = open(folder / f"scangrade-sandbox-uids-{base}.lock", "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        held.append(f)
        uids += range(base, base + UID_BLOCK)
    if len(uids) < count:
        for f in held:
            f.close()
        raise OSError(f"{count} sandbox uids wanted, {len(uids)} free: {UID_BLOCKS} batches at once at most "
                      f"({folder}/scangrade-sandbox-uids-*.lock)")
    return uids[:count], held


def stamp_base(args: argparse.Namespace, toolchain: dict, backend: str) -> dict:
    """What every student's stamp holds besides the submission's hash: the run's settings."""
    secret = args.secret_file.read_text().rstrip("\r\n") if args.secret_file else None
    return {
        "stamp_version": STAMP_VERSION,
        "suites": [sha256_file(s) for s in args.suite],
        "hidden_suites": [sha256_file(s) for s in args.hidden_suite],
        "secret_fingerprint": secret_fingerprint(secret),
        "harness_version": str(toolchain.get("version", "")),
        "backend": backend,
        "max_n": args.max_n,
        "budget_s": args.budget_s,
    }


def current_stamp(st: Student) -> dict | None:
    """The student's stamp.json when it matches st.stamp and vouches for results.json as it is now
    (byte for byte: not a file written since), else None."""
    try:
        old = json.loads((st.out / "stamp.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(old, dict) or old.get("stamp") != st.stamp:
        return None
    try:
        if old.get("results_sha256") != file_sha256(st.results_path):
            return None
    except OSError:
        return None
    return old


@dataclass
class Pool:
    """The judges of one GPU (or of the CPU, emulated)."""
    name: str                           # "0", "1", ... or "cpu"
    seats: Seats                        # judges running at once
    env: dict[str, str]
    lock_file: Path | None
    outstanding: int = 0                # judges running or waiting for a seat


class Batch:
    def __init__(self, args: argparse.Namespace, toolchain: dict, recipe: Recipe, backend: str,
                 gpus: list[str]) -> None:
        self.args, self.toolchain, self.recipe, self.backend, self.gpus = args, toolchain, recipe, backend, gpus
        self.judge = Path(toolchain["judge"])
        self.t0 = time.monotonic()
        self.log_lock = threading.Lock()
        self.cpu_slots = threading.BoundedSemaphore(args.jobs)
        self.stamp_base = stamp_base(args, toolchain, backend)
        self.wall0 = time.time()   # t0 on the wall clock (a Slurm run lines up its tasks' phases with it)
        self.log_path = args.out / "batch.log"   # one line per finished student (a Slurm task: its records file)
        self.locks = args.out / "locks"          # GPU locks and baseline caches (a Slurm task: its own)
        self.private = Path(tempfile.mkdtemp(prefix="scangrade-batch-"))
        os.chmod(self.private, 0o700)
        self.pools: list[Pool] = []
        self.pools_lock = threading.Lock()
        self.progress: Progress | None = None
        self.setpriv = shutil.which("setpriv")
        self.uids: queue.SimpleQueue[int] = queue.SimpleQueue()   # sandbox uids, one per running judge
        self.uid_locks: list = []                                  # the uid blocks this batch holds
        self.case_cache: Path | None = None   # made by run(), removed when it returns or raises
        self.weights = suite_weights([*args.suite, *args.hidden_suite])   # the queue's order

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    # pools ----------------------------------------------------------------------------------------------
    def make_pools(self) -> None:
        locks = self.locks
        seats = self.args.judges_per_gpu
        if self.backend == "gpu":
            locks.mkdir(parents=True, exist_ok=True)
            for g in self.gpus:
                env = dict(os.environ, CUDA_VISIBLE_DEVICES=g)
                self.pools.append(Pool(g, Seats(seats), env, locks / f"gpu{g}.lock"))
        else:
            self.pools.append(Pool("cpu", Seats(seats), dict(os.environ), None))
        try:
            uids, self.uid_locks = claim_sandbox_uids(seats * len(self.pools))
        except OSError as exc:
            raise Stop(EXIT_INTERNAL, f"sandbox uids: {exc}") from None
        for uid in uids:
            self.uids.put(uid)

    @contextlib.contextmanager
    def compile_slot(self) -> Iterator[None]:
        """A CPU slot for unpacking and compiling one submission."""
        with self.cpu_slots:
            self.progress.change(compiling=1)
            try:
                yield
            finally:
                self.progress.change(compiling=-1)

    @contextlib.contextmanager
    def judge_seat(self, st: Student) -> Iterator[JudgeSeat]:
        """A seat in the least busy pool (and, emulated, a CPU slot): how this student's judge runs."""
        queued_at = self.now()
        with self.pools_lock:
            pool = min(self.pools, key=lambda p: p.outstanding)
            pool.outstanding += 1
        try:
            with pool.seats.seat(expected_judge_s(st.out / "build.json", self.weights, st.previous_judge_s)):
                st.phases["queue"] = [queued_at, self.now()]
                st.gpu = pool.name if self.backend == "gpu" else None
                uid = self.uids.get()
                extra = ["--verbose", "--sandbox-uid", str(uid)]
                if pool.lock_file:
                    extra += ["--gpu-lock", str(pool.lock_file),
                              "--baseline-cache", str(pool.lock_file.with_name(f"baselines-gpu{pool.name}.json"))]
                # waits for other judges' timing are not in the judge's budget: allow them here
                timeout = self.args.budget_s * max(1, self.args.judges_per_gpu if pool.lock_file else 1) \
                    + JUDGE_GRACE_S
                # the judge dies with the batch (a killed batch leaves no judge behind)
                prefix = [self.setpriv, "--pdeathsig", "KILL"] if self.setpriv else []
                with self.cpu_slots if self.backend == "emulate" else contextlib.nullcontext():
                    self.progress.change(judging=1)
                    try:
                        yield JudgeSeat(pool.env, extra, timeout, prefix)
                    finally:
                        self.progress.change(judging=-1)
                        self.uids.put(uid)
        finally:
            with self.pools_lock:
                pool.outstanding -= 1

    # one student --------------------------------------------------------------------------------------------
    def stamp(self, st: Student) -> None:
        """This run's stamp for the student: the settings and the submission's content hash."""
        try:
            st.stamp = dict(self.stamp_base, submission_sha256=content_hash(st.entry.path))
        except OSError as exc:
            st.stamp = dict(self.stamp_base, submission_sha256=f"unreadable: {exc}")

    def reusable(self, st: Student) -> bool:
        """The stamp matches and the results are readable: nothing to grade again."""
        old = current_stamp(st)
        if old is None:
            return False
        try:
            st.results = load_results(st.results_path, validate=False)
        except ResultsError:
            return False
        missing = [f for f in self.args.formats if not (st.out / FILE_NAMES[f]).is_file()]
        if missing:
            write_exports(st.results, st.out, missing)
        if not (st.out / FEEDBACK_PAGE).is_file():
            try:
                write_page(st.results, st.out)
            except (OSError, KeyError, TypeError, ValueError) as exc:
                log.warning("%s: %s not written: %r", st.entry.student_id, FEEDBACK_PAGE, exc)
        st.reused = True
        st.outcome = st.results["outcome"]
        st.flags = flags_of(st.results)
        st.judge_phases = old.get("judge_phases", {})
        return True

    def grade(self, st: Student) -> None:
        """Hash; reuse, or grade (grade.grade_one) and stamp."""
        start = self.now()
        self.stamp(st)
        reuse = self.args.resume and self.reusable(st)
        st.phases["hash"] = [start, self.now()]
        if reuse:
            return
        st.out.mkdir(parents=True, exist_ok=True)
        st.previous_judge_s = previous_judge_s(st.out / "stamp.json")
        # nothing stale may pass for this run's results: the stamp goes first
        for name in ("stamp.json", "judge.log"):
            (st.out / name).unlink(missing_ok=True)
        job = GradeJob(st.entry.path, self.args.suite, self.args.hidden_suite, self.args.secret_file, out=st.out,
                       name=st.entry.student_id, formats=self.args.formats, budget_s=self.args.budget_s,
                       max_n=self.args.max_n, jobs=1, compile_timeout=self.args.compile_timeout,
                       judge_log=st.out / "judge.log", keep_objects=False, sandbox=self.args.sandbox,
                       bwrap=self.args.bwrap, case_cache=self.case_cache)
        graded = grade_one(job, self.judge, self.backend, self.recipe, self.private, compile_slot=self.compile_slot,
                           judge_seat=lambda: self.judge_seat(st), clock=self.now)
        st.phases.update(graded.phases)
        st.results = graded.results
        if graded.results is not None:
            st.judge_phases = judge_phases(graded.results)
            t, end = st.phases["judge"]
            jp = st.judge_phases
            st.phases["correctness"] = [t, round(t + jp["correctness"] + jp["timing"] + jp["lock_wait"], 3)]
            st.phases["sanitizer"] = [round(max(t, end - jp["sanitizer"]), 3), end]
        if graded.error:
            st.error = graded.error
            st.flags = ["internal_error"]
            return
        st.outcome = st.results["outcome"]
        st.flags = flags_of(st.results)
        if st.outcome == "graded":
            # the stamp last: it marks the student as done for --resume
            # with the hash of the results it vouches for: a resume trusts no other file
            write_atomic(st.out / "stamp.json", json.dumps({"stamp": st.stamp, "finished_at": time.time(),
                                                            "results_sha256": file_sha256(st.results_path),
                                                            "judge_phases": st.judge_phases}, indent=1) + "\n")

    def finish(self, st: Student) -> None:
        if st.error and not st.flags:
            st.flags = ["internal_error"]
        with self.log_lock:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(st.record()) + "\n")
        self.progress.finished(st)

    # the whole batch ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Remove the private folder and let go of the sandbox uids (run() does it itself)."""
        shutil.rmtree(self.private, ignore_errors=True)
        for f in self.uid_locks:
            f.close()
        self.uid_locks = []

    def run(self, entries: list[Entry]) -> list[Student]:
        students = [Student(e, self.args.out / "students" / e.student_id) for e in entries]
        self.progress = Progress(len(students), enabled=not self.args.quiet)

        def one(st: Student) -> None:
            try:
                self.grade(st)
            except Exception as exc:  # noqa: BLE001 - one submission never stops the batch
                st.error = f"internal error while grading: {exc!r}"
                st.flags = ["internal_error"]
            self.finish(st)

        # One thread per student in flight: CPU slots bound the compiles, pool seats the judges. The
        # extra threads let compiles run ahead of the judges.
        try:
            self.make_pools()
            seats = self.args.judges_per_gpu * len(self.pools)
            threads = max(1, min(len(students), 2 * (self.args.jobs + seats)))
            if self.args.sandbox != "off":   # unconfined, a worker could write it (the judge ignores it too)
                cap = self.args.max_n if self.args.max_n is not None else \
                    EMULATION_MAX_N if self.backend == "emulate" else None
                self.case_cache = make_case_cache(self.private, case_data_bytes(
                    [*self.args.suite, *self.args.hidden_suite], cap))
            with ThreadPoolExecutor(threads, "grade") as pool:
                for f in [pool.submit(one, st) for st in students]:
                    f.result()
        finally:
            self.progress.close()
            if self.case_cache is not None:
                shutil.rmtree(self.case_cache, ignore_errors=True)
            self.close()
        return students


# --- command line ---------------------------------------------------------------------------------------

def detect_gpus() -> list[str]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES's entries, else nvidia-smi -L's indices."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        return [g.strip() for g in visible.split(",") if g.strip()]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, _ in enumerate(l for l in r.stdout.splitlines() if l.startswith("GPU "))]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="batch.py", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
    cluster = parser.add_argument_group(
        "Slurm", "grade on a Slurm cluster: one array job over shards of the class, then the gradebook (README, "
                 "'Grading a whole class on a Slurm cluster'). OUT, the submissions and the build folder must be on "
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
    args = parser.parse_args(argv)
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
    check_slurm_args(parser, args)
    instructor.check_arguments(parser, args)
    args.jobs_given = args.jobs   # before any default: the Slurm tasks' --cpus-per-task
    args.suite = [s.resolve() for s in (args.suite or [REPO / "testcases" / "public.json"])]
    args.hidden_suite = [s.resolve() for s in args.hidden_suite]
    args.out = args.out.resolve()
    return args


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


class Stop(Exception):
    """Ends the command with an exit status and a message (batch.py's fail)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Setup:
    """What the command works with once its inputs are checked."""
    toolchain: dict
    judge: Path
    backend: str
    recipe: Recipe
    entries: list[Entry]
    intakes: list[repomod.Intake]


def resolve_jobs(args: argparse.Namespace) -> None:
    """--jobs, else the CPUs Slurm gave this job (inside an allocation), else the CPU count."""
    if args.jobs is not None:
        return
    for var in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"):
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            args.jobs = int(value)
            return
    args.jobs = os.cpu_count() or 1


def load_inputs(args: argparse.Namespace) -> tuple[dict, Path, str, Recipe]:
    """The suites and secret exist, and the grader is built: its toolchain, judge, backend and recipe."""
    for suite in [*args.suite, *args.hidden_suite]:
        if not suite.is_file():
            raise Stop(EXIT_BAD_INPUT, f"suite {suite} not found")
    if args.secret_file and not args.secret_file.is_file():
        raise Stop(EXIT_BAD_INPUT, f"secret file {args.secret_file} not found")
    try:
        return load_grader(args.build_dir, args.backend, args.sandbox, args.bwrap)
    except ToolchainError as exc:
        raise Stop(EXIT_INTERNAL, str(exc)) from None


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


def pick_gpus(args: argparse.Namespace, backend: str) -> list[str]:
    gpus: list[str] = []
    if backend == "gpu":
        gpus = detect_gpus() if args.gpus == "auto" else args.gpus.split(",")
        if not gpus:
            raise Stop(EXIT_INTERNAL, "--backend gpu but no GPU found (nvidia-smi -L); give --gpus 0 to force")
    if args.judges_per_gpu is None:
        args.judges_per_gpu = min(JUDGES_PER_GPU, max(1, args.jobs // len(gpus))) if gpus else args.jobs
    return gpus


def write_class(args: argparse.Namespace, students: list[Student], intakes: list[repomod.Intake], head: dict,
                n_gpus: int, not_run: frozenset[str] = frozenset()) -> int:
    """The class's files from its students: gradebook.csv, batch.json (head first) and report.html;
    a summary on stderr. Returns the exit status."""
    # a repository that could not be taken: a row saying why, nothing graded
    students = students + [
        Student(Entry(it.spec.name, args.submissions / it.spec.name, "repository", it.spec.name, "git"),
                args.out / "students" / it.spec.name, outcome="not_graded", error=it.error)
        for it in intakes if it.error]
    columns, rows = gradebook_rows(students, args.out, args.threshold)
    for row in rows:
        if row["student_id"] in not_run:
            row["run"] = "not_run"
    if intakes:   # the repository columns go last: the folder batch's columns keep their places
        by_name = {it.spec.name: it for it in intakes}
        columns = [*columns, *repomod.GRADEBOOK_COLUMNS]
        for row in rows:
            it = by_name[row["student_id"]]
            row.update(it.columns())
            if it.error:
                row["run"] = "not_taken"
    write_gradebook(args.out / "gradebook.csv", columns, rows)
    record = {**head, "suites": [str(s) for s in args.suite], "hidden_suites": [str(s) for s in args.hidden_suite],
              "max_n": args.max_n, "budget_s": args.budget_s, "threshold": args.threshold,
              "stamp": head.get("stamp"), "phase_totals": phase_totals(students, n_gpus),
              **({"repos": {"list": str(args.repos.resolve()) if args.repos else None,
                            "deadline": args.deadline.isoformat() if args.deadline else None,
                            "repositories": [it.record() for it in intakes]}} if intakes else {}),
              "students": [st.record() for st in sorted(students, key=lambda s: s.entry.student_id)]}
    instructor.write_class_files(args, students, record)   # class_summary.json, lms/, similarity.json
    write_atomic(args.out / "batch.json", json.dumps(record, indent=1) + "\n")
    write_atomic(args.out / "report.html", render_report(students, record, columns, rows))

    untaken = [it for it in intakes if it.error]
    bad = [st for st in students if st.outcome != "graded" and st.entry.kind != "repository"]
    reused = sum(st.reused for st in students)
    log.info("%d submission(s) in %s (%d reused, %d not graded)", len(students),
             tqdm.format_interval(head.get("wall_s") or 0), reused, len(bad))
    log.info("%s", args.out / "gradebook.csv")
    log.info("%s", args.out / "report.html")
    for st in bad:
        log.info("NOT GRADED %s (%s): %s", st.entry.student_id, st.entry.raw_name, st.error or "internal error")
    for it in untaken:
        log.info("NOT TAKEN %s (%s): %s", it.spec.name, it.spec.url, it.error)
    if not_run:
        log.info("%d student(s) not graded because their Slurm task ended first: run the same command again to "
                 "grade only them", len(not_run))
    return EXIT_SLURM if not_run else EXIT_INTERNAL if bad else EXIT_REPOS_NOT_TAKEN if untaken else EXIT_OK


def run_local(args: argparse.Namespace, setup: Setup) -> int:
    """Grade the class on this machine's GPUs (or CPUs, emulated)."""
    gpus = pick_gpus(args, setup.backend)
    where = f"{len(gpus)} GPU(s) {','.join(gpus)}, {args.judges_per_gpu} judge(s) each" if gpus else \
        f"{args.judges_per_gpu} emulated judge(s)"
    log.info("%d submission(s), backend %s, %d CPU slot(s), %s", len(setup.entries), setup.backend, args.jobs, where)
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    batch = Batch(args, setup.toolchain, setup.recipe, setup.backend, gpus)
    if setup.entries:
        students = batch.run(setup.entries)
    else:   # no repository could be taken
        students = []
        batch.close()
    head = {"started_at": started_at, "wall_s": round(time.monotonic() - batch.t0, 3), "backend": setup.backend,
            "gpus": gpus, "jobs": args.jobs, "judges_per_gpu": args.judges_per_gpu, "stamp": batch.stamp_base}
    return write_class(args, students, setup.intakes, head, len(gpus))


# --- Slurm: submit, one shard, finish ----------------------------------------------------------------------

BATCH_SCRIPT = REPO / "grading" / "batch.py"
EXIT_SLURM = 4              # Slurm refused the job, or some task ended before grading all its students
SHARD_OVERHEAD_S = 10.0     # what a student costs besides its judge (unpack, compile, worker start), roughly


def run_argv(args: argparse.Namespace, backend: str) -> list[str]:
    """batch.py's command line for a run's jobs: this run's settings, no Slurm flags (each job adds its
    mode: --plan for a shard, --slurm-finish)."""
    argv = [sys.executable, str(BATCH_SCRIPT), str(args.submissions.resolve()), "--out", str(args.out),
            "--backend", backend, "--build-dir", str(args.build_dir.resolve()), "--budget-s", f"{args.budget_s:g}",
            "--compile-timeout", f"{args.compile_timeout:g}", "--formats", ",".join(args.formats) or "none",
            "--resume" if args.resume else "--no-resume", "--sandbox", args.sandbox, "--bwrap", args.bwrap]
    for suite in args.suite:
        argv += ["--suite", str(suite)]
    for suite in args.hidden_suite:
        argv += ["--hidden-suite", str(suite)]
    if args.secret_file:
        argv += ["--secret-file", str(args.secret_file.resolve())]
    for flag, value in (("--jobs", args.jobs_given), ("--judges-per-gpu", args.judges_per_gpu),
                        ("--max-n", args.max_n), ("--threshold", args.threshold)):
        if value is not None:
            argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    argv += instructor.argv(args)   # --roster, --similarity, ...: the finishing job writes those files
    return argv + (["--quiet"] if args.quiet else [])


def entry_record(e: Entry) -> dict:
    return {"raw_name": e.raw_name, "path": str(e.path), "kind": e.kind, "student_id": e.student_id, "lms": e.lms,
            "notes": list(e.notes)}


def entry_from(rec: dict) -> Entry:
    return Entry(rec["raw_name"], Path(rec["path"]), rec["kind"], rec["student_id"], rec["lms"], list(rec["notes"]))


def intake_record(it: repomod.Intake) -> dict:
    return {**dataclasses.asdict(it), "folder": str(it.folder) if it.folder else None}


def intake_from(rec: dict) -> repomod.Intake:
    rec = dict(rec)
    spec = repomod.RepoSpec(**rec.pop("spec"))
    folder = rec.pop("folder")
    return repomod.Intake(spec=spec, folder=Path(folder) if folder else None, **rec)


def shard_costs(students: list[Student], weights: dict[str, float]) -> dict[str, float]:
    """Each student's expected seconds, for the shards: the judge's time at the last grading (old
    stamp), else the weight of the slots that compiled last time (build.json), else of every slot,
    weights turned into seconds by the median ratio seen in this class (1 when none is known), plus a
    fixed cost for unpacking and compiling."""
    full = sum(weights.values())
    known, ratios = {}, []
    for st in students:
        prev = previous_judge_s(st.out / "stamp.json")
        built = expected_judge_s(st.out / "build.json", weights, None) if (st.out / "build.json").is_file() else None
        known[st.entry.student_id] = (prev, built)
        if prev is not None and built:
            ratios.append(prev / built)
    factor = sorted(ratios)[len(ratios) // 2] if ratios else 1.0
    return {sid: SHARD_OVERHEAD_S + (prev if prev is not None else factor * (built if built is not None else full))
            for sid, (prev, built) in known.items()}


def slurm_options(args: argparse.Namespace) -> slurm.Options:
    return slurm.Options(partition=args.partition, account=args.account, time=args.time,
                         gpus_per_task=args.gpus_per_task, cpus_per_task=args.jobs_given,
                         array_parallel=args.array_parallel, sbatch_args=list(args.sbatch_arg))


def slurm_submit(args: argparse.Namespace, setup: Setup) -> int:
    """Plan the shards, submit the array job and the job that finishes it; wait unless --no-wait."""
    out = args.out
    previous = slurm.latest_run_dir(out)
    if previous is not None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            job = slurm.read_json(previous / "job.json")
            left = slurm.queued(str(job["array_job"]))
            if left:
                raise Stop(EXIT_SLURM, f"job {job['array_job']} ({previous}) is still grading this class "
                           f"({', '.join(sorted(set(left.values())))}): wait for it to end, or scancel "
                           f"{job['array_job']}, then run this again")
            if left is None:
                log.warning("squeue did not answer: cannot tell whether job %s still runs", job["array_job"])
    batch = Batch(args, setup.toolchain, setup.recipe, setup.backend, [])
    students = [Student(e, out / "students" / e.student_id) for e in setup.entries]
    current: list[str] = []
    to_grade: list[Student] = []
    for st in students:
        batch.stamp(st)
        if args.resume and current_stamp(st) is not None:
            current.append(st.entry.student_id)
        else:
            to_grade.append(st)
    costs = shard_costs(to_grade, batch.weights)
    batch.close()
    if current:
        log.info("%d student(s) already graded with these settings (stamp.json): not graded again", len(current))
    if not to_grade:
        log.info("nothing to grade on the cluster: writing the gradebook")
        return finish_class(args, setup.toolchain, setup.recipe, setup.backend, setup.entries, setup.intakes,
                            None, {}, {})
    tasks = args.tasks or -(-len(to_grade) // slurm.STUDENTS_PER_TASK)
    shards = slurm.shard_students(costs, tasks)
    argv = run_argv(args, setup.backend)
    plan = {"plan_version": slurm.PLAN_VERSION, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "argv": argv, "backend": setup.backend, "class": [entry_record(e) for e in setup.entries],
            "intakes": [intake_record(it) for it in setup.intakes], "current_at_submit": sorted(current),
            "shards": [{"task": k, "students": shard, "expected_s": round(sum(costs[s] for s in shard), 1)}
                       for k, shard in enumerate(shards)]}
    opts = slurm_options(args)
    name = f"scangrade-{out.name}"
    run = slurm.new_run_dir(out)
    plan_path = run / "plan.json"
    try:
        write_atomic(plan_path, json.dumps(plan, indent=1) + "\n")
        task_sh = slurm.write_script(run / "task.sh", [*argv, "--plan", str(plan_path)],
                                     "one shard of the class: $SLURM_ARRAY_TASK_ID picks it (scangrade batch.py --slurm)")
        finish_sh = slurm.write_script(run / "finish.sh", [*argv, "--slurm-finish", "--plan", str(plan_path)],
                                       "the gradebook and report once every task has ended (scangrade batch.py --slurm)")
        array_job = slurm.submit(slurm.array_command(opts, len(shards), task_sh, run / "logs", name))
    except slurm.SlurmError as exc:
        shutil.rmtree(run, ignore_errors=True)
        raise Stop(EXIT_SLURM, f"{exc}\nnothing was submitted and nothing in {out} changed") from None
    except BaseException:
        shutil.rmtree(run, ignore_errors=True)   # a run folder that was never submitted
        raise
    job = {"array_job": array_job, "finish_job": None, "tasks": len(shards), "students": len(to_grade),
           "submitted_at": time.time(), "plan": str(plan_path)}
    write_atomic(run / "job.json", json.dumps(job, indent=1) + "\n")
    log.info("submitted job %s: %d task(s) grading %d student(s) (%s; logs in %s)", array_job, len(shards),
             len(to_grade), "+".join(str(len(s)) for s in shards), run / "logs")
    finish_problem = ""
    try:
        job["finish_job"] = slurm.submit(slurm.finish_command(opts, array_job, finish_sh, run / "logs", name))
        write_atomic(run / "job.json", json.dumps(job, indent=1) + "\n")
        log.info("submitted job %s: writes the gradebook once job %s has ended", job["finish_job"], array_job)
    except slurm.SlurmError as exc:
        finish_problem = str(exc)
    if not args.wait:
        if finish_problem:
            raise Stop(EXIT_SLURM, f"the job that writes the gradebook was not submitted: {finish_problem}\n"
                       f"job {array_job} grades the class; once it has ended, run this command again with "
                       f"--slurm-finish (in place of --slurm) to write the gradebook")
        log.info("not waiting: %s and %s appear when job %s has ended (squeue -j %s)", out / "gradebook.csv",
                 out / "report.html", job["finish_job"], array_job)
        print(array_job, flush=True)   # as sbatch --parsable: for a script's --dependency
        return EXIT_OK
    if finish_problem:
        log.warning("the job that writes the gradebook was not submitted (%s): this command writes it", finish_problem)
    return slurm_wait(args, setup, run, plan, job)


def slurm_wait(args: argparse.Namespace, setup: Setup, run: Path, plan: dict, job: dict) -> int:
    """Wait for the array job (progress from squeue and the tasks' records), then finish here."""
    array_job = job["array_job"]
    total = sum(len(s["students"]) for s in plan["shards"])
    last, silent, seen, gone = "", 0, False, 0
    try:
        while True:
            left = slurm.queued(array_job)
            _, records = slurm.read_records(run)
            if left is None:
                silent += 1
                if silent in (4, 40):
                    log.warning("squeue does not answer; still waiting for job %s", array_job)
            else:
                silent = 0
                seen = seen or bool(left)
                gone = 0 if left else gone + 1
                if not left and not seen and gone < 3:   # not listed yet: ask again before believing it ended
                    time.sleep(args.poll_s)
                    continue
                counts: dict[str, int] = {}
                for jid, state in left.items():
                    counts[state.lower()] = counts.get(state.lower(), 0) + slurm.count_tasks(jid)
                tasks = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "all ended"
                line = f"job {array_job}: tasks {tasks}; {len(records)}/{total} student(s) finished"
                if line != last and not args.quiet:
                    log.info("%s", line)
                last = line
                if not left:
                    break
            time.sleep(args.poll_s)
    except KeyboardInterrupt:
        log.error("stopped waiting; job %s keeps running%s", array_job,
                  f" and job {job['finish_job']} writes the gradebook when it ends" if job.get("finish_job") else
                  ": once it has ended, run this command with --slurm-finish in place of --slurm")
        return 130
    if job.get("finish_job"):
        slurm.cancel_pending(job["finish_job"])   # this command finishes; the job is the fallback
    return finish_class(args, setup.toolchain, setup.recipe, setup.backend, [entry_from(r) for r in plan["class"]],
                        [intake_from(r) for r in plan["intakes"]], run, plan, job)


def slurm_shard(args: argparse.Namespace) -> int:
    """One array task: grade the students of one shard of the plan, exactly as a local batch would,
    into the shared folder; its records go to the run's records/task-K.jsonl; no gradebook."""
    try:
        plan = slurm.read_json(args.plan)
    except (OSError, ValueError) as exc:
        raise Stop(EXIT_BAD_INPUT, f"--plan {args.plan}: {exc}") from None
    run = args.plan.resolve().parent
    k = args.shard
    if k is None:
        task = os.environ.get("SLURM_ARRAY_TASK_ID", "")
        if not task.isdigit():
            raise Stop(EXIT_BAD_INPUT, "--plan without --shard outside a Slurm array task ($SLURM_ARRAY_TASK_ID)")
        k = int(task)
    if not 0 <= k < len(plan["shards"]):
        raise Stop(EXIT_BAD_INPUT, f"--shard {k}: the plan has shards 0 to {len(plan['shards']) - 1}")
    ids = set(plan["shards"][k]["students"])
    entries = [entry_from(r) for r in plan["class"] if r["student_id"] in ids]
    toolchain, _judge, backend, recipe = load_inputs(args)
    resolve_jobs(args)
    gpus = pick_gpus(args, backend)
    batch = Batch(args, toolchain, recipe, backend, gpus)
    batch.log_path = slurm.records_path(run, k)
    batch.locks = batch.private / "locks"   # this task's GPUs are its own: their locks and baselines too
    header = {"task_header": k, "job": os.environ.get("SLURM_ARRAY_JOB_ID"), "node": socket.gethostname(),
              "started_at": batch.wall0, "gpus": gpus, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "jobs": args.jobs, "judges_per_gpu": args.judges_per_gpu, "students": sorted(ids)}
    with open(batch.log_path, "a") as f:
        f.write(json.dumps(header) + "\n")
    log.info("task %d on %s: %d student(s), backend %s, %d CPU slot(s), %s", k, header["node"], len(entries), backend,
             args.jobs, f"GPU(s) {','.join(gpus)}" if gpus else "emulated")

    def stopped(signum, _frame) -> None:
        # scancel, the time limit or a node going down: what is stamped stays, the rest stays ungraded
        log.error("task %d: stopped by signal %d; its unfinished students stay ungraded (rerun the command)", k, signum)
        if batch.case_cache is not None:
            shutil.rmtree(batch.case_cache, ignore_errors=True)
        shutil.rmtree(batch.private, ignore_errors=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stopped)
    students = batch.run(entries)
    bad = [st for st in students if st.outcome != "graded"]
    log.info("task %d: %d student(s), %d reused, %d not graded", k, len(students), sum(st.reused for st in students),
             len(bad))
    for st in bad:
        log.info("NOT GRADED %s: %s", st.entry.student_id, st.error or "internal error")
    return EXIT_INTERNAL if bad else EXIT_OK


def slurm_finish(argv: list[str] | None, args: argparse.Namespace) -> int:
    """--slurm-finish: the gradebook of OUT's last run (or --plan's), with that run's own settings."""
    run = args.plan.resolve().parent if args.plan else slurm.latest_run_dir(args.out)
    if run is None:
        raise Stop(EXIT_BAD_INPUT, f"no Slurm run in {args.out / 'slurm'}: grade the class with --slurm first")
    try:
        plan = slurm.read_json(run / "plan.json")
        job = slurm.read_json(run / "job.json")
    except (OSError, ValueError) as exc:
        raise Stop(EXIT_BAD_INPUT, f"{run}: {exc}") from None
    given = args
    args = parse_args(plan["argv"][2:])
    args.quiet = given.quiet or args.quiet
    if given.threshold is not None:
        args.threshold = given.threshold
    toolchain, _judge, backend, recipe = load_inputs(args)
    return finish_class(args, toolchain, recipe, backend, [entry_from(r) for r in plan["class"]],
                        [intake_from(r) for r in plan["intakes"]], run, plan, job)


def finish_class(args: argparse.Namespace, toolchain: dict, recipe: Recipe, backend: str, entries: list[Entry],
                 intakes: list[repomod.Intake], run: Path | None, plan: dict, job: dict) -> int:
    """The gradebook from what is in the shared folder: a student whose stamp matches is graded
    (this run, or before it: reused); one its task finished without a stamp shows what the task
    said; any other is not graded, with its task's Slurm state and log."""
    resolve_jobs(args)
    headers, records = slurm.read_records(run) if run else ({}, {})
    array_job = job.get("array_job")
    states, why = slurm.task_states(array_job) if array_job else ({}, "")
    task_of = {sid: s["task"] for s in plan.get("shards", []) for sid in s["students"]}
    first = min((h["started_at"] for h in headers.values()), default=time.time())
    shift = {k: h["started_at"] - first for k, h in headers.items()}
    batch = Batch(args, toolchain, recipe, backend, [])
    students: list[Student] = []
    not_run: set[str] = set()
    for e in entries:
        st = Student(e, args.out / "students" / e.student_id)
        batch.stamp(st)
        rec = records.get(e.student_id)
        if batch.reusable(st):
            if rec is not None and not rec.get("reused"):
                st.reused = False          # graded by this run
        elif rec is not None:              # finished by its task without a stamp: the task's verdict
            st.outcome, st.flags, st.error = rec.get("outcome", "error"), rec.get("flags") or [], rec.get("error", "")
            if rec.get("score") is not None:
                with contextlib.suppress(ResultsError):
                    st.results = load_results(st.results_path, validate=False)
        else:
            not_run.add(e.student_id)
            st.outcome = "not_graded"
            st.error = explain_not_run(run, array_job, task_of.get(e.student_id), states, why, headers)
        if rec is not None and not st.reused:
            k = task_of.get(e.student_id)
            st.gpu = rec.get("gpu")
            st.phases = {p: [round(a + shift.get(k, 0.0), 3), round(b + shift.get(k, 0.0), 3)]
                         for p, (a, b) in (rec.get("phases") or {}).items()}
            st.judge_phases = rec.get("judge_phases") or st.judge_phases
        students.append(st)
    batch.close()
    if run is not None:
        append_records_once(args.out / "batch.log", run, records)

    def per_task(key: str, default):   # the tasks' own settings (each task's --jobs is its allocation's)
        return max((h.get(key) or 0 for h in headers.values()), default=0) or default

    gpus = [f"{h['node']}:{g}" for _, h in sorted(headers.items()) for g in h.get("gpus") or []]
    tasks = [{"task": s["task"], "students": len(s["students"]), "node": headers.get(s["task"], {}).get("node"),
              "state": states[s["task"]].describe() if s["task"] in states else None} for s in plan.get("shards", [])]
    head = {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(first)),
            "wall_s": round(time.time() - first, 3) if headers else 0.0, "backend": backend, "gpus": gpus,
            "jobs": per_task("jobs", args.jobs), "judges_per_gpu": per_task("judges_per_gpu", args.judges_per_gpu),
            "stamp": batch.stamp_base,
            **({"slurm": {"run": str(run), "array_job": array_job, "finish_job": job.get("finish_job"),
                          "tasks": tasks, "not_run": sorted(not_run)}} if run else {})}
    for t in tasks:
        if t["state"] and not t["state"].startswith("COMPLETED"):
            log.warning("Slurm task %d of job %s: %s (log: %s)", t["task"], array_job, t["state"],
                        run / "logs" / f"task-{array_job}_{t['task']}.out")
    return write_class(args, students, intakes, head, len(gpus), frozenset(not_run))


def explain_not_run(run: Path | None, array_job: str | None, k: int | None, states: dict[int, slurm.TaskState],
                    why: str, headers: dict[int, dict]) -> str:
    """Why a student has no grade: its task's Slurm state and the last line of its log."""
    if run is None or array_job is None or k is None:
        return "no stamp.json matches this run's settings (grade it with --slurm)"
    task = f"Slurm task {k} of job {array_job}"
    state = states.get(k)
    if state is None:
        where = f"state unknown: {why}" if why else "state unknown"
    elif state.state in slurm.ACTIVE_STATES:
        where = f"is still {state.describe()}"
    else:
        where = f"ended {state.describe()}"
    started = "" if k in headers else "; it never started grading"
    logfile = run / "logs" / f"task-{array_job}_{k}.out"
    last = slurm.last_log_line(logfile)
    return f"{task} {where} before grading it{started}; log {logfile}" + (f": {last}" if last else "")


def append_records_once(batch_log: Path, run: Path, records: dict[str, dict]) -> None:
    """The run's student records join OUT/batch.log once, whoever finishes the run (this command
    or the dependent job)."""
    try:
        fd = os.open(run / "batch-log-appended", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    os.close(fd)
    with open(batch_log, "a") as f:
        for rec in records.values():
            f.write(json.dumps(rec) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logsetup.setup("batch", args.quiet)
    logging.getLogger("scangrade.grade").setLevel(logging.WARNING)   # no per-student chatter
    try:
        if args.slurm_finish:
            return slurm_finish(argv, args)
        if args.plan is not None:
            return slurm_shard(args)
        setup = prepare(args)
        return slurm_submit(args, setup) if args.slurm else run_local(args, setup)
    except Stop as stop:
        log.error("%s", stop)
        return stop.code


if __name__ == "__main__":
    sys.exit(main())
