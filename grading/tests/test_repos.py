"""Grading from students' repositories (scangrade/repos.py, batch.py --repos) with local bare
repositories behind file:// URLs, and the student feedback workflow's grading step run on a repository
made from the handout. The grading tests use the real build (SCANGRADE_BUILD_DIR, emulate backend)
and small gallery entries; the intake tests need only git."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from conftest import GRADING, REAL_BUILD, REAL_TOOLCHAIN, REPO
from scangrade import repos

BATCH = GRADING / "batch.py"
DEADLINE = "2025-03-01T23:59:00+00:00"
BEFORE, AFTER, FORGED = "2025-03-01T20:00:00+00:00", "2025-03-02T10:00:00+00:00", "2025-03-01T23:00:00+00:00"
STUBS = {f"student/{p.name}": p.read_text() for p in sorted((REPO / "student").glob("*.cu"))}
MODIFIES_INPUT = (GRADING / "gallery" / "wrong_modifies_input" / "student" / "blelloch.cu").read_text()
needs_build = pytest.mark.skipif(not REAL_TOOLCHAIN.is_file(), reason=f"no grader build at {REAL_BUILD}")


def run_git(cwd: Path, *args: str, date: str | None = None) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="s", GIT_AUTHOR_EMAIL="s@example.org", GIT_COMMITTER_NAME="s",
               GIT_COMMITTER_EMAIL="s@example.org", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


class Remote:
    """A bare repository (the 'server') and a working clone to commit and push from."""

    def __init__(self, root: Path, name: str) -> None:
        self.bare = root / "server" / f"{name}.git"
        self.work = root / "work" / name
        self.bare.mkdir(parents=True)
        run_git(self.bare, "init", "--bare", "-q", "-b", "main")
        run_git(self.bare, "config", "uploadpack.allowAnySHA1InWant", "true")   # like GitHub: fetch by sha
        self.work.mkdir(parents=True)
        run_git(self.work, "init", "-q", "-b", "main")
        run_git(self.work, "remote", "add", "origin", self.bare.as_uri())

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def commit(self, files: dict[str, str | None], date: str, msg: str = "work") -> str:
        for rel, text in files.items():
            p = self.work / rel
            if text is None:
                p.unlink()
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        run_git(self.work, "add", "-A")
        run_git(self.work, "commit", "-q", "--allow-empty", "-m", msg, date=date)
        return run_git(self.work, "rev-parse", "HEAD")

    def push(self, force: bool = False) -> None:
        run_git(self.work, "push", "-q", *(["--force"] if force else []), "origin", "main")


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


# --- the list and the rules (git only) -------------------------------------------------------------------

def test_repo_list_forms_comments_and_errors(tmp_path):
    f = tmp_path / "class.txt"
    f.write_text("# hw3\n\nfile:///srv/alice-hw3.git\nBob  file:///srv/x.git   # a comment\n"
                 "carol file:///srv/c.git 0123abcd\nbob file:///srv/y.git\n")
    specs = repos.parse_repo_list(f)
    assert [(s.name, s.url, s.commit, s.line) for s in specs] == [
        ("alice-hw3", "file:///srv/alice-hw3.git", None, 3), ("bob", "file:///srv/x.git", None, 4),
        ("carol", "file:///srv/c.git", "0123abcd", 5), ("bob-2", "file:///srv/y.git", None, 6)]
    for bad, why in [("a b c d\n", "4 fields"), ("a file:///x not-a-sha\n", "commit sha"),
                     ("a --upload-pack=touch\n", "not a repository URL"), ("a ext::sh%20-c%20x\n", "not a repository URL")]:
        f.write_text(bad)
        with pytest.raises(repos.RepoListError, match=why):
            repos.parse_repo_list(f)
    assert repos.parse_deadline("2025-03-01T23:59:00Z").utcoffset().total_seconds() == 0
    with pytest.raises(ValueError, match="no UTC offset"):
        repos.parse_deadline("2025-03-01T23:59:00")


@pytest.mark.parametrize("text, expected", [
    # a plain list with a header line
    ("name url\nalice file:///srv/a.git\n", [("alice", "file:///srv/a.git", None, 2)]),
    ("repository\nhttps://example.org/c/bob-hw3.git\n", [("bob-hw3", "https://example.org/c/bob-hw3.git", None, 2)]),
    # a spreadsheet's CSV: name, url, commit
    ("Name,URL,Commit\nAlice Smith,file:///srv/a.git,0123abcd\nBob,file:///srv/b.git,\n",
     [("alice-smith", "file:///srv/a.git", "0123abcd", 2), ("bob", "file:///srv/b.git", None, 3)]),
    # a classroom tool's assignment export (quoted fields, extra columns, a student who never accepted)
    ('assignment_name,github_username,roster_identifier,student_repository_name,student_repository_url,points\n'
     '"hw3",alice-gh,"Alice A",hw3-alice-gh,https://example.org/c/hw3-alice-gh,10\n'
     '"hw3",,"Carol C",,,\n'
     '"hw3",bob-gh,,hw3-bob-gh,git@example.org:c/hw3-bob-gh.git,7\n',
     [("alice-a", "https://example.org/c/hw3-alice-gh", None, 2),
      ("bob-gh", "git@example.org:c/hw3-bob-gh.git", None, 4)]),
    # an LMS-style tab-separated export with a byte-order mark
    ("\ufeffStudent\tRepository URL\nDana\tfile:///srv/d.git\n", [("dana", "file:///srv/d.git", None, 2)]),
])
def test_class_list_formats(tmp_path, text, expected):
    f = tmp_path / "class.csv"
    f.write_text(text, encoding="utf-8")
    specs = repos.parse_repo_list(f)
    assert [(s.name, s.url, s.commit, s.line) for s in specs] == expected


def test_a_csv_without_a_repository_column_or_header_is_refused(tmp_path):
    f = tmp_path / "class.csv"
    f.write_text("name,email\nalice,a@example.org\n")
    with pytest.raises(repos.RepoListError, match="no repository column"):
        repos.parse_repo_list(f)
    f.write_text("alice,file:///srv/a.git\n")
    with pytest.raises(repos.RepoListError, match="header row"):
        repos.parse_repo_list(f)


def test_deadline_rule_first_parent_forged_dates_and_listed_commit(tmp_path):
    deadline = repos.parse_deadline(DEADLINE)
    r = Remote(tmp_path, "alice")
    early = r.commit(STUBS, BEFORE, "stubs")
    r.push()
    # a side branch whose commit is dated before the deadline, merged after it: never taken (first-parent)
    run_git(r.work, "checkout", "-q", "-b", "side", early)
    r.commit({"student/blelloch.cu": MODIFIES_INPUT}, FORGED, "side work")
    run_git(r.work, "checkout", "-q", "main")
    r.commit({"student/hierarchical.cu": "// late\n"}, AFTER, "late")
    run_git(r.work, "merge", "-q", "--no-ff", "-m", "merge", "side", date=AFTER)
    r.push()
    spec = repos.RepoSpec("alice", r.url, None, 1)
    it = repos.take_one(spec, deadline, tmp_path / "subs", tmp_path)
    assert (it.error, it.commit, it.rule, it.branch) == ("", early, "deadline", "main")
    assert it.commit_date == "2025-03-01T20:00:00+00:00"
    assert (tmp_path / "subs" / "alice" / "student" / "blelloch.cu").read_text() == STUBS["student/blelloch.cu"]
    # no deadline: the tip
    tip = run_git(r.work, "rev-parse", "HEAD")
    it = repos.take_one(spec, None, tmp_path / "subs", tmp_path)
    assert (it.commit, it.rule) == (tip, "tip")
    # a forged committer date after the deadline passes the date rule (documented): the listed commit wins
    forged = r.commit({"student/blelloch.cu": MODIFIES_INPUT}, FORGED, "forged date")
    r.push()
    assert repos.take_one(spec, deadline, tmp_path / "subs", tmp_path).commit == forged
    listed = repos.RepoSpec("alice", r.url, early[:10], 1)
    it = repos.take_one(listed, deadline, tmp_path / "subs", tmp_path)
    assert (it.commit, it.rule) == (early, "list")


def test_force_pushed_history(tmp_path):
    deadline = repos.parse_deadline(DEADLINE)
    r = Remote(tmp_path, "dave")
    at_deadline = r.commit(STUBS, BEFORE, "stubs")
    r.push()
    # after the deadline: history rewritten (amended: the committer date is renewed) and force-pushed
    run_git(r.work, "commit", "-q", "--amend", "-m", "rewritten", date=AFTER)
    r.commit({"student/blelloch.cu": MODIFIES_INPUT}, AFTER, "after")
    r.push(force=True)
    spec = repos.RepoSpec("dave", r.url, None, 1)
    it = repos.take_one(spec, deadline, tmp_path / "subs", tmp_path)
    assert "no commit on main (first-parent) at or before the deadline" in it.error and it.folder is None
    assert not (tmp_path / "subs" / "dave").exists()
    # the commit recorded at the deadline (push events, or `pin`) is fetched by its sha
    it = repos.take_one(repos.RepoSpec("dave", r.url, at_deadline, 1), deadline, tmp_path / "subs", tmp_path)
    assert (it.error, it.commit, it.rule) == ("", at_deadline, "list")
    assert listing(tmp_path / "subs" / "dave") == sorted(STUBS)
    it = repos.take_one(repos.RepoSpec("dave", r.url, "ab" * 20, 1), deadline, tmp_path / "subs", tmp_path)
    assert "commit " + "ab" * 20 + " from the list is not in the repository" in it.error


def test_only_student_sources_are_taken(tmp_path):
    r = Remote(tmp_path, "bob")
    r.commit({**STUBS, "student/helpers.cuh": "// helper\n", "student/notes.txt": "x", "student/sub/deep.cu": "x",
              "grading/grade.py": "print('100/100')\n", "testcases/public.json": "[]",
              ".github/workflows/feedback.yml": "on: push\n"}, BEFORE)
    os.symlink("/etc/passwd", r.work / "student" / "link.cu")
    r.commit({}, BEFORE, "a link")
    r.push()
    it = repos.take_one(repos.RepoSpec("bob", r.url, None, 1), repos.parse_deadline(DEADLINE), tmp_path / "subs",
                        tmp_path)
    assert listing(tmp_path / "subs" / "bob") == sorted([*STUBS, "student/helpers.cuh"])
    assert "student/link.cu" in it.notes[0] and "student/sub/deep.cu" in it.notes[0]
    # no student/ at all: taken, graded as a layout error
    e = Remote(tmp_path, "erin")
    e.commit({"README.md": "hi\n"}, BEFORE)
    e.push()
    it = repos.take_one(repos.RepoSpec("erin", e.url, None, 1), None, tmp_path / "subs", tmp_path)
    assert not it.error and it.layout_problem.endswith("has no student/*.cu or student/*.cuh")


def test_missing_and_unreachable_repositories_never_prompt(tmp_path):
    empty = Remote(tmp_path, "empty")
    for url, why in [((tmp_path / "nope.git").as_uri(), "git clone exited 128"),
                     ("https://127.0.0.1:9/x.git", "git clone exited 128"),
                     (empty.url, "no commits on its default branch")]:
        it = repos.take_one(repos.RepoSpec("x", url, None, 1), None, tmp_path / "subs", tmp_path, clone_timeout=20)
        assert why in it.error, it.error
    # pin: the tips now, or a comment saying why not
    empty.commit({"student/a.cu": "x"}, BEFORE)
    empty.push()
    lines = repos.pin([repos.RepoSpec("e", empty.url, None, 1),
                       repos.RepoSpec("n", (tmp_path / "nope.git").as_uri(), None, 2)])
    assert lines[0] == f"e {empty.url} {run_git(empty.work, 'rev-parse', 'HEAD')}"
    assert lines[1].startswith("# n ")


# --- a class graded from its repositories (real build, emulated) ------------------------------------------

def make_class(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    shas = {}
    a = Remote(tmp_path, "alice")                                        # a later commit after the deadline
    shas["alice"] = a.commit(STUBS, BEFORE)
    a.commit({"student/blelloch.cu": MODIFIES_INPUT}, AFTER)
    a.push()
    b = Remote(tmp_path, "bob")                                          # rewrote the grader and the workflow
    shas["bob"] = b.commit({"student/blelloch.cu": MODIFIES_INPUT, "grading/grade.py": "print('100/100')\n",
                            "testcases/public.json": "{}", ".github/workflows/grade.yml": "on: push\n"}, BEFORE)
    b.push()
    d = Remote(tmp_path, "dave")                                         # force-pushed after the deadline
    shas["dave"] = d.commit({"student/blelloch.cu": MODIFIES_INPUT}, BEFORE)
    d.push()
    run_git(d.work, "commit", "-q", "--amend", "-m", "rewritten", date=AFTER)
    d.push(force=True)
    e = Remote(tmp_path, "erin")                                         # no student/
    shas["erin"] = e.commit({"README.md": "hi\n"}, BEFORE)
    e.push()
    listed = tmp_path / "class.txt"
    listed.write_text(f"# hw3, deadline {DEADLINE}\n{a.url}\nbob {b.url}\n"
                      f"carol {(tmp_path / 'server' / 'carol.git').as_uri()}   # never created\n"
                      f"dave {d.url}\nerin {e.url}\n")
    return listed, shas


def run_batch(listed: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(GRADING))
    return subprocess.run([sys.executable, str(BATCH), "--repos", str(listed), "--deadline", DEADLINE, "--out",
                           str(out), "--build-dir", str(REAL_BUILD), "--backend", "emulate", "--jobs", "2",
                           "--quiet", *extra], capture_output=True, text=True, env=env, timeout=600)


@needs_build
def test_class_from_repositories_at_the_deadline(tmp_path):
    listed, shas = make_class(tmp_path)
    out = tmp_path / "out"
    r = run_batch(listed, out)
    assert r.returncode == 1, r.stderr          # carol and dave could not be taken; everything else graded
    rows = {row["student_id"]: row for row in csv.DictReader((out / "gradebook.csv").open())}
    header = (out / "gradebook.csv").read_text().splitlines()[0].split(",")
    assert header[-5:] == list(repos.GRADEBOOK_COLUMNS) and header[0] == "student_id"
    print((out / "gradebook.csv").read_text())
    assert sorted(rows) == ["alice", "bob", "carol", "dave", "erin"]
    alice, bob, carol, dave, erin = (rows[k] for k in sorted(rows))
    # alice: the stubs committed before the deadline, not the later commit
    assert (alice["commit"], alice["commit_rule"], alice["outcome"]) == (shas["alice"], "deadline", "graded")
    assert alice["flags"] == "not_implemented" and alice["commit_date"] == "2025-03-01T20:00:00+00:00"
    # bob: his grade.py, suite and workflow changed nothing; only student/blelloch.cu was taken
    assert bob["outcome"] == "graded" and "input_modified" in bob["flags"].split()
    assert listing(out / "submissions" / "bob") == ["student/blelloch.cu"]
    bob_results = json.loads((out / bob["results"]).read_text())
    assert [s["path"] for s in bob_results["suites"]] == [str(REPO / "testcases" / "public.json")]
    assert (carol["outcome"], carol["commit"]) == ("not_graded", "") and "git clone exited 128" in carol["repo_error"]
    assert dave["outcome"] == "not_graded" and "at or before the deadline" in dave["repo_error"]
    assert erin["outcome"] == "graded" and erin["flags"].startswith("layout_error") and erin["commit"] == shas["erin"]
    record = json.loads((out / "batch.json").read_text())
    assert record["repos"]["deadline"] == DEADLINE and len(record["repos"]["repositories"]) == 5
    assert "carol" in (out / "report.html").read_text()

    # the instructor fills in dave's commit from the push events: graded at it; the others are reused
    listed.write_text(listed.read_text().replace(f"dave {(tmp_path / 'server' / 'dave.git').as_uri()}",
                                                 f"dave {(tmp_path / 'server' / 'dave.git').as_uri()} {shas['dave']}"))
    r = run_batch(listed, out)
    assert r.returncode == 1, r.stderr
    rows = {row["student_id"]: row for row in csv.DictReader((out / "gradebook.csv").open())}
    print((out / "gradebook.csv").read_text())
    assert {k: v["run"] for k, v in rows.items() if v["outcome"] == "graded"} == \
        {"alice": "reused", "bob": "reused", "dave": "graded", "erin": "reused"}
    assert (rows["dave"]["commit"], rows["dave"]["commit_rule"]) == (shas["dave"], "list")
    assert "input_modified" in rows["dave"]["flags"].split()


def test_usage_errors(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(GRADING))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(BATCH), *args], capture_output=True, text=True, env=env)

    r = run("--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "either SUBMISSIONS_DIR or --repos" in r.stderr
    r = run(str(tmp_path), "--out", str(tmp_path / "o"), "--deadline", DEADLINE)
    assert r.returncode == 2 and "apply to --repos" in r.stderr
    (tmp_path / "l.txt").write_text("x file:///x\n")
    r = run("--repos", str(tmp_path / "l.txt"), "--out", str(tmp_path / "o"), "--deadline", "tomorrow")
    assert r.returncode == 2 and "not ISO 8601" in r.stderr


# --- the student feedback workflow ------------------------------------------------------------------------

def test_feedback_workflow_is_generated_pinned_and_shipped(tmp_path):
    import handout   # tools/ (pytest.ini)
    text = handout.feedback_workflow("course-org/scangrade-grader", "v1.2")
    doc = yaml.safe_load(text)
    steps = doc["jobs"]["feedback"]["steps"]
    grader = next(s for s in steps if s.get("with", {}).get("path") == "grader")
    assert grader["with"]["repository"] == "course-org/scangrade-grader" and grader["with"]["ref"] == "v1.2"
    assert "@GRADER" not in text and "feedback, not the grade" in text.lower()
    with pytest.raises(handout.HandoutError):
        handout.feedback_workflow("not a repo", "v1")
    out = tmp_path / "h.tar.gz"
    assert handout.main(["--out", str(out), "-q", "--grader-repo", "course-org/scangrade-grader",
                         "--grader-ref", "v1.2"]) == 0
    with tarfile.open(out) as t:
        shipped = t.extractfile(f"{handout.PREFIX}/.github/workflows/feedback.yml").read().decode()
    assert shipped == text


@needs_build
def test_feedback_step_on_a_handout_repository(tmp_path):
    import handout
    tarball = tmp_path / "handout.tar.gz"
    assert handout.main(["--out", str(tarball), "-q", "--grader-repo", "course-org/scangrade-grader",
                         "--grader-ref", "v1.2"]) == 0
    ws = tmp_path / "ws"
    ws.mkdir()
    with tarfile.open(tarball) as t:
        t.extractall(ws, filter="data")
    repo = ws / "submission"
    (ws / handout.PREFIX).rename(repo)
    # the student's push: a blelloch that modifies its input, plus a "grader" and suite of their own
    (repo / "student" / "blelloch.cu").write_text(MODIFIES_INPUT)
    (repo / "grading").mkdir(exist_ok=True)     # the handout ships the grader's grading/ for make grade
    (repo / "grading" / "grade.py").write_text("print('100/100')\n")
    (repo / "testcases" / "public.json").write_text("{}")
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "my work")
    (ws / "grader").symlink_to(REPO)    # what the pinned checkout puts there
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "feedback.yml").read_text())
    step = next(s for s in workflow["jobs"]["feedback"]["steps"] if s.get("id") == "grade")
    summary = tmp_path / "summary.md"
    step_env = {**workflow["jobs"]["feedback"]["env"], **step.get("env", {})}
    env = {**os.environ, **{k: str(v) for k, v in step_env.items() if "${{" not in str(v)}}
    assert env["PYTHONPATH"] == "grader/grading" and env["GRADER_REPO"] == "course-org/scangrade-grader"
    # what the runner provides, and the grader build the "Build the grader" step would have made
    env.update(GRADER_BUILD=str(REAL_BUILD), GRADE_BACKEND="emulate", MIN_SCORE="0", GITHUB_STEP_SUMMARY=str(summary))
    r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    print(r.stdout[-3000:], r.stderr[-2000:], summary.read_text() if summary.exists() else "", sep="\n")
    assert r.returncode == 0, r.stderr
    md = summary.read_text()
    assert md.startswith("# ScanGrade feedback, not the grade")
    assert "input_modified" in md and "not_implemented" in md
    results = json.loads((ws / "feedback-results" / "results.json").read_text())
    assert [s["path"] for s in results["suites"]] == [str(REPO / "testcases" / "public.json")]
    assert results["slots"]["blelloch"]["statuses"].get("input_modified")


# --- the instructor's workflow ----------------------------------------------------------------------------

def test_grade_class_workflow_secrets_reach_only_files(tmp_path):
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "grade-class.yml").read_text())
    triggers = wf[True] if True in wf else wf["on"]          # YAML 1.1 reads `on` as true
    assert "schedule" in triggers and "deadline" in triggers["workflow_dispatch"]["inputs"]
    job = wf["jobs"]["grade-class"]
    assert job["runs-on"] == ["self-hosted", "linux", "x64", "gpu"] and wf["permissions"] == {"contents": "read"}
    steps = {s.get("name"): s for s in job["steps"]}
    secret_step, grade_step = steps["Secrets to files"], steps["Grade the class"]
    # secrets appear only in the env of the step that writes them to files
    for s in job["steps"]:
        if s is not secret_step:
            assert "secrets." not in json.dumps(s), s.get("name")
    assert "--repos" in grade_step["run"] and "--sandbox require" in grade_step["run"]
    assert any("gradebook.csv" in str(s.get("with", {}).get("path", "")) for s in job["steps"])
    # run the step: files of mode 0600 in a 0700 folder, nothing printed, the flags name files only
    secret, token = "s3cr3t-value-xyz", "ghp_tokenvalue123"
    env = dict(os.environ, RUNNER_TEMP=str(tmp_path), HIDDEN_SUITE='{"suite": "hidden"}', SECRET=secret,
               CLONE_TOKEN=token)
    r = subprocess.run(["bash", "-e", "-c", secret_step["run"]], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert secret not in r.stdout + r.stderr and token not in r.stdout + r.stderr
    private = tmp_path / "scangrade-private"
    assert private.stat().st_mode & 0o777 == 0o700
    for name in ("hidden.json", "secret.txt", "gitconfig", "flags"):
        assert (private / name).stat().st_mode & 0o777 == 0o600, name
    assert (private / "secret.txt").read_text() == secret
    flags = (private / "flags").read_text()
    assert secret not in flags and token not in flags and "--git-config" in flags and "--secret-file" in flags
    header = subprocess.run(["git", "config", "--file", str(private / "gitconfig"), "--get",
                             "http.https://github.com/.extraheader"], capture_output=True, text=True).stdout
    assert header.startswith("AUTHORIZATION: basic ") and token not in header   # base64 of x-access-token:TOKEN
    # without any secret: no flags at all (not an empty argument)
    r = subprocess.run(["bash", "-e", "-c", secret_step["run"]], env=dict(os.environ, RUNNER_TEMP=str(tmp_path)),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and (private / "flags").read_text() == ""


# --- sizes are checked before anything is read (git only) ----------------------------------------------

TAKE_AND_MEASURE = """
import json, resource, sys
from pathlib import Path
from scangrade import repos
it = repos.take_one(repos.RepoSpec("big", sys.argv[1], None, 1), None, Path(sys.argv[2]), Path(sys.argv[3]))
print(json.dumps({"error": it.error, "files": it.files,
                  "self_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "children_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def test_a_huge_blob_is_refused_by_its_size_with_bounded_memory(tmp_path):
    """A small repository holding a 256 MiB blob of zeros (its pack is a few hundred KB): the refusal
    names the file and its size, and neither the grader's process nor git's grows near the blob's size
    (the grader used to read the whole blob, twice over, before refusing it)."""
    size = 256 * 1024 * 1024
    r = Remote(tmp_path, "big")
    r.commit(STUBS, BEFORE)
    with open(r.work / "student" / "big.cuh", "wb") as f:
        f.truncate(size)                              # sparse: nothing is written to disk
    env = dict(os.environ, GIT_AUTHOR_NAME="s", GIT_AUTHOR_EMAIL="s@example.org", GIT_COMMITTER_NAME="s",
               GIT_COMMITTER_EMAIL="s@example.org", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    fast = ["-c", "core.bigFileThreshold=1m", "-c", "core.compression=1", "-c", "pack.compression=1"]
    # the server keeps the pushed pack as it came, as hosting services do (a loose 256 MiB object
    # would be inflated by the server's own pack-objects, a child of a file:// clone)
    run_git(r.bare, "config", "receive.unpackLimit", "1")
    for args in (["add", "-A"], ["commit", "-q", "-m", "a big header"], ["push", "-q", "origin", "main"]):
        subprocess.run(["git", *fast, *args], cwd=r.work, env=env, check=True, capture_output=True)
    (r.work / "student" / "big.cuh").unlink()
    out = subprocess.run([sys.executable, "-c", TAKE_AND_MEASURE, r.url, str(tmp_path / "subs"), str(tmp_path)],
                         cwd=GRADING, capture_output=True, text=True, check=True, timeout=600).stdout
    result = json.loads(out)
    assert result["files"] == []
    assert result["error"] == (f"student/big.cuh at {result['error'].split(' at ')[1].split()[0]} is {size} bytes: "
                               f"a student source file may hold at most {repos.MAX_SOURCE_BYTES} bytes")
    limit_kb = 100 * 1024                             # far below the blob's 256 MiB
    assert result["self_kb"] < limit_kb, result
    assert result["children_kb"] < limit_kb, result
    assert not (tmp_path / "subs" / "big").exists()


def test_caps_on_entries_file_size_and_total_name_what_and_the_limit(tmp_path):
    r = Remote(tmp_path, "caps")
    r.commit({**STUBS, "student/a.cuh": "a" * 3000, "student/b.cuh": "b" * 3000}, BEFORE)
    env = repos.git_env()
    sha = run_git(r.work, "rev-parse", "HEAD")
    dest = tmp_path / "out"
    files, _ = repos.export_student(r.work / ".git", sha, dest, env)
    assert "student/a.cuh" in files and (dest / "student" / "a.cuh").stat().st_size == 3000
    with pytest.raises(repos.GitError, match=r"^student/a\.cuh at [0-9a-f]{12} is 3000 bytes: a student source file "
                                             r"may hold at most 2999 bytes$"):
        repos.export_student(r.work / ".git", sha, tmp_path / "o2", env, max_file_bytes=2999)
    stubs = sum(len(t.encode()) for t in STUBS.values())
    last = len(STUBS["student/single_pass.cu"].encode())     # the listing is in name order: the last file
    with pytest.raises(repos.GitError, match=rf"holds more than {stubs + 5999} bytes of \.cu/\.cuh files "
                                             rf"\(at student/single_pass\.cu, {last} bytes\): refused$"):
        repos.export_student(r.work / ".git", sha, tmp_path / "o3", env, max_bytes=stubs + 5999)
    with pytest.raises(repos.GitError, match=r"holds more than 5 entries: refused$"):
        repos.list_student_tree(r.work / ".git", sha, env, max_entries=5)
