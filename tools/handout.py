#!/usr/bin/env python3
"""Build the student handout: a deterministic .tar.gz students unpack, fill in and `make test`.

What goes in is an allow-list (ALLOW below), never "everything but ...": the four starter files,
the contract header and the harness `make test` needs, the CPU emulation backend and its per-machine
cache (harness/cmake/), the public suite, the real CMakeLists.txt (it builds only the student targets
and the emulation grader when reference/ is absent), make test's driver tools/student_test.py and
the starter files again as harness/starter/ (they stand in for a slot that does not compile), the
grader for `make grade` on the emulation backend (grading/grade.py, the Python package's modules it
imports, the judge, the emulated worker, the protocol, the sandbox launcher, the policy rules), and
from tools/handout/ a student Makefile, README and deps.sh (checks, installs nothing). Reference
solutions, the gallery, the grader's and the emulator's tests (their kernels solve slots), the
fidelity notes, the platform bundles, hidden suites and the suite generator stay out, and the build
refuses to write the tarball when

  * a file in it lies under reference/, grading/gallery/, grading/tests/, grading/judge/tests/,
    grading/worker/tests/, grading/fidelity/, grading/platforms/ or the emulator's tests, or
    declares `namespace scangrade::reference`,
  * a file in it looks like a hidden suite,
  * a starter file in student/ no longer calls not_implemented() (a solved file would ship),
  * an allow-list entry matches nothing (a file was renamed: update ALLOW).

Two builds from the same sources give identical bytes: sorted entries, one mtime for every entry
(SOURCE_DATE_EPOCH, else the commit time of HEAD, else 0), uid/gid 0, no user names, modes 0644 or
0755, and a gzip header without name or time.

    python3 tools/handout.py --out scangrade-handout.tar.gz          from the working tree
    python3 tools/handout.py --out h.tar.gz --rev v1.0               from a commit (git)
    python3 tools/handout.py --list                                  print the file list only
    python3 tools/handout.py --out h.tar.gz --grader-repo ORG/REPO --grader-ref v1.2
                                       ships .github/workflows/feedback.yml (student feedback CI) pinned to that grader
    python3 tools/handout.py --feedback-workflow feedback.yml --grader-repo ORG/REPO --grader-ref v1.2
                                       writes only that workflow (for repositories made before)

The feedback workflow (template tools/handout/feedback.yml) checks out the grader from ORG/REPO at REF,
never from the student's repository, grades only student/*.cu and *.cuh with the public suite, and
labels its summary "feedback, not the grade" (grading/platforms/README.md, "Student feedback
workflow"). Without --grader-repo (or $SCANGRADE_GRADER_REPO) the handout ships no workflow.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import grader_package  # noqa: E402,F401  (the grader's package, grading/scangrade; sys.path left alone)
from scangrade.vocab import SLOTS  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "handout"
PREFIX = "scangrade-handout"

# (pattern relative to the repository, why it ships). `*` does not cross a `/`; `**/` is any depth.
ALLOW: list[tuple[str, str]] = [
    ("student/*.cu", "starter files (the four slots)"),
    ("harness/include/scangrade/*.h", "contract header (student_api.h) and harness headers"),
    ("harness/src/*.cpp", "harness: suites, inputs, oracle, checks, device and emulated runs"),
    ("harness/tests/kernel_tests.cpp", "the kernel tests `make test` runs"),
    ("harness/tests/bind_student.cpp", "binds the kernel tests to student/"),
    ("harness/tests/default_suite.cpp", "the suite the kernel tests run by default"),
    ("harness/cmake/*.cmake", "the emulation runtime built once per machine and reused (SCANGRADE_CACHE)"),
    ("harness/emulation/CMakeLists.txt", "CPU emulation backend"),
    ("harness/emulation/README.md", "CPU emulation backend"),
    ("harness/emulation/rewrite.py", "CPU emulation backend"),
    ("harness/emulation/include/**/*.h", "CPU emulation backend"),
    ("harness/emulation/src/*", "CPU emulation backend"),
    ("testcases/public.json", "the public suite"),
    ("CMakeLists.txt", "the build (student targets only without reference/)"),
    ("tools/student_test.py", "make test's driver: the grader's layout rules, one build per slot, the tests"),
    ("tools/submit.py", "make submit: the archive to hand in, read back with the grader's reader"),
    ("tools/step.sh", "the Makefile's stages in one line each, their output in build/logs/"),
    ("tools/fetch_debs.sh", "tools/deps.sh: Debian's header packages into .deps/root without root"),
    # make grade: the grader itself, emulation backend only (CMake without reference/ builds no GPU
    # worker), the same judge, worker, sandbox launcher and Python as the instructor's
    ("grading/grade.py", "make grade: the grader's command line"),
    ("grading/grader.cmake", "make grade: builds the judge, the sandbox launcher and the emulated worker"),
    ("grading/policy_rules.json", "make grade: the grader's forbidden calls and headers"),
    ("grading/results.schema.json", "make grade: results.json's schema"),
    ("grading/judge/*.cpp", "make grade: the judge"),
    ("grading/judge/*.h", "make grade: the judge"),
    ("grading/protocol/*.cpp", "make grade: the judge-worker protocol"),
    ("grading/protocol/*.h", "make grade: the judge-worker protocol"),
    ("grading/sandbox/*", "make grade: the sandbox launcher (falls back without bubblewrap)"),
    ("grading/worker/worker_main.cpp", "make grade: the worker that runs the student's slots"),
    ("grading/worker/policy_*", "make grade: the run-time policy monitor"),
    ("grading/scangrade/*.py", "make grade: the grader's Python (layout, build, judge, exports, feedback.html)"),
    ("grading/scangrade/platforms/*.py", "make grade: the exporters' platform formats"),
    ("requirements.txt", "the grader's Python packages for batch grading (make grade and feedback.html need none)"),
    ("tools/grader_package.py", "lets student_test.py and submit.py import the grader's package (grading/scangrade)"),
]
# grading/scangrade modules make grade never imports (a class, a cluster, repositories, the gallery)
NOT_SHIPPED = ("grading/scangrade/batch.py", "grading/scangrade/batch_report.py", "grading/scangrade/gallery.py",
               "grading/scangrade/gradebook.py", "grading/scangrade/lms.py", "grading/scangrade/repos.py",
               "grading/scangrade/slurm.py", "grading/scangrade/batch_class.py", "grading/scangrade/batch_local.py",
               "grading/scangrade/batch_seats.py", "grading/scangrade/batch_slurm.py")
# handout path -> repository file shipped under another name (the same bytes: one source)
SHIPPED_AS: dict[str, tuple[str, str]] = {
    **{f"harness/starter/{slot}.cu": (f"student/{slot}.cu", "starter file: stands in for a slot that does not compile")
       for slot in SLOTS},
}
# handout path -> template under tools/handout/
GENERATED: dict[str, str] = {
    "Makefile": "Makefile.student",
    "README.md": "README.student.md",
    "tools/deps.sh": "deps.sh",
}
# handout path -> text made here
GENERATED_TEXT: dict[str, str] = {}
FORBIDDEN_TEXT = b"namespace scangrade::reference"
# never ships: the reference solutions, the gallery (complete and near-complete submissions), the
# tests and fidelity notes (their kernels and fixtures solve slots), the platforms' bundles
FORBIDDEN_DIRS = ("reference/", "grading/gallery/", "grading/tests/", "grading/judge/tests/", "grading/worker/tests/",
                  "grading/fidelity/", "grading/platforms/", "harness/emulation/tests/")

FEEDBACK_TEMPLATE = "feedback.yml"
FEEDBACK_PATH = ".github/workflows/feedback.yml"
GITHUB_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
GIT_REF = re.compile(r"^[A-Za-z0-9_./-]+$")


class HandoutError(Exception):
    """The handout cannot be built as specified; the message says what to fix."""


@dataclass(frozen=True)
class Entry:
    path: str           # inside the handout, relative to PREFIX
    data: bytes
    executable: bool
    why: str


# --- sources: the working tree or a git commit ------------------------------------------------

class WorkTree:
    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self) -> list[str]:
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            for f in filenames:
                p = Path(dirpath, f)
                if p.is_file() and not p.is_symlink():
                    out.append(p.relative_to(self.root).as_posix())
        return sorted(out)

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def executable(self, path: str) -> bool:
        return os.access(self.root / path, os.X_OK)


class GitRev:
    def __init__(self, root: Path, rev: str) -> None:
        self.root, self.rev = root, rev
        listing = git(root, "ls-tree", "-r", "--full-tree", rev).decode()
        self.modes: dict[str, str] = {}
        for line in listing.splitlines():
            meta, path = line.split("\t", 1)
            mode, kind, _ = meta.split()
            if kind == "blob" and mode != "120000":  # no symlinks
                self.modes[path] = mode

    def files(self) -> list[str]:
        return sorted(self.modes)

    def read(self, path: str) -> bytes:
        return git(self.root, "show", f"{self.rev}:{path}")

    def executable(self, path: str) -> bool:
        return self.modes[path] == "100755"


def git(root: Path, *args: str) -> bytes:
    try:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                              timeout=60).stdout
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        detail = getattr(e, "stderr", b"") or b""
        raise HandoutError(f"git {' '.join(args)} failed: {detail.decode(errors='replace').strip() or e}") from e


def default_mtime(root: Path) -> int:
    """SOURCE_DATE_EPOCH, else the commit time of HEAD, else 0: the same for every build of a commit."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        return int(os.environ["SOURCE_DATE_EPOCH"])
    try:
        return int(git(root, "log", "-1", "--format=%ct", "HEAD").decode().strip() or 0)
    except (HandoutError, ValueError):
        return 0


# --- selection ----------------------------------------------------------------------------------

def matches(path: str, pattern: str) -> bool:
    """Glob where `*` stays inside one folder and `**/` spans any number of folders (or none)."""
    if "**/" in pattern:
        head, tail = pattern.split("**/", 1)
        if not path.startswith(head):
            return False
        rest = path[len(head):].split("/")
        return any(matches("/".join(rest[i:]), tail) for i in range(len(rest)))
    parts, pparts = path.split("/"), pattern.split("/")
    return len(parts) == len(pparts) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pparts))


def feedback_workflow(grader_repo: str, grader_ref: str, runs_on: list[str] | None = None) -> str:
    """The student feedback workflow, pinned to grader_repo at grader_ref (a tag or a commit sha: a
    branch moves under the students' feet). runs_on: the default runner labels (ubuntu-latest)."""
    if not GITHUB_REPO.match(grader_repo or ""):
        raise HandoutError(f"--grader-repo must be OWNER/REPOSITORY on GitHub, not {grader_repo!r}")
    if not GIT_REF.match(grader_ref or "") or grader_ref.startswith("-") or ".." in grader_ref:
        raise HandoutError(f"--grader-ref must be a tag, branch or commit sha, not {grader_ref!r}")
    labels = runs_on or ["ubuntu-latest"]
    if not all(re.fullmatch(r"[A-Za-z0-9_.-]+", l) for l in labels):
        raise HandoutError(f"--runs-on: runner labels are letters, digits, - _ . only: {labels}")
    text = (TEMPLATES / FEEDBACK_TEMPLATE).read_text()
    runs_json = json.dumps(labels[0] if len(labels) == 1 else labels, separators=(",", ":"))
    for key, value in (("@GRADER_REPO@", grader_repo), ("@GRADER_REF@", grader_ref),
                       ("@RUNS_ON_JSON@", runs_json), ("@RUNS_ON@", ", ".join(labels))):
        text = text.replace(key, value)
    return text


def collect(source, feedback: str | None = None) -> list[Entry]:
    files = source.files()
    entries: dict[str, Entry] = {}
    for pattern, why in ALLOW:
        hits = [f for f in files if matches(f, pattern) and not f.endswith((".pyc", ".o", ".a")) and f not in NOT_SHIPPED]
        if not hits:
            raise HandoutError(f"allow-list entry {pattern!r} matches no file: update ALLOW in tools/handout.py")
        for f in hits:
            entries.setdefault(f, Entry(f, source.read(f), source.executable(f), why))
    for path, (origin, why) in SHIPPED_AS.items():
        if origin not in files:
            raise HandoutError(f"{origin} (shipped as {path}) is missing: update SHIPPED_AS in tools/handout.py")
        entries[path] = Entry(path, source.read(origin), source.executable(origin), f"{why} ({origin})")
    for path, template in GENERATED.items():
        t = TEMPLATES / template
        if not t.is_file():
            raise HandoutError(f"missing template {t}")
        entries[path] = Entry(path, t.read_bytes(), os.access(t, os.X_OK),
                              f"student version of {path} (tools/handout/{template})")
    for path, text in GENERATED_TEXT.items():
        entries[path] = Entry(path, text.encode(), False, "made by tools/handout.py")
    if feedback is not None:
        entries[FEEDBACK_PATH] = Entry(FEEDBACK_PATH, feedback.encode(), False,
                                       f"feedback CI, pinned grader (tools/handout/{FEEDBACK_TEMPLATE})")
    result = [entries[k] for k in sorted(entries)]
    verify(result)
    return result


def verify(entries: list[Entry]) -> None:
    """The promises of the handout: no reference solutions, no grader or gallery, unsolved stubs."""
    problems = []
    for e in entries:
        if e.path.startswith(FORBIDDEN_DIRS):
            problems.append(f"{e.path}: under a folder that never ships ({', '.join(FORBIDDEN_DIRS)})")
        if FORBIDDEN_TEXT in e.data:
            problems.append(f"{e.path}: contains '{FORBIDDEN_TEXT.decode()}' (reference solution code)")
        if "hidden" in e.path.lower():
            problems.append(f"{e.path}: looks like a hidden suite")
        if e.path.startswith("student/") and e.path.endswith(".cu") and b"not_implemented(" not in e.data:
            problems.append(f"{e.path}: does not call not_implemented(): is this a solution instead of the starter file?")
    stubs = {e.path for e in entries if e.path.startswith("student/")}
    for slot in SLOTS:
        if f"student/{slot}.cu" not in stubs:
            problems.append(f"student/{slot}.cu: the starter file is missing")
    if problems:
        raise HandoutError("refusing to build the handout:\n  " + "\n  ".join(problems))


# --- the tarball --------------------------------------------------------------------------------

def tar_bytes(entries: list[Entry], mtime: int) -> bytes:
    """A gzip'd tar whose bytes depend only on the entries and mtime."""
    def info(name: str, mode: int, kind: bytes = tarfile.REGTYPE, size: int = 0) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(name)
        ti.type, ti.mode, ti.size, ti.mtime = kind, mode, size, mtime
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti

    dirs = {PREFIX}
    for e in entries:
        parts = e.path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add(f"{PREFIX}/{'/'.join(parts[:i])}")
    members: list[tuple[str, Entry | None]] = [(d, None) for d in dirs]
    members += [(f"{PREFIX}/{e.path}", e) for e in entries]
    members.sort(key=lambda m: m[0])

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, e in members:
            if e is None:
                tar.addfile(info(name, 0o755, tarfile.DIRTYPE))
            else:
                tar.addfile(info(name, 0o755 if e.executable else 0o644, size=len(e.data)), io.BytesIO(e.data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build the ScanGrade student handout (starter files, contract header, harness, "
                    "emulation backend, public suite, student Makefile and README; never reference "
                    "solutions, the grader, the gallery or hidden suites).",
        epilog="The contents are the allow-list ALLOW in this file plus the templates in tools/handout/.")
    parser.add_argument("--out", type=Path, default=Path("scangrade-handout.tar.gz"),
                        help="tarball to write (default: %(default)s)")
    parser.add_argument("--rev", help="take the files from this git commit instead of the working tree "
                                      "(templates still come from tools/handout/)")
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this script's)")
    parser.add_argument("--mtime", type=int, help="timestamp of every entry (default: SOURCE_DATE_EPOCH, "
                                                  "else HEAD's commit time, else 0)")
    parser.add_argument("--list", action="store_true", help="print the file list and write nothing")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")
    parser.add_argument("--grader-repo", default=os.environ.get("SCANGRADE_GRADER_REPO") or None,
                        help="OWNER/REPO of the grader the feedback workflow checks out (default: "
                             "$SCANGRADE_GRADER_REPO; none: no workflow ships)")
    parser.add_argument("--grader-ref", default=os.environ.get("SCANGRADE_GRADER_REF") or None,
                        help="its tag or commit sha (default: $SCANGRADE_GRADER_REF)")
    parser.add_argument("--runs-on", help="comma list of runner labels for the workflow's default "
                                          "(e.g. self-hosted,linux,x64,gpu; default: ubuntu-latest)")
    parser.add_argument("--feedback-workflow", type=Path, metavar="FILE",
                        help="write only the feedback workflow to FILE (no tarball)")
    args = parser.parse_args(argv)

    try:
        feedback = None
        if args.grader_repo or args.grader_ref or args.feedback_workflow:
            if not (args.grader_repo and args.grader_ref):
                raise HandoutError("the feedback workflow needs both --grader-repo and --grader-ref")
            feedback = feedback_workflow(args.grader_repo, args.grader_ref,
                                         args.runs_on.split(",") if args.runs_on else None)
        if args.feedback_workflow:
            args.feedback_workflow.parent.mkdir(parents=True, exist_ok=True)
            args.feedback_workflow.write_text(feedback)
            print(f"handout: wrote {args.feedback_workflow} (grader {args.grader_repo} at {args.grader_ref})")
            return 0
        source = GitRev(args.repo, args.rev) if args.rev else WorkTree(args.repo)
        entries = collect(source, feedback)
        mtime = args.mtime if args.mtime is not None else default_mtime(args.repo)
        if not args.quiet or args.list:
            width = max(len(e.path) for e in entries)
            for e in entries:
                print(f"  {PREFIX}/{e.path:<{width}}  {len(e.data):>7} B  {'x ' if e.executable else '  '}{e.why}")
        if args.list:
            return 0
        data = tar_bytes(entries, mtime)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(data)
    except (HandoutError, OSError) as e:
        print(f"handout: error: {e}", file=sys.stderr)
        return 1
    print(f"handout: wrote {args.out} ({len(entries)} files, {len(data)} bytes, "
          f"sha256 {hashlib.sha256(data).hexdigest()[:16]}, from {args.rev or 'the working tree'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
