"""Take a class's submissions from their git repositories: the repository list, the commit each student
is graded at, and a submission folder holding only that commit's student/*.cu and student/*.cuh.

batch.py --repos FILE [--deadline ISO-8601] uses it (grading/docs/repositories.md);
it also runs alone:

    PYTHONPATH=grading python3 -m scangrade.repos take --repos class.txt --deadline 2025-03-01T23:59:00-05:00 --out DIR
    PYTHONPATH=grading python3 -m scangrade.repos pin  --repos class.txt > pinned.txt

The list (FILE), either one repository a line, blank lines and `#` comments allowed (a first line
that names no repository, such as "name url", is a header and skipped):

    URL                     the student's name is the URL's last part, without .git
    NAME URL
    NAME URL COMMIT         grade exactly COMMIT (a full or abbreviated sha), not the deadline rule

or a CSV (comma, tab or semicolon) with a header row, as spreadsheets, LMS rosters and the
classroom tools export it: the repository column (student_repository_url, repository_url, repo_url,
repository, url, ...), optionally a name (roster_identifier, name, github_username, ...) and a commit
(commit, sha, ...); a row without a repository (a student who never accepted) is left out.

Which commit is graded:

  * COMMIT given (third column): that commit, whatever its date (the instructor's word: e.g. the
    head of the last push before the deadline from GitHub's push events, or `pin` run at the deadline).
    A commit no longer on any branch (force-pushed away) is fetched by its sha when the server allows it.
  * else with a deadline: on the default branch (the remote's HEAD), walking the FIRST-PARENT chain
    from the tip, the first commit whose COMMITTER date is at or before the deadline. First-parent:
    the states the branch itself went through, never a commit of a side branch merged in later.
    Committer date: a rebase or amend after the deadline renews it (the author date would not).
  * else (no deadline): the tip of the default branch.

Commit dates are written by the student's own git and can be forged (GIT_COMMITTER_DATE); the date
rule trusts them. Where that matters, take push times from the platform and give the commit in the
third column, or run `pin` at the deadline (it records each default branch's tip, `NAME URL SHA`, with
`git ls-remote`: a fact about the server at that moment, not about dates).

Only regular files directly in student/ whose names end in .cu or .cuh are exported (links,
submodules, other folders and every other file are left out, and counted in the notes): a repository
that rewrites grading/, the suites or the workflows changes nothing. Git never checks anything out
(a bare clone; no hooks, filters or LFS run) and no file is read before its size is known: the sizes
come from `git ls-tree -l`, and a file over MAX_SOURCE_BYTES, a total over MAX_BYTES or more than
MAX_FILES entries in student/ is refused with the file's name and size (the grader's memory stays
bounded whatever the repository holds) and never asks for credentials (GIT_TERMINAL_PROMPT=0,
no askpass, ssh in batch mode); every git command has a timeout. Only the transports file, git,
http(s) and ssh are allowed.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from .lms import MAX_ID, slug
from .vocab import MAX_BYTES, MAX_FILES, MAX_SOURCE_BYTES

CLONE_TIMEOUT_S = 120
GIT_TIMEOUT_S = 60
EXPORTED_SUFFIXES = (".cu", ".cuh")
SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")

# gradebook columns added by batch.py --repos (after the folder batch's own, so readers by name and
# by position of the old columns see no change)
GRADEBOOK_COLUMNS = ("repository", "commit", "commit_date", "commit_rule", "repo_error")


class RepoListError(Exception):
    """The repository list cannot be read; the message names the line."""


@dataclass
class RepoSpec:
    name: str           # the student's id in the batch (safe as a folder name)
    url: str
    commit: str | None  # the third column, if any
    line: int


@dataclass
class Intake:
    """What was taken from one repository. error set: nothing usable (no clone, no commit)."""
    spec: RepoSpec
    folder: Path | None = None          # the submission folder (holds student/ when the commit has one)
    commit: str = ""
    commit_date: str = ""               # committer date, ISO 8601 with the committer's offset
    rule: str = ""                      # deadline | list | tip
    branch: str = ""
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""                     # clone or commit problem: the student is not graded
    layout_problem: str = ""            # the commit has no student/*.cu(h): graded as a layout_error

    def columns(self) -> dict[str, str]:
        return {"repository": self.spec.url, "commit": self.commit, "commit_date": self.commit_date,
                "commit_rule": self.rule, "repo_error": self.error or self.layout_problem}

    def record(self) -> dict:
        return dict(self.columns(), name=self.spec.name, branch=self.branch, files=self.files, notes=self.notes)


# --- the list ---------------------------------------------------------------------------------------

def parse_deadline(text: str) -> datetime:
    """ISO 8601 with a UTC offset or Z (a deadline without one is ambiguous: refused)."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"--deadline {text!r} is not ISO 8601 (e.g. 2025-03-01T23:59:00-05:00)") from None
    if when.tzinfo is None:
        raise ValueError(f"--deadline {text!r} has no UTC offset: add Z or e.g. -05:00")
    return when


def name_from_url(url: str) -> str:
    tail = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return tail[:-4] if tail.endswith(".git") else tail


# A CSV class list's columns, by header name (case and spaces ignored), first match wins: the
# repository (required), the student's name (else the URL's last part) and a commit (optional).
# They cover a plain "name,url[,commit]" sheet, LMS and roster exports, and the assignment exports
# of the classroom tools (e.g. roster_identifier, github_username, student_repository_url).
CSV_URL_COLUMNS = ("student_repository_url", "repository_url", "repo_url", "clone_url", "git_url", "ssh_url",
                   "html_url", "repository", "repo", "url")
CSV_NAME_COLUMNS = ("roster_identifier", "student", "student_name", "name", "github_username", "username",
                    "login", "user", "email", "student_repository_name")
CSV_COMMIT_COLUMNS = ("commit", "commit_sha", "sha", "submission_commit", "head_sha")


def looks_like_url(text: str) -> bool:
    """A repository address: a URL, an scp-like host:path or a path (what git clones)."""
    return "/" in text or ":" in text


def parse_repo_list(path: Path) -> list[RepoSpec]:
    """The class list: one repository a line (URL, NAME URL or NAME URL COMMIT; a first line that
    names no repository is a header and skipped), or a CSV with a header row (CSV_*_COLUMNS)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RepoListError(f"cannot read {path}: {exc}") from None
    rows = _csv_rows(path, text) if _is_csv(text) else _plain_rows(path, text)
    specs: list[RepoSpec] = []
    seen: dict[str, int] = {}
    for i, name, url, commit in rows:
        if url.startswith("-") or "::" in url.split("/", 1)[0] or not looks_like_url(url):
            raise RepoListError(f"{path}:{i}: {url!r} is not a repository URL")
        if commit is not None and not SHA.match(commit):
            raise RepoListError(f"{path}:{i}: the commit must be a commit sha, not {commit!r}")
        sid = slug(name or name_from_url(url))
        n = seen.get(sid, 0) + 1
        seen[sid] = n
        if n > 1:
            sid = f"{sid[: MAX_ID - 4]}-{n}"
        specs.append(RepoSpec(sid, url, commit, i))
    return specs


def _is_csv(text: str) -> bool:
    first = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    return "," in first or "\t" in first or ";" in first


def _plain_rows(path: Path, text: str) -> list[tuple[int, str, str, str | None]]:
    rows: list[tuple[int, str, str, str | None]] = []
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()     # a comment, whole-line or after the fields
        if not line:
            continue
        parts = line.split()
        if len(parts) == 1:
            name, url, commit = "", parts[0], None
        elif len(parts) in (2, 3):
            name, url, commit = parts[0], parts[1], parts[2] if len(parts) == 3 else None
        else:
            raise RepoListError(f"{path}:{i}: expected URL, NAME URL or NAME URL COMMIT, got {len(parts)} fields")
        if not rows and not looks_like_url(url) and not url.startswith("-"):
            continue    # a header ("name url", "repository"): no repository is named so
        rows.append((i, name, url, commit))
    return rows


def _csv_rows(path: Path, text: str) -> list[tuple[int, str, str, str | None]]:
    lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    first = lines[0][1]
    delimiter = max(",\t;", key=first.count)
    reader = csv.reader([line for _, line in lines], delimiter=delimiter)
    header = [h.strip().lower().replace(" ", "_") for h in next(reader)]

    def column(names: tuple[str, ...]) -> int | None:
        return next((header.index(n) for n in names if n in header), None)

    url_at, commit_at = column(CSV_URL_COLUMNS), column(CSV_COMMIT_COLUMNS)
    names_at = [header.index(n) for n in CSV_NAME_COLUMNS if n in header]   # the first one filled in
    if url_at is None:
        if any(looks_like_url(h) for h in header):
            raise RepoListError(f"{path}:{lines[0][0]}: a CSV class list starts with a header row "
                                f"(one column named {' or '.join(CSV_URL_COLUMNS[:4])} ...)")
        raise RepoListError(f"{path}:{lines[0][0]}: no repository column in the header {header}: name it one "
                            f"of {', '.join(CSV_URL_COLUMNS)}")
    rows: list[tuple[int, str, str, str | None]] = []
    for (i, _), fields in zip(lines[1:], reader):
        def get(at: int | None) -> str:
            return fields[at].strip() if at is not None and at < len(fields) else ""
        url = get(url_at)
        if not url:
            continue    # a student without a repository (not accepted yet): nothing to take
        name = next((get(at) for at in names_at if get(at)), "")
        rows.append((i, name, url, get(commit_at) or None))
    return rows


# --- git ------------------------------------------------------------------------------------------

def git_env(git_config: Path | None = None) -> dict[str, str]:
    """No prompt of any kind, no user or system configuration (only git_config, if given: e.g. an
    http extraheader with a read token), only the plain transports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="/bin/false", SSH_ASKPASS="/bin/false", GCM_INTERACTIVE="never",
               GIT_SSH_COMMAND="ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new",
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(git_config) if git_config else os.devnull,
               GIT_ALLOW_PROTOCOL="file:git:http:https:ssh", LC_ALL="C",
               # objects over 1 MiB are streamed, never inflated whole in git's memory (a clone
               # of a small repository can hold a blob of a GiB of zeros)
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="core.bigFileThreshold", GIT_CONFIG_VALUE_0="1m")
    return env


class GitError(Exception):
    pass


def git(args: list[str], env: dict[str, str], timeout: float = GIT_TIMEOUT_S, cwd: Path | None = None,
        text: bool = True) -> str | bytes:
    try:
        r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=text, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]}: no answer within {timeout:g} s") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from None
    if r.returncode != 0:
        err = r.stderr if text else r.stderr.decode(errors="replace")
        lines = [l.strip() for l in err.splitlines() if l.strip()]
        raise GitError(f"git {args[0]} exited {r.returncode}: " + (" / ".join(lines[-3:]) or "no message"))
    return r.stdout


def choose_commit(repo: Path, spec: RepoSpec, deadline: datetime | None, env: dict[str, str],
                  timeout: float) -> tuple[str, str, str, str]:
    """(sha, committer date, rule, branch) per the module's rules; GitError when there is none."""
    try:
        branch = str(git(["symbolic-ref", "--short", "HEAD"], env, cwd=repo)).strip()
    except GitError:
        branch = ""
    if spec.commit:
        try:
            sha = str(git(["rev-parse", "--verify", "--quiet", f"{spec.commit}^{{commit}}"], env, cwd=repo)).strip()
        except GitError:   # not on any branch (force-pushed away): ask the server for it by its sha
            try:
                git(["fetch", "--quiet", "--no-tags", "origin", spec.commit], env, timeout, cwd=repo)
                sha = str(git(["rev-parse", "--verify", "--quiet", f"{spec.commit}^{{commit}}"], env,
                              cwd=repo)).strip()
            except GitError as exc:
                raise GitError(f"commit {spec.commit} from the list is not in the repository ({exc})") from None
        date = str(git(["show", "-s", "--format=%cI", sha], env, cwd=repo)).strip()
        return sha, date, "list", branch
    try:
        git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], env, cwd=repo)
    except GitError:
        raise GitError("the repository has no commits on its default branch") from None
    if deadline is None:
        sha, date = str(git(["show", "-s", "--format=%H %cI", "HEAD"], env, cwd=repo)).split()
        return sha, date, "tip", branch
    limit = deadline.timestamp()
    out = str(git(["log", "--first-parent", "--format=%H %ct %cI", "HEAD"], env, timeout, cwd=repo))
    for line in out.splitlines():
        sha, ct, date = line.split()
        if int(ct) <= limit:
            return sha, date, "deadline", branch
    raise GitError(f"no commit on {branch or 'the default branch'} (first-parent) at or before the deadline "
                   f"{deadline.isoformat()}")


def list_student_tree(repo: Path, sha: str, env: dict[str, str], max_entries: int = MAX_FILES,
                      timeout: float = GIT_TIMEOUT_S) -> list[tuple[str, str, str, int, str]]:
    """(mode, kind, blob, size, path) of every entry under student/ at sha (`git ls-tree -r -l`: sizes
    come from the object headers, nothing is read). The listing is read as a stream and refused past
    max_entries, so a tree of a million names costs the grader no memory."""
    cmd = ["git", "ls-tree", "-r", "-l", "-z", "--full-tree", sha, "--", "student/"]
    try:
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from None
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    entries: list[tuple[str, str, str, int, str]] = []
    pending, complete = b"", False
    try:
        assert proc.stdout is not None
        while True:
            chunk = proc.stdout.read(1 << 16)
            if not chunk:
                complete = True
                break
            items = (pending + chunk).split(b"\0")
            pending = items.pop()
            for item in items:
                meta, path_b = item.split(b"\t", 1)
                mode, kind, blob, size = meta.decode().split()
                entries.append((mode, kind, blob, int(size) if size.isdigit() else 0,
                                path_b.decode("utf-8", errors="replace")))
                if len(entries) > max_entries:
                    raise GitError(f"student/ at {sha[:12]} holds more than {max_entries} entries: refused")
    finally:
        if not complete:
            proc.kill()
        proc.wait()
        expired = not timer.is_alive() and proc.returncode != 0
        timer.cancel()
    if expired:
        raise GitError(f"git ls-tree: no answer within {timeout:g} s")
    if proc.returncode != 0:
        raise GitError(f"git ls-tree exited {proc.returncode} on {sha[:12]}")
    return entries


def export_student(repo: Path, sha: str, dest: Path, env: dict[str, str], max_file_bytes: int = MAX_SOURCE_BYTES,
                   max_bytes: int = MAX_BYTES) -> tuple[list[str], list[str]]:
    """Write the commit's student/*.cu and student/*.cuh (regular files only) under dest/student/.
    Every size is checked from the listing before any file is read: a file over max_file_bytes or a
    total over max_bytes is refused (GitError naming the file and its size). Returns (files, notes)."""
    chosen, skipped, total = [], [], 0
    for mode, kind, blob, size, name in list_student_tree(repo, sha, env):
        path = PurePosixPath(name)
        direct = len(path.parts) == 2 and path.suffix in EXPORTED_SUFFIXES
        if not direct or kind != "blob" or mode not in ("100644", "100755") or len(chosen) >= MAX_FILES:
            skipped.append(str(path))
            continue
        if size > max_file_bytes:
            raise GitError(f"{path} at {sha[:12]} is {size} bytes: a student source file may hold at most "
                           f"{max_file_bytes} bytes")
        total += size
        if total > max_bytes:
            raise GitError(f"student/ at {sha[:12]} holds more than {max_bytes} bytes of .cu/.cuh files "
                           f"(at {path}, {size} bytes): refused")
        chosen.append((blob, size, path))
    files = []
    for blob, size, path in chosen:
        data = bytes(git(["cat-file", "blob", blob], env, cwd=repo, text=False))
        if len(data) != size:   # the listing and the object disagree: never trust more than was checked
            raise GitError(f"{path} at {sha[:12]}: git read {len(data)} bytes, its listing said {size}")
        target = dest / "student" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files.append(str(path))
    notes = [f"left out (not a regular student/*.cu or *.cuh file): {', '.join(skipped[:10])}"
             + (f" and {len(skipped) - 10} more" if len(skipped) > 10 else "")] if skipped else []
    return files, notes


def take_one(spec: RepoSpec, deadline: datetime | None, submissions: Path, work: Path,
             clone_timeout: float = CLONE_TIMEOUT_S, git_config: Path | None = None) -> Intake:
    """Clone (bare), choose the commit, export. The submission folder is rewritten from scratch, so an
    unchanged commit gives a byte-identical folder (batch.py's resume then reuses the results)."""
    intake = Intake(spec)
    env = git_env(git_config)
    folder = submissions / spec.name
    shutil.rmtree(folder, ignore_errors=True)
    clone = Path(tempfile.mkdtemp(prefix=f"{spec.name}-", dir=work)) / "repo.git"
    try:
        git(["clone", "--bare", "--quiet", "--no-tags", "--", spec.url, str(clone)], env, clone_timeout)
        intake.commit, intake.commit_date, intake.rule, intake.branch = choose_commit(
            clone, spec, deadline, env, clone_timeout)
        folder.mkdir(parents=True)
        intake.folder = folder
        intake.files, intake.notes = export_student(clone, intake.commit, folder, env)
        if not intake.files:
            intake.layout_problem = f"commit {intake.commit[:12]} has no student/*.cu or student/*.cuh"
    except GitError as exc:
        intake.error = str(exc)
        intake.folder = None
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(clone.parent, ignore_errors=True)
    return intake


def take_class(specs: list[RepoSpec], deadline: datetime | None, submissions: Path, jobs: int = 4,
               clone_timeout: float = CLONE_TIMEOUT_S, git_config: Path | None = None) -> list[Intake]:
    """Every repository of the list, a few clones at a time; submissions/ holds exactly their folders."""
    submissions.mkdir(parents=True, exist_ok=True)
    names = {s.name for s in specs}
    for stale in submissions.iterdir():     # a student removed from the list is not graded again
        if stale.name not in names:
            shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink()
    with tempfile.TemporaryDirectory(prefix="scangrade-clones-") as work, \
            ThreadPoolExecutor(max(1, min(jobs, len(specs) or 1))) as pool:
        return list(pool.map(lambda s: take_one(s, deadline, submissions, Path(work), clone_timeout, git_config),
                             specs))


def pin(specs: list[RepoSpec], git_config: Path | None = None, timeout: float = GIT_TIMEOUT_S) -> list[str]:
    """`NAME URL SHA` lines: each default branch's tip on the server now (git ls-remote)."""
    env, lines = git_env(git_config), []
    for s in specs:
        try:
            out = str(git(["ls-remote", "--", s.url, "HEAD"], env, timeout))
            sha = out.split()[0] if out.strip() else ""
            lines.append(f"{s.name} {s.url} {sha}" if sha else f"# {s.name} {s.url}: no HEAD on the server")
        except GitError as exc:
            lines.append(f"# {s.name} {s.url}: {exc}")
    return lines


# --- command line ---------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m scangrade.repos", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    take = sub.add_parser("take", help="clone and export every repository's student/ (what batch.py --repos grades)")
    take.add_argument("--repos", type=Path, required=True)
    take.add_argument("--deadline", help="ISO 8601 with an offset; default: each default branch's tip")
    take.add_argument("--out", type=Path, required=True, help="folder for the submission folders")
    take.add_argument("--clone-timeout", type=float, default=CLONE_TIMEOUT_S)
    take.add_argument("--git-config", type=Path, help="git config file for the clones (e.g. a read token)")
    pin_p = sub.add_parser("pin", help="print NAME URL SHA of each default branch's tip now (run it at the deadline)")
    pin_p.add_argument("--repos", type=Path, required=True)
    pin_p.add_argument("--git-config", type=Path)
    args = parser.parse_args(argv)
    try:
        specs = parse_repo_list(args.repos)
        deadline = parse_deadline(args.deadline) if getattr(args, "deadline", None) else None
    except (RepoListError, ValueError) as exc:
        print(f"repos: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "pin":
        print(f"# default-branch tips at {datetime.now(timezone.utc).isoformat(timespec='seconds')}")
        print("\n".join(pin(specs, args.git_config)))
        return 0
    bad = 0
    for it in take_class(specs, deadline, args.out, clone_timeout=args.clone_timeout, git_config=args.git_config):
        bad += bool(it.error)
        print(f"{it.spec.name}: " + (f"ERROR {it.error}" if it.error else
                                     f"{it.commit[:12]} {it.commit_date} ({it.rule}) {len(it.files)} file(s)"
                                     + (f"; {it.layout_problem}" if it.layout_problem else "")))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
