"""The resources one local batch shares out among its students, and the order it grades them in.

Seats: the judge seats of a pool, given longest-expected-first (expected_judge_s). claim_sandbox_uids:
blocks of sandbox uids that no other batch on the machine holds. make_case_cache: the folder where the
judges share each case's input and oracle output. Progress: the bar and the line per finished student.
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from tqdm import tqdm

from .gradebook import Student
from .results import fmt_points

# Judges running side by side get a sandbox uid each (when run as root): RLIMIT_NPROC counts the
# processes of a uid, so one submission's fork bomb must not use up another's allowance, and a
# sandbox's end kills every process of its uid. Batches on one machine (Slurm tasks sharing a node)
# claim blocks of uids through a lock file each, held while they run.
SANDBOX_UID_BASE = 61000
# Judges per GPU by default: more judges on one GPU grade a class no faster, since every process
# that uses the GPU adds context switches and waits in the driver (one H100, 48 submissions:
# 8 judges 82 s, 12 judges 95 s, 16 judges 103 s; grading/docs/class.md, "Benchmark").
JUDGES_PER_GPU = 8
UID_BLOCK, UID_BLOCKS = 256, 16          # 61000..65095, below nobody (65534)
UID_LOCK_DIRS = (Path("/run/lock"), Path("/var/lock"), Path(tempfile.gettempdir()))
# The case cache (the judge's --case-cache). These mirror the C++ side; test_cross_language.py reads
# the C++ values and compares.
SHM = Path("/dev/shm")
CASE_CACHE_PREFIX = "scangrade-cases-"   # not "scangrade-<digits>-": a judge's channel sweep leaves it alone
SHM_KEEP_FREE = 8 << 30        # what the judges want free in /dev/shm for their channels (judge/channel.cpp channel_base)
CASE_HEADER_BYTES = 64         # a cache file's header (judge/case_data.cpp Header)
CASE_ELEMENT_BYTES = 4 + 8     # per element: the input (int32 or float) and the expected double
EMULATION_MAX_N = (1 << 22) + 1   # the judge's cap on the emulate backend (kEmulationMaxN, scangrade/emulated_run.h)


# --- the case cache ------------------------------------------------------------------------------------

def case_data_bytes(suites: list[Path], max_n: int | None) -> int:
    """The most the case cache holds for these suites: per case a header, the input (4 bytes an
    element) and the expected values (8)."""
    total = 0
    for path in suites:
        try:
            cases = json.loads(Path(path).read_text()).get("cases", [])
        except (OSError, ValueError, AttributeError):
            continue   # the preflight judge has said what is wrong with it
        for c in cases if isinstance(cases, list) else []:
            n = c.get("n") if isinstance(c, dict) else None
            if isinstance(n, int) and (max_n is None or n <= max_n):
                total += CASE_HEADER_BYTES + CASE_ELEMENT_BYTES * n
    return total


def sweep_stale_case_caches(shm: Path = SHM) -> None:
    """Removes this user's case caches left in /dev/shm by batches that are gone (killed), as the
    judges sweep their channel folders (judge/channel.cpp sweep_stale_channels): a folder named after
    a pid that no longer runs."""
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


# --- the queue's order and the seats ---------------------------------------------------------------------

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


# --- sandbox uids ---------------------------------------------------------------------------------------

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
