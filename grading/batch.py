#!/usr/bin/env python3
"""Grade a folder of submissions with one command: a gradebook, a report and every student's results.

    python3 grading/batch.py SUBMISSIONS_DIR --out DIR [--suite FILE]... [--hidden-suite FILE --secret-file F]
                             [--backend auto|gpu|emulate] [--build-dir build] [--jobs N] [--gpus auto|0,1]
                             [--judges-per-gpu N] [--max-n N] [--budget-s S] [--formats all|none|LIST]
                             [--resume | --no-resume] [--threshold FRACTION]

SUBMISSIONS_DIR holds one entry per student: a folder, a .zip or a .tar.gz/.tgz (anything else is listed
too, with a layout_error). Each is graded exactly like grade.py grades one submission (layout check,
compile, judge, exports), and the batch writes:

  DIR/students/<id>/     results.json (the judge's), build.json, the exports, judge.log, stamp.json
  DIR/gradebook.csv      one row per entry, sorted by id (columns below)
  DIR/report.html        self-contained: score histogram, pass rate per case, perf ratios, submissions
  DIR/batch.json         the batch's record: settings, per-student phases and outcome, phase totals
  DIR/batch.log          one JSON line per finished student, appended as they finish

Student ids (a stable folder name; the raw entry name is kept in the gradebook):
  Canvas      lastfirst_[LATE_]USERID_SUBMISSIONID_file.zip        -> lastfirst_USERID
  Moodle      Full Name_PARTICIPANTID_assignsubmission_file_...   -> full-name_PARTICIPANTID
  Gradescope  submission_SUBMISSIONID (folder)                      -> the submitter's SID from
              SUBMISSIONS_DIR/submission_metadata.yml when present, else submission_SUBMISSIONID
  anything else: the name without its archive suffix, lower case, runs of characters other than
  a-z 0-9 . _ - replaced by '-'. Ids are at most 64 characters; when two entries get the same id the
  later ones (by raw name) get -2, -3, ... and a note.

Concurrency: submissions compile in parallel (--jobs at once, one compile process each, so no more
than --jobs compilers run); judges run in one pool per GPU (CUDA_VISIBLE_DEVICES set for the pool,
--judges-per-gpu judges each) and share DIR/locks/gpu<N>.lock through the judge's --gpu-lock:
correctness and compute-sanitizer runs of several submissions go on side by side, and a judge times
its submission's perf cases with the GPU to itself. The reference, CUB and copy baselines are timed
once per case and GPU and kept in DIR/locks/baselines-gpu<N>.json (the judge's --baseline-cache). On
the emulate backend one pool of --jobs judges shares the CPU slots with the compiles.

Resume (default): a student whose stamp.json matches this run is not graded again. The stamp holds
the submission's content hash, the suites' sha256s, the harness version (toolchain.json), the
backend, --max-n, --budget-s and a fingerprint of the secret (a salted hash, never the secret). A
student without a stamp (killed mid-way, or the grader failed) is graded again.

Gradebook columns: student_id, raw_name, outcome (graded | not_graded | error), flags (space
separated: layout_error compile_error not_implemented crash timeout race memory_error
out_of_bounds_write input_modified fail leak internal_error), one column per slot (its correctness
points), <slot>_perf for slots with performance points, perf_points, points, total, max_total,
percent, meets_threshold, cases_passed, cases, backend, run (graded | reused), seconds, results.

Exit status: 0 every entry graded; 2 bad input (usage, missing or malformed suite); 3 the grader is
not built, or some entry could not be graded (internal_error rows: see their judge.log).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import BuildResult, Recipe, ToolchainError, build, write_layout_error  # noqa: E402
from exporters import FILE_NAMES, ResultsError, fmt_points, load_results, parse_formats, write_exports  # noqa: E402
from grade import JUDGE_GRACE_S, judge_command, load_grader  # noqa: E402
from submission import JUNK_NAMES, SLOTS, load_submission  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 2, 3
STAMP_VERSION = 1
ARCHIVES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
MAX_ID = 64
# flags in gradebook order: build problems first, then case statuses, then harness faults
FLAG_ORDER = ("layout_error", "compile_error", "not_implemented", "crash", "timeout", "race", "memory_error",
              "out_of_bounds_write", "input_modified", "fail", "leak", "internal_error")
PHASES = ("hash", "unpack", "compile", "queue", "judge", "correctness", "prepare", "timing", "lock_wait", "sanitizer",
          "export")
_PHASE_LINE = re.compile(r"phases functional_s=([\d.]+) timing_s=([\d.]+) lock_wait_s=([\d.]+) sanitizer_s=([\d.]+)"
                         r"(?: prepare_s=([\d.]+))?")


# --- entries and ids ------------------------------------------------------------------------------------

@dataclass
class Entry:
    raw_name: str
    path: Path
    kind: str                       # folder | zip | tar | other
    student_id: str = ""
    lms: str = "plain"              # canvas | moodle | gradescope | plain
    notes: list[str] = field(default_factory=list)


def strip_archive(name: str) -> str:
    lower = name.lower()
    for suffix in ARCHIVES:
        if lower.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip(".-_")
    s = re.sub(r"-{2,}", "-", s)
    return s[:MAX_ID].rstrip(".-_") or "submission"


_CANVAS = re.compile(r"^(?P<login>[A-Za-z0-9]+)_(?:late_)?(?P<user>\d+)_(?P<sub>\d+)(?:_.*)?$", re.IGNORECASE)
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<pid>\d+)_assignsubmission_[a-z]+_?.*$", re.IGNORECASE)
_GRADESCOPE = re.compile(r"^submission_(?P<sub>\d+)$")


def read_gradescope_metadata(folder: Path) -> dict[str, str]:
    """submission_<id> -> the first submitter's SID (else e-mail user) from submission_metadata.yml.
    A small line parser: Gradescope's file is plain YAML with one ':submitters:' list per submission."""
    path = folder / "submission_metadata.yml"
    found: dict[str, str] = {}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return found
    fields: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        top = re.match(r"^(submission_\d+):\s*$", line)
        if top:
            current = top.group(1)
            continue
        m = re.match(r"^\s*-?\s*:(sid|email):\s*['\"]?([^'\"]*?)['\"]?\s*$", line)
        if current and m and m.group(2):
            fields.setdefault(current, {}).setdefault(m.group(1), m.group(2))
    for sub, f in fields.items():
        found[sub] = f.get("sid") or f["email"].split("@")[0]
    return found


def student_id(raw_name: str, gradescope: dict[str, str] | None = None) -> tuple[str, str]:
    """(id, lms) for an entry name (the rules are in the module docstring)."""
    stem = strip_archive(raw_name)
    m = _MOODLE.match(stem)
    if m:
        return slug(f"{m['name']}_{m['pid']}"), "moodle"
    m = _CANVAS.match(stem)
    if m:
        return slug(f"{m['login']}_{m['user']}"), "canvas"
    m = _GRADESCOPE.match(stem)
    if m:
        who = (gradescope or {}).get(stem)
        return slug(who) if who else slug(stem), "gradescope"
    return slug(stem), "plain"


def discover(folder: Path, skip: set[Path]) -> list[Entry]:
    """Every entry of SUBMISSIONS_DIR (junk and the batch's own output skipped), with unique ids."""
    gradescope = read_gradescope_metadata(folder)
    entries = []
    for p in sorted(folder.iterdir(), key=lambda q: q.name):
        if p.name in JUNK_NAMES or p.name.startswith(".") or p.name == "submission_metadata.yml":
            continue
        if p.resolve() in skip:
            continue
        lower = p.name.lower()
        kind = ("folder" if p.is_dir() else "zip" if lower.endswith(".zip")
                else "tar" if lower.endswith(ARCHIVES) else "other")
        sid, lms = student_id(p.name, gradescope)
        entries.append(Entry(p.name, p, kind, sid, lms))
    seen: dict[str, int] = {}
    for e in entries:
        n = seen.get(e.student_id, 0) + 1
        seen[e.student_id] = n
        if n > 1:
            base = e.student_id[: MAX_ID - 4]
            e.notes.append(f"id {e.student_id} is also another entry's: this one is {base}-{n}")
            e.student_id = f"{base}-{n}"
    return entries


# --- hashes and stamps ----------------------------------------------------------------------------------

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


_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and a rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)     # mkstemp makes 0600: give it the mode open() would
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- records --------------------------------------------------------------------------------------------

@dataclass
class Student:
    entry: Entry
    out: Path
    stamp: dict = field(default_factory=dict)
    outcome: str = "error"          # graded | not_graded | error
    flags: list[str] = field(default_factory=list)
    reused: bool = False
    error: str = ""
    results: dict | None = None
    gpu: str | None = None
    # phase -> [start, end] in seconds since the batch started; judge_phases: the judge's own split
    phases: dict[str, list[float]] = field(default_factory=dict)
    judge_phases: dict[str, float] = field(default_factory=dict)

    @property
    def results_path(self) -> Path:
        return self.out / "results.json"

    def record(self) -> dict:
        return {"student_id": self.entry.student_id, "raw_name": self.entry.raw_name, "kind": self.entry.kind,
                "lms": self.entry.lms, "notes": self.entry.notes, "outcome": self.outcome, "flags": self.flags,
                "reused": self.reused, "error": self.error, "gpu": self.gpu,
                "score": self.results["score"] if self.results else None,
                "phases": self.phases, "judge_phases": self.judge_phases}


def flags_of(results: dict) -> list[str]:
    seen: set[str] = set()
    status = results["build"]["status"]
    if status in ("layout_error", "compile_error"):
        seen.add(status)
    for c in results["cases"]:
        if c["status"] != "pass" and not (status == "layout_error" and c["status"] == "compile_error"):
            seen.add(c["status"])
    if results["outcome"] != "graded" or results.get("errors"):
        seen.add("internal_error")
    return [f for f in FLAG_ORDER if f in seen] + sorted(seen - set(FLAG_ORDER))


# --- progress -------------------------------------------------------------------------------------------

def fmt_duration(s: float) -> str:
    s = max(0, int(round(s)))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """A progress bar with an ETA on stderr: redrawn in place on a terminal, else a line per student."""

    def __init__(self, total: int, stream=sys.stderr, enabled: bool = True) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.tty = enabled and stream.isatty()
        self.start = time.monotonic()
        self.done = self.reused = self.compiling = self.judging = 0
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True) if self.tty else None
        if self._ticker:
            self._ticker.start()

    def eta(self) -> str:
        graded = self.done - self.reused
        left = self.total - self.done
        if left == 0:
            return "0:00"
        if graded == 0:
            return "?"
        return fmt_duration((time.monotonic() - self.start) / graded * left)

    def line(self) -> str:
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        return (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"({self.compiling} compiling, {self.judging} judging) "
                f"{fmt_duration(time.monotonic() - self.start)} elapsed, ETA {self.eta()}")

    def _draw(self) -> None:
        if self.tty:
            self.stream.write("\r" + self.line().ljust(100)[:120])
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self.lock:
                self._draw()

    def change(self, compiling: int = 0, judging: int = 0) -> None:
        with self.lock:
            self.compiling += compiling
            self.judging += judging
            self._draw()

    def finished(self, st: Student) -> None:
        with self.lock:
            self.done += 1
            self.reused += st.reused
            if not self.enabled:
                return
            score = st.results["score"] if st.results else None
            text = (f"{fmt_points(score['total'])}/{fmt_points(score['max_total'])}" if score else "not graded")
            msg = (f"[{self.done:>{len(str(self.total))}}/{self.total}] {st.entry.student_id}: {text}"
                   + (f" [{' '.join(st.flags)}]" if st.flags else "") + (" (reused)" if st.reused else "")
                   + (f" error: {st.error.splitlines()[0]}" if st.error else ""))
            if self.tty:
                self.stream.write("\r" + " " * 120 + "\r" + msg + "\n")
                self._draw()
            else:
                self.stream.write(f"{msg} (ETA {self.eta()})\n")
            self.stream.flush()

    def close(self) -> None:
        self._stop.set()
        if self._ticker:
            self._ticker.join()
        if self.tty:
            with self.lock:
                self.stream.write("\r" + self.line().ljust(100)[:120] + "\n")
                self.stream.flush()


# --- the batch ------------------------------------------------------------------------------------------

@dataclass
class Pool:
    """The judges of one GPU (or of the CPU, emulated)."""
    name: str                           # "0", "1", ... or "cpu"
    executor: ThreadPoolExecutor
    env: dict[str, str]
    lock_file: Path | None
    outstanding: int = 0


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

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    # pools ----------------------------------------------------------------------------------------------
    def make_pools(self) -> None:
        locks = self.args.out / "locks"
        if self.backend == "gpu":
            locks.mkdir(parents=True, exist_ok=True)
            for g in self.gpus:
                env = dict(os.environ, CUDA_VISIBLE_DEVICES=g)
                self.pools.append(Pool(g, ThreadPoolExecutor(self.args.judges_per_gpu, f"judge-gpu{g}"), env,
                                       locks / f"gpu{g}.lock"))
        else:
            self.pools.append(Pool("cpu", ThreadPoolExecutor(self.args.judges_per_gpu, "judge-cpu"),
                                   dict(os.environ), None))

    def pick_pool(self) -> Pool:
        with self.pools_lock:
            pool = min(self.pools, key=lambda p: p.outstanding)
            pool.outstanding += 1
            return pool

    # one student --------------------------------------------------------------------------------------------
    def reusable(self, st: Student) -> bool:
        """The stamp matches and the results are readable: nothing to grade again."""
        try:
            old = json.loads((st.out / "stamp.json").read_text())
        except (OSError, ValueError):
            return False
        if not isinstance(old, dict) or old.get("stamp") != st.stamp:
            return False
        try:
            st.results = load_results(st.results_path, validate=False)
        except ResultsError:
            return False
        missing = [f for f in self.args.formats if not (st.out / FILE_NAMES[f]).is_file()]
        if missing:
            write_exports(st.results, st.out, missing)
        st.reused = True
        st.outcome = st.results["outcome"]
        st.flags = flags_of(st.results)
        st.judge_phases = old.get("judge_phases", {})
        return True

    def prepare(self, st: Student) -> BuildResult | None:
        """Hash, reuse or unpack + compile. None: finished here (reused or failed)."""
        start = self.now()
        try:
            st.stamp = dict(self.stamp_base, submission_sha256=content_hash(st.entry.path))
        except OSError as exc:
            st.stamp = dict(self.stamp_base, submission_sha256=f"unreadable: {exc}")
        reuse = self.args.resume and self.reusable(st)
        st.phases["hash"] = [start, self.now()]
        if reuse:
            return None
        st.out.mkdir(parents=True, exist_ok=True)
        # nothing stale may pass for this run's results: the stamp goes first
        for name in ["stamp.json", "results.json", "build.json", "worker", "judge.log", *FILE_NAMES.values()]:
            (st.out / name).unlink(missing_ok=True)
        with self.cpu_slots:
            self.progress.change(compiling=1)
            try:
                t = self.now()
                sub = load_submission(st.entry.path, workdir=self.private)
                st.phases["unpack"] = [t, self.now()]
                with sub:
                    if sub.layout_error:
                        built = write_layout_error(st.out, sub.layout_error)
                    else:
                        t = self.now()
                        built = build(sub, self.recipe, st.out, 1, self.args.compile_timeout)
                        st.phases["compile"] = [t, self.now()]
            finally:
                self.progress.change(compiling=-1)
        shutil.rmtree(st.out / "obj", ignore_errors=True)
        if built.harness_errors:
            st.error = "; ".join(built.harness_errors) + f" (see {st.out / 'build.json'})"
            st.flags = ["internal_error"]
            return None
        return built

    def run_judge(self, st: Student, built: BuildResult, pool: Pool, queued_at: float) -> None:
        st.phases["queue"] = [queued_at, self.now()]
        st.gpu = pool.name if self.backend == "gpu" else None
        extra = ["--verbose"]
        if pool.lock_file:
            extra += ["--gpu-lock", str(pool.lock_file),
                      "--baseline-cache", str(pool.lock_file.with_name(f"baselines-gpu{pool.name}.json"))]
        cmd = judge_command(self.judge, built.worker, st.out, st.entry.student_id, st.entry.path, self.backend,
                            self.args.suite, self.args.hidden_suite, self.args.secret_file, self.args.budget_s,
                            self.args.max_n, extra)
        if self.setpriv:   # the judge dies with the batch (a killed batch leaves no judge behind)
            cmd = [self.setpriv, "--pdeathsig", "KILL", *cmd]
        # waits for other judges' timing are not in the judge's budget: allow them here
        timeout = self.args.budget_s * max(1, self.args.judges_per_gpu if pool.lock_file else 1) + JUDGE_GRACE_S
        t = self.now()
        self.progress.change(judging=1)
        slot = self.cpu_slots if self.backend == "emulate" else None
        try:
            if slot:
                slot.acquire()
            with open(st.out / "judge.log", "w") as log:
                judged = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        env=pool.env, timeout=timeout)
            rc: int | None = judged.returncode
        except subprocess.TimeoutExpired:
            rc = None
        except OSError as exc:
            rc = None
            st.error = f"cannot run the judge {self.judge}: {exc}"
        finally:
            if slot:
                slot.release()
            self.progress.change(judging=-1)
        end = self.now()
        st.phases["judge"] = [t, end]
        log_text = (st.out / "judge.log").read_text(errors="replace") if (st.out / "judge.log").is_file() else ""
        m = _PHASE_LINE.search(log_text)
        if m:
            f, tm, w, s, p = (float(g or 0) for g in m.groups())
            st.judge_phases = {"correctness": f, "prepare": p, "timing": tm, "lock_wait": w, "sanitizer": s}
            st.phases["correctness"] = [t, round(t + f + tm + w, 3)]
            st.phases["sanitizer"] = [round(max(t, end - s), 3), end]
        if rc is None and not st.error:
            st.error = f"the judge ran past {timeout:g} s and was stopped"
        elif rc is not None and rc not in (0, 1, 3):
            st.error = f"the judge exited with status {rc}" + (" (killed by a signal?)" if rc < 0 else "")
        if st.error or not st.results_path.is_file():
            st.error = st.error or f"the judge exited {rc} and wrote no results.json"
            st.error += f" (see {st.out / 'judge.log'})"
            st.flags = ["internal_error"]
            return
        try:
            st.results = load_results(st.results_path)
        except ResultsError as exc:
            st.error = f"the judge wrote an unusable results.json: {exc}"
            st.flags = ["internal_error"]
            return
        t = self.now()
        write_exports(st.results, st.out, self.args.formats)
        st.phases["export"] = [t, self.now()]
        st.outcome = st.results["outcome"]
        st.flags = flags_of(st.results)
        if st.outcome == "graded":
            # the stamp last: it marks the student as done for --resume
            write_atomic(st.out / "stamp.json", json.dumps({"stamp": st.stamp, "finished_at": time.time(),
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
        judged: list[Future] = []
        judged_lock = threading.Lock()

        def guarded(st: Student, fn, *a) -> None:
            try:
                fn(st, *a)
            except Exception as exc:  # noqa: BLE001 - one submission never stops the batch
                st.error = f"internal error while grading: {exc!r}"
                st.flags = ["internal_error"]
                self.finish(st)

        def judge_step(st: Student, built: BuildResult, pool: Pool, queued_at: float) -> None:
            try:
                self.run_judge(st, built, pool, queued_at)
            finally:
                with self.pools_lock:
                    pool.outstanding -= 1
            self.finish(st)

        def prepare_step(st: Student) -> None:
            built = self.prepare(st)
            if built is None:
                self.finish(st)
                return
            pool = self.pick_pool()
            fut = pool.executor.submit(guarded, st, judge_step, built, pool, self.now())
            with judged_lock:
                judged.append(fut)

        try:
            with ThreadPoolExecutor(self.args.jobs, "prepare") as compile_pool:
                prepared = [compile_pool.submit(guarded, st, prepare_step) for st in students]
                for f in prepared:
                    f.result()
            for pool in self.pools:
                pool.executor.shutdown(wait=True)
        finally:
            for pool in self.pools:
                pool.executor.shutdown(wait=False, cancel_futures=True)
            self.progress.close()
            shutil.rmtree(self.private, ignore_errors=True)
        return students


# --- outputs --------------------------------------------------------------------------------------------

def perf_slots(students: list[Student]) -> list[str]:
    return [s for s in SLOTS if any(st.results and st.results["slots"].get(s, {}).get("perf_max_points", 0)
                                    for st in students)]


def _safe_cell(text: str) -> str:
    """Spreadsheets run cells that start with = + - @ as formulas: a file name must not."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def gradebook_rows(students: list[Student], out: Path, threshold: float | None) -> tuple[list[str], list[dict]]:
    perf = perf_slots(students)
    columns = (["student_id", "raw_name", "outcome", "flags", *SLOTS, *(f"{s}_perf" for s in perf),
                "perf_points", "points", "total", "max_total", "percent", "meets_threshold", "cases_passed",
                "cases", "backend", "run", "seconds", "results"])
    rows = []
    for st in sorted(students, key=lambda s: s.entry.student_id):
        r = st.results
        row = {c: "" for c in columns}
        row.update(student_id=st.entry.student_id, raw_name=_safe_cell(st.entry.raw_name), outcome=st.outcome,
                   flags=" ".join(st.flags), run="reused" if st.reused else "graded")
        if r is not None:
            sc = r["score"]
            for s in SLOTS:
                if s in r["slots"]:
                    row[s] = fmt_points(r["slots"][s]["points"])
            for s in perf:
                if s in r["slots"]:
                    row[f"{s}_perf"] = fmt_points(round(r["slots"][s]["perf_points"], 3))
            pct = 100 * sc["total"] / sc["max_total"] if sc["max_total"] else 0.0
            row.update(perf_points=fmt_points(round(sc["perf_points"], 3)), points=fmt_points(sc["points"]),
                       total=fmt_points(round(sc["total"], 3)), max_total=fmt_points(sc["max_total"]),
                       percent=f"{pct:.1f}", cases_passed=sum(v["passed"] for v in r["slots"].values()),
                       cases=len(r["cases"]), backend=r["backend"], seconds=f"{r['duration_s']:.1f}",
                       results=st.results_path.relative_to(out).as_posix())
            if threshold is not None and st.outcome == "graded":
                row["meets_threshold"] = "yes" if pct + 1e-9 >= 100 * threshold else "no"
        rows.append(row)
    return columns, rows


def write_gradebook(path: Path, columns: list[str], rows: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_atomic(path, buf.getvalue())


def union_length(intervals: list[list[float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def phase_totals(students: list[Student], n_gpus: int) -> dict[str, dict[str, float]]:
    """Per phase: sum of every student's time in it, and its wall time (the union of the intervals).
    Timing runs inside the judges, one at a time per GPU: its wall is its sum over the GPUs.
    Students reused from an earlier run are not counted."""
    students = [st for st in students if not st.reused]
    out = {}
    for phase in PHASES:
        if phase in ("prepare", "timing", "lock_wait"):
            s = sum(st.judge_phases.get(phase, 0.0) for st in students)
            out[phase] = {"sum_s": round(s, 3), "wall_s": round(s / max(1, n_gpus), 3) if phase == "timing" else None}
            continue
        intervals = [st.phases[phase] for st in students if phase in st.phases]
        if phase in ("correctness", "sanitizer"):
            s = sum(st.judge_phases.get(phase, 0.0) for st in students)
        else:
            s = sum(b - a for a, b in intervals)
        out[phase] = {"sum_s": round(s, 3), "wall_s": round(union_length(intervals), 3)}
    return out


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
    parser.add_argument("submissions", type=Path, help="folder with one entry (folder, .zip, .tar.gz) per student")
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
    parser.add_argument("--max-n", type=int, default=None, help="grade only cases with n <= N (4194305: the emulation cap)")
    parser.add_argument("--budget-s", type=float, default=900, help="each judge's time budget (default: 900)")
    parser.add_argument("--compile-timeout", type=float, default=120, help="seconds per compiled file (default: 120)")
    parser.add_argument("--formats", default="all",
                        help="exports per student: all, none, or a comma list of gradescope,prairielearn,autolab,junit")
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                        help="skip students whose stamp matches this run (default: on)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="a passing fraction of max_total (0..1): fills gradebook column meets_threshold")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    try:
        args.formats = parse_formats(args.formats)
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

    def fail(code: int, msg: str) -> int:
        print(f"batch: error: {msg}", file=sys.stderr)
        return code

    if not args.submissions.is_dir():
        return fail(EXIT_BAD_INPUT, f"{args.submissions} is not a folder")
    for suite in [*args.suite, *args.hidden_suite]:
        if not suite.is_file():
            return fail(EXIT_BAD_INPUT, f"suite {suite} not found")
    if args.secret_file and not args.secret_file.is_file():
        return fail(EXIT_BAD_INPUT, f"secret file {args.secret_file} not found")
    try:
        toolchain, judge, backend, recipe = load_grader(args.build_dir, args.backend)
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
    entries = discover(args.submissions, {args.out})
    if not entries:
        return fail(EXIT_BAD_INPUT, f"{args.submissions} holds no submissions")
    if not args.quiet:
        where = f"{len(gpus)} GPU(s) {','.join(gpus)}, {args.judges_per_gpu} judge(s) each" if gpus else \
            f"{args.judges_per_gpu} emulated judge(s)"
        print(f"batch: {len(entries)} submission(s), backend {backend}, {args.jobs} CPU slot(s), {where}",
              file=sys.stderr)

    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    batch = Batch(args, toolchain, recipe, backend, gpus)
    students = batch.run(entries)
    wall = time.monotonic() - batch.t0

    columns, rows = gradebook_rows(students, args.out, args.threshold)
    write_gradebook(args.out / "gradebook.csv", columns, rows)
    totals = phase_totals(students, len(gpus))
    record = {"started_at": started_at, "wall_s": round(wall, 3), "backend": backend, "gpus": gpus,
              "jobs": args.jobs, "judges_per_gpu": args.judges_per_gpu,
              "suites": [str(s) for s in args.suite], "hidden_suites": [str(s) for s in args.hidden_suite],
              "max_n": args.max_n, "budget_s": args.budget_s, "threshold": args.threshold,
              "stamp": batch.stamp_base, "phase_totals": totals,
              "students": [st.record() for st in sorted(students, key=lambda s: s.entry.student_id)]}
    write_atomic(args.out / "batch.json", json.dumps(record, indent=1) + "\n")
    from batch_report import render_report  # noqa: E402 - only needed once everything is graded
    write_atomic(args.out / "report.html", render_report(students, record, columns, rows))

    bad = [st for st in students if st.outcome != "graded"]
    if not args.quiet:
        reused = sum(st.reused for st in students)
        print(f"batch: {len(students)} submission(s) in {fmt_duration(wall)} ({reused} reused, {len(bad)} not graded)",
              file=sys.stderr)
        print(f"batch: {args.out / 'gradebook.csv'}\nbatch: {args.out / 'report.html'}", file=sys.stderr)
        for st in bad:
            print(f"batch: NOT GRADED {st.entry.student_id} ({st.entry.raw_name}): {st.error or 'internal error'}",
                  file=sys.stderr)
    return EXIT_INTERNAL if bad else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
