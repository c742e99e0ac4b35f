"""Grade a folder of submissions with one command: a gradebook, a report and every student's results.

    python3 grading/batch.py SUBMISSIONS_DIR --out DIR [--suite FILE]... [--hidden-suite FILE --secret-file F]
                             [--backend auto|gpu|emulate] [--build-dir build] [--jobs N] [--gpus auto|0,1]
                             [--judges-per-gpu N] [--max-n N] [--budget-s S] [--formats all|none|LIST]
                             [--resume | --no-resume] [--threshold FRACTION]
    python3 grading/batch.py --repos FILE [--deadline ISO-8601] --out DIR [same options]

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
the emulate backend one pool of --jobs judges shares the CPU slots with the compiles.

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

Gradebook columns: see scangrade/gradebook.py.

Exit status: 0 every entry graded; 1 (--repos) every entry taken was graded but some repository
could not be taken (its row's repo_error says why); 2 bad input (usage, missing or malformed suite); 3 the grader is
not built, or some entry could not be graded (internal_error rows: see their judge.log).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import heapq
import io
import json
import logging
import os
import queue
import re
import shutil
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
from .batch_report import render_report
from .build import Recipe, ToolchainError, write_layout_error
from .exporters import FILE_NAMES, ResultsError, fmt_points, load_results, parse_formats, write_exports
from .feedback import FILE_NAME as FEEDBACK_PAGE, write_page
from .grade import (JUDGE_GRACE_S, GradeJob, JudgeSeat, add_sandbox_arguments, grade_one, judge_command, judge_phases,
                    load_grader)
from .gradebook import Student, flags_of, gradebook_rows, phase_totals, write_atomic, write_gradebook
from .lms import Entry, discover
from . import repos as repomod
from .vocab import EXIT_BAD_INPUT, EXIT_INTERNAL

REPO = Path(__file__).resolve().parents[2]
# Judges running side by side get a sandbox uid each (when run as root): RLIMIT_NPROC counts the
# processes of a uid, so one submission's fork bomb must not use up another's allowance.
SANDBOX_UID_BASE = 61000
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
        self.secret = args.secret_file.read_text().rstrip("\r\n") if args.secret_file else None
        self.stamp_base = {
            "stamp_version": STAMP_VERSION,
            "suites": [sha256_file(s) for s in args.suite],
            "hidden_suites": [sha256_file(s) for s in args.hidden_suite],
            "secret_fingerprint": secret_fingerprint(self.secret),
            "harness_version": str(toolchain.get("version", "")),
            "backend": backend,
            "max_n": args.max_n,
            "budget_s": args.budget_s,
        }
        self.private = Path(tempfile.mkdtemp(prefix="scangrade-batch-"))
        os.chmod(self.private, 0o700)
        self.pools: list[Pool] = []
        self.pools_lock = threading.Lock()
        self.progress: Progress | None = None
        self.setpriv = shutil.which("setpriv")
        self.uids: queue.SimpleQueue[int] = queue.SimpleQueue()   # sandbox uids, one per running judge
        self.case_cache: Path | None = None   # made by run(), removed when it returns or raises
        self.weights = suite_weights([*args.suite, *args.hidden_suite])   # the queue's order

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    # pools ----------------------------------------------------------------------------------------------
    def make_pools(self) -> None:
        locks = self.args.out / "locks"
        seats = self.args.judges_per_gpu
        if self.backend == "gpu":
            locks.mkdir(parents=True, exist_ok=True)
            for g in self.gpus:
                env = dict(os.environ, CUDA_VISIBLE_DEVICES=g)
                self.pools.append(Pool(g, Seats(seats), env, locks / f"gpu{g}.lock"))
        else:
            self.pools.append(Pool("cpu", Seats(seats), dict(os.environ), None))
        for i in range(seats * len(self.pools)):
            self.uids.put(SANDBOX_UID_BASE + i)

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
    def reusable(self, st: Student) -> bool:
        """The stamp matches and the results are readable: nothing to grade again."""
        try:
            old = json.loads((st.out / "stamp.json").read_text())
        except (OSError, ValueError):
            return False
        if not isinstance(old, dict) or old.get("stamp") != st.stamp:
            return False
        try:   # the results the stamp vouches for, byte for byte (not a file written since)
            if old.get("results_sha256") != file_sha256(st.results_path):
                return False
        except OSError:
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
        try:
            st.stamp = dict(self.stamp_base, submission_sha256=content_hash(st.entry.path))
        except OSError as exc:
            st.stamp = dict(self.stamp_base, submission_sha256=f"unreadable: {exc}")
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
            with open(self.args.out / "batch.log", "a") as f:
                f.write(json.dumps(st.record()) + "\n")
        self.progress.finished(st)

    # the whole batch ----------------------------------------------------------------------------------------
    def run(self, entries: list[Entry]) -> list[Student]:
        students = [Student(e, self.args.out / "students" / e.student_id) for e in entries]
        self.progress = Progress(len(students), enabled=not self.args.quiet)
        self.make_pools()

        def one(st: Student) -> None:
            try:
                self.grade(st)
            except Exception as exc:  # noqa: BLE001 - one submission never stops the batch
                st.error = f"internal error while grading: {exc!r}"
                st.flags = ["internal_error"]
            self.finish(st)

        # One thread per student in flight: CPU slots bound the compiles, pool seats the judges. The
        # extra threads let compiles run ahead of the judges.
        seats = self.args.judges_per_gpu * len(self.pools)
        threads = max(1, min(len(students), 2 * (self.args.jobs + seats)))
        try:
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
            shutil.rmtree(self.private, ignore_errors=True)
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
                        help="gpu, CPU emulation, or auto: gpu when nvidia-smi -L lists a GPU (default)")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build",
                        help="the CMake build folder holding grading/toolchain.json (default: build/)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="CPU slots: submissions compiled at once, and emulated judges (default: CPU count)")
    parser.add_argument("--gpus", default="auto", help="auto (CUDA_VISIBLE_DEVICES, else nvidia-smi -L) or a "
                        "comma list of GPU indices; one judge pool and one GPU lock per GPU")
    parser.add_argument("--judges-per-gpu", type=int, default=None,
                        help="judges running at once per GPU (default: --jobs split over the GPUs; emulate: --jobs)")
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
    args = parser.parse_args(argv)
    try:
        args.formats = parse_formats(args.formats)
    except ValueError as exc:
        parser.error(str(exc))
    if (args.submissions is None) == (args.repos is None):
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
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.judges_per_gpu is not None and args.judges_per_gpu < 1:
        parser.error("--judges-per-gpu must be at least 1")
    if args.budget_s <= 0:
        parser.error("--budget-s must be positive")
    if args.threshold is not None and not 0 <= args.threshold <= 1:
        parser.error("--threshold is a fraction between 0 and 1")
    if args.gpus != "auto" and not re.fullmatch(r"\d+(,\d+)*", args.gpus):
        parser.error("--gpus: auto or a comma list of indices such as 0,1")
    args.suite = [s.resolve() for s in (args.suite or [REPO / "testcases" / "public.json"])]
    args.hidden_suite = [s.resolve() for s in args.hidden_suite]
    args.out = args.out.resolve()
    return args


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logsetup.setup("batch", args.quiet)
    logging.getLogger("scangrade.grade").setLevel(logging.WARNING)   # no per-student chatter

    def fail(code: int, msg: str) -> int:
        log.error("%s", msg)
        return code

    if args.repos is not None:
        try:
            specs = repomod.parse_repo_list(args.repos)
        except repomod.RepoListError as exc:
            return fail(EXIT_BAD_INPUT, str(exc))
        if not specs:
            return fail(EXIT_BAD_INPUT, f"{args.repos} lists no repository")
        args.submissions = args.out / "submissions"
    if args.repos is None and not args.submissions.is_dir():
        return fail(EXIT_BAD_INPUT, f"{args.submissions} is not a folder")
    for suite in [*args.suite, *args.hidden_suite]:
        if not suite.is_file():
            return fail(EXIT_BAD_INPUT, f"suite {suite} not found")
    if args.secret_file and not args.secret_file.is_file():
        return fail(EXIT_BAD_INPUT, f"secret file {args.secret_file} not found")
    try:
        toolchain, judge, backend, recipe = load_grader(args.build_dir, args.backend, args.sandbox, args.bwrap)
    except ToolchainError as exc:
        return fail(EXIT_INTERNAL, str(exc))
    gpus: list[str] = []
    if backend == "gpu":
        gpus = detect_gpus() if args.gpus == "auto" else args.gpus.split(",")
        if not gpus:
            return fail(EXIT_INTERNAL, "--backend gpu but no GPU found (nvidia-smi -L); give --gpus 0 to force")
    if args.judges_per_gpu is None:
        args.judges_per_gpu = max(1, args.jobs // len(gpus)) if gpus else args.jobs

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scangrade-preflight-") as tmp:
        problem = preflight(judge, args, backend, Path(tmp))
    if problem:
        return fail(EXIT_BAD_INPUT, problem)
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
        return fail(EXIT_BAD_INPUT, f"{args.submissions} holds no submissions")
    where = f"{len(gpus)} GPU(s) {','.join(gpus)}, {args.judges_per_gpu} judge(s) each" if gpus else \
        f"{args.judges_per_gpu} emulated judge(s)"
    log.info("%d submission(s), backend %s, %d CPU slot(s), %s", len(entries), backend, args.jobs, where)

    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    batch = Batch(args, toolchain, recipe, backend, gpus)
    if entries:
        students = batch.run(entries)
    else:   # no repository could be taken
        students = []
        shutil.rmtree(batch.private, ignore_errors=True)
    # a repository that could not be taken: a row saying why, nothing graded
    students += [Student(Entry(it.spec.name, args.submissions / it.spec.name, "repository", it.spec.name, "git"),
                         args.out / "students" / it.spec.name, outcome="not_graded", error=it.error)
                 for it in intakes if it.error]
    wall = time.monotonic() - batch.t0

    columns, rows = gradebook_rows(students, args.out, args.threshold)
    if intakes:   # the repository columns go last: the folder batch's columns keep their places
        by_name = {it.spec.name: it for it in intakes}
        columns = [*columns, *repomod.GRADEBOOK_COLUMNS]
        for row in rows:
            it = by_name[row["student_id"]]
            row.update(it.columns())
            if it.error:
                row["run"] = "not_taken"
    write_gradebook(args.out / "gradebook.csv", columns, rows)
    totals = phase_totals(students, len(gpus))
    record = {"started_at": started_at, "wall_s": round(wall, 3), "backend": backend, "gpus": gpus,
              "jobs": args.jobs, "judges_per_gpu": args.judges_per_gpu,
              "suites": [str(s) for s in args.suite], "hidden_suites": [str(s) for s in args.hidden_suite],
              "max_n": args.max_n, "budget_s": args.budget_s, "threshold": args.threshold,
              "stamp": batch.stamp_base, "phase_totals": totals,
              **({"repos": {"list": str(args.repos.resolve()),
                            "deadline": args.deadline.isoformat() if args.deadline else None,
                            "repositories": [it.record() for it in intakes]}} if intakes else {}),
              "students": [st.record() for st in sorted(students, key=lambda s: s.entry.student_id)]}
    write_atomic(args.out / "batch.json", json.dumps(record, indent=1) + "\n")
    write_atomic(args.out / "report.html", render_report(students, record, columns, rows))

    untaken = [it for it in intakes if it.error]
    bad = [st for st in students if st.outcome != "graded" and st.entry.kind != "repository"]
    reused = sum(st.reused for st in students)
    log.info("%d submission(s) in %s (%d reused, %d not graded)", len(students), tqdm.format_interval(wall),
             reused, len(bad))
    log.info("%s", args.out / "gradebook.csv")
    log.info("%s", args.out / "report.html")
    for st in bad:
        log.info("NOT GRADED %s (%s): %s", st.entry.student_id, st.entry.raw_name, st.error or "internal error")
    for it in untaken:
        log.info("NOT TAKEN %s (%s): %s", it.spec.name, it.spec.url, it.error)
    return EXIT_INTERNAL if bad else EXIT_REPOS_NOT_TAKEN if untaken else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
