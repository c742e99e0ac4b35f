"""What the platform entrypoints share: lay a submission out for grade.py, run grade.py under a
deadline, filter suites by slot, and write result files atomically.

Standard library and scangrade.vocab only (grade.py runs as a separate process): the entrypoints
must still write a result when the rest of the grader is missing or broken (their fallback paths).

Layouts (stage_submission), in this order:

    student/ inside the upload        only student/ is copied (a whole repository may be uploaded)
    one archive and nothing else       the archive itself goes to grade.py, which unpacks it safely
    .cu/.cuh files at the top level    the top-level files are copied into student/ (Gradescope and
                                       PrairieLearn uploads of hillis_steele.cu, ... land there);
                                       folders beside them are ignored, with a note
    anything else                      copied as it is: grade.py finds one-folder-down student/ or
                                       says precisely what is wrong (layout_error)

Links are copied as links, never followed: grade.py refuses those that leave the submission.

What student code must not read (make_private, exposed_to_student): inside the platforms' containers
Docker's default seccomp profile usually keeps bubblewrap out, and the sandbox falls back to an
unprivileged uid that sees every file "others" may read. The entrypoints make the course's private
files (hidden suites, the secret, the question's and course's files) the grader's alone before
grading, and refuse to grade hidden suites that student code could still read.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..files import write_atomic
from ..vocab import ARCHIVE_SUFFIXES, JUNK_NAMES, SLOTS

KILL_GRACE_S = 10


def is_junk(name: str) -> bool:
    return name in JUNK_NAMES or name.startswith("._")


@dataclass
class Staged:
    """What to hand grade.py, and what the student should be told about how it was laid out."""

    path: Path
    notes: list[str] = field(default_factory=list)


def _copy_entry(src: Path, dst: Path) -> None:
    """Copy a file or folder; links are recreated as links, never followed."""
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)


def stage_submission(upload: Path, stage: Path, name: str = "submission", top_level_note: bool = True) -> Staged:
    """Lay out an upload folder (Gradescope's /autograder/submission, PrairieLearn's /grade/student)
    under `stage` in a form grade.py accepts. Never raises for odd layouts: grade.py judges them.
    top_level_note=False: files at the top level are the platform's own layout (PrairieLearn always
    puts them there), so the student is not told about it."""
    root = stage / name
    entries = sorted(p for p in upload.iterdir() if not is_junk(p.name)) if upload.is_dir() else []
    student = upload / "student"
    if student.is_dir() and not student.is_symlink():
        root.mkdir(parents=True)
        _copy_entry(student, root / "student")
        others = [p.name for p in entries if p.name != "student"]
        notes = [f"graded student/ only (also found: {', '.join(others[:5])}{', ...' if len(others) > 5 else ''})"] \
            if others else []
        return Staged(root, notes)
    if len(entries) == 1 and entries[0].is_file() and not entries[0].is_symlink() \
            and entries[0].name.lower().endswith(ARCHIVE_SUFFIXES):
        return Staged(entries[0], [f"unpacked {entries[0].name}"])
    if any((p.is_file() or p.is_symlink()) and p.suffix.lower() in (".cu", ".cuh") for p in entries):
        (root / "student").mkdir(parents=True)
        files = [p for p in entries if p.is_symlink() or not p.is_dir()]
        for p in files:
            _copy_entry(p, root / "student" / p.name)
        notes = ["your files were at the top level of the upload: graded them as student/"] if top_level_note else []
        folders = [p.name + "/" for p in entries if p not in files]
        if folders:
            notes.append(f"ignored the folder(s) {', '.join(folders[:5])}: only the top-level files were graded")
        return Staged(root, notes)
    root.mkdir(parents=True)
    for p in entries:
        _copy_entry(p, root / p.name)
    return Staged(root)


# --- suites ---------------------------------------------------------------------------------------

def filter_suite(doc: dict, slots: list[str]) -> dict | None:
    """A copy of a suite document with only the given slots' cases and performance points, or None
    when no case is left. Seeds and ids are untouched, so inputs stay the same."""
    out = dict(doc)
    out["cases"] = [c for c in doc.get("cases", []) if c.get("slot") in slots]
    if not out["cases"]:
        return None
    perf = doc.get("performance")
    if isinstance(perf, dict) and isinstance(perf.get("points"), dict):
        out["performance"] = dict(perf, points={s: p for s, p in perf["points"].items() if s in slots})
    return out


def write_filtered_suites(paths: list[Path], slots: list[str] | None, into: Path) -> list[Path]:
    """The suites to grade with: the files themselves, or slot-filtered copies under `into` (same
    file names, so results name the same suites). Suites left without a case are dropped."""
    if not slots:
        return list(paths)
    unknown = [s for s in slots if s not in SLOTS]
    if unknown:
        raise ValueError(f"unknown slot {unknown[0]!r}: choose from {', '.join(SLOTS)}")
    kept = []
    for i, path in enumerate(paths):
        doc = json.loads(path.read_text())
        filtered = filter_suite(doc, slots)
        if filtered is None:
            continue
        target = into / str(i) / path.name
        # the grader's alone (0700): inside a platform's container, without namespaces, the sandbox's
        # uid can traverse the work folder above this one (a hidden suite's cases are not its to read)
        into.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(into, 0o700)
        target.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(filtered, indent=1))
        kept.append(target)
    return kept


# --- what student code must not read ------------------------------------------------------------------

def make_private(paths: list[Path]) -> None:
    """Make the grader's private files its own: each folder 0700 (nothing under it reachable), each
    file 0600. The judge and grade.py run as the grader and read them; student code runs as another
    uid (or in bubblewrap, where they are not bound). Missing paths and paths that cannot be changed
    (not ours, a read-only mount) are left as they are: exposed_to_student says what that leaves open."""
    for path in paths:
        try:
            os.chmod(path, 0o700 if path.is_dir() else 0o600)
        except OSError:
            pass


def readable_by(path: Path, uid: int, gid: int) -> bool:
    """Whether a process of this uid, whose only group is gid, can read `path` (a file) or enter it (a
    folder) by the permission bits: search on every folder above it, then read (a file) or search (a
    folder) on it. A missing path is not readable. ACLs are not looked at (the platforms' trees have none)."""
    try:
        real = Path(os.path.realpath(path))
        chain = [*reversed(real.parents), real]
        for i, p in enumerate(chain):
            st = os.stat(p)
            last = i == len(chain) - 1
            want = 0o4 if last and not stat.S_ISDIR(st.st_mode) else 0o1
            if st.st_uid == uid:
                bits = (st.st_mode >> 6) & 0o7
            elif st.st_gid == gid:
                bits = (st.st_mode >> 3) & 0o7
            else:
                bits = st.st_mode & 0o7
            if not bits & want:
                return False
    except OSError:
        return False
    return True


def sandbox_isolation(build_dir: Path) -> dict | None:
    """What the sandbox gives student code on this machine (`scangrade_sandbox --probe`: results.json's
    "isolation" as grade.py's default `--sandbox auto` would have it), or None when the build names no
    launcher or the probe fails."""
    toolchain = read_json(Path(build_dir) / "grading" / "toolchain.json") or {}
    launcher = toolchain.get("sandbox")
    if not isinstance(launcher, str) or not launcher:
        return None
    try:
        r = subprocess.run([launcher, "--probe"], capture_output=True, text=True, timeout=60)
        iso = json.loads(r.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return iso if isinstance(iso, dict) else None


def exposed_to_student(paths: list[Path], isolation: dict | None) -> list[Path]:
    """The private paths student code could read under this isolation: none in bubblewrap (a run sees
    only its own paths bound), those its uid can read after the uid drop (bubblewrap kept out, the
    grader root), every one when it keeps the grader's uid without namespaces. Unknown isolation (no
    launcher: grade.py cannot grade either) exposes nothing."""
    if isolation is None or isolation.get("sandboxed"):
        return []
    uid = isolation.get("uid") if isolation.get("uid_dropped") else None
    if not isinstance(uid, int) or isinstance(uid, bool):
        return [p for p in paths if p.exists()]
    return [p for p in paths if readable_by(p, uid, uid)]   # the sandbox sets its gid to the uid


# --- running grade.py -------------------------------------------------------------------------------

@dataclass
class GradeRun:
    returncode: int | None          # None: not run, or stopped at the deadline
    output: str                     # stdout and stderr together
    seconds: float
    timed_out: bool = False
    error: str | None = None        # why it could not run

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.output.strip().splitlines()[-lines:])


def run_grade(cmd: list[str], timeout_s: float, log: Path | None = None) -> GradeRun:
    """Run grade.py (cmd) in its own process group; at the deadline stop the group (SIGTERM, then
    SIGKILL). Output is captured (and written to `log`) and echoed to our stdout."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError as exc:
        return GradeRun(None, "", time.monotonic() - start, error=f"cannot run {cmd[0]}: {exc}")
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=KILL_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        out, _ = proc.communicate()
    text = out.decode("utf-8", errors="replace")
    if log is not None:
        try:
            log.write_text(text)
        except OSError:
            pass
    sys.stdout.write(text)
    sys.stdout.flush()
    return GradeRun(None if timed_out else proc.returncode, text, time.monotonic() - start, timed_out=timed_out)


def grade_command(grade_py: Path, submission: Path, *, build_dir: Path, out: Path, backend: str,
                  formats: str, suites: list[Path], hidden_suites: list[Path], secret_file: Path | None,
                  max_n: int | None, budget_s: float) -> list[str]:
    cmd = [sys.executable, str(grade_py), str(submission), "--build-dir", str(build_dir), "--out", str(out),
           "--backend", backend, "--formats", formats, "--budget-s", f"{budget_s:g}"]
    for s in suites:
        cmd += ["--suite", str(s)]
    for s in hidden_suites:
        cmd += ["--hidden-suite", str(s)]
    if hidden_suites and secret_file is not None:
        cmd += ["--secret-file", str(secret_file)]
    if max_n is not None:
        cmd += ["--max-n", str(max_n)]
    return cmd


# --- files ------------------------------------------------------------------------------------------

def write_json_atomic(path: Path, doc: dict) -> None:
    """Write JSON so that a reader never sees half a file (files.write_atomic)."""
    write_atomic(path, json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def read_json(path: Path) -> dict | None:
    """A JSON object from a file, or None when missing, unreadable or not an object."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def fault_message(run: GradeRun | None, grade_py: Path, where: str) -> tuple[str, str]:
    """(headline, details) for a grading run that produced no usable export. rc 2 is the course's
    configuration (a malformed suite, a missing secret file); everything else is the grader's fault.
    Neither is the student's."""
    if run is None or run.error:
        head = "The grader could not start (internal error, not your fault): please report it. This score is not final."
        detail = run.error if run and run.error else f"{grade_py} is missing"
    elif run.timed_out:
        head = (f"The grader did not finish within {where}'s time limit (internal error, not your fault): "
                "please report it. This score is not final.")
        detail = run.tail()
    elif run.returncode == 2:
        head = ("The autograder is misconfigured (a suite or secret file of the course is missing or malformed; "
                "not your fault): please tell your instructor. This score is not final.")
        detail = run.tail()
    else:
        head = (f"The grader failed (internal error, exit status {run.returncode}; not your fault): "
                "please report it. This score is not final.")
        detail = run.tail()
    return head, detail
