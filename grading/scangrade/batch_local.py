"""The local class run: each student graded on this machine (grade.grade_one) with its seat in a
judge pool, a sandbox uid and the shared case cache, and stamped so that a later run with the same
settings reuses it instead of grading it again (the Batch class); run_local grades a whole class.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .batch_class import Setup, Stop, pick_gpus, write_class
from .batch_seats import (EMULATION_MAX_N, Progress, Seats, case_data_bytes, claim_sandbox_uids, expected_judge_s,
                          make_case_cache, previous_judge_s, suite_weights)
from .build import Recipe
from .exporters import FILE_NAMES, write_exports
from .feedback import FILE_NAME as FEEDBACK_PAGE, write_page
from .files import sha256_file, write_atomic
from .grade import JUDGE_GRACE_S, GradeJob, JudgeSeat, grade_one, judge_phases
from .gradebook import Student, flags_of
from .lms import Entry
from .results import ResultsError, load_results
from .vocab import EXIT_INTERNAL

STAMP_VERSION = 1
log = logging.getLogger(__name__)


# --- stamps ---------------------------------------------------------------------------------------------

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
        if old.get("results_sha256") != sha256_file(st.results_path):
            return None
    except OSError:
        return None
    return old


# --- the batch ------------------------------------------------------------------------------------------

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
        # a Slurm task: called with the signal when a judge was stopped from outside (scancel signals every
        # process of the task, the judges too, and one may end before the task's own handler runs)
        self.on_judge_stopped: Callable[[int], None] | None = None

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
        if graded.judge_signal and self.on_judge_stopped is not None:
            self.on_judge_stopped(graded.judge_signal)
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
                                                            "results_sha256": sha256_file(st.results_path),
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
