"""batch.py with the fake compiler and a FAKE judge (it writes schema-valid results built from the
build.json it is given, counts its runs in a file, can crash, sleep and hold the GPU lock), plus
one real end-to-end batch on the emulate backend when the build is there."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import GRADING, REAL_BUILD, REAL_TOOLCHAIN, REPO, TESTS, assert_valid, write_script
from scangrade import gradebook, lms as lmsmod
from scangrade.vocab import SLOTS


BATCH = GRADING / "batch.py"

# The fake judge: one case per slot and dtype; a slot is compile_error when build.json says so,
# everything is compile_error on a layout error; a submission named *crash* exits 3 with nothing
# written, *racy* gets a race in hillis_steele. Appends "<name> <start> <end>" to $FAKE_COUNTER.
# $FAKE_SLEEP: seconds to sleep first. $FAKE_TIME_S: a fake "time step" that holds the
# --gpu-lock file (flock) that long and appends "<lock> <cuda> <start> <end>" to $FAKE_LOCKLOG.
FAKE_JUDGE = r'''
import fcntl, json, os, sys, time
from pathlib import Path
import fixtures   # on PYTHONPATH (fake_env)
args = sys.argv[1:]
def opt(name):
    return args[args.index(name) + 1] if name in args else None
name = opt("--submission-name")
start = time.time()
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
if os.environ.get("FAKE_TIME_S") and opt("--gpu-lock"):
    with open(opt("--gpu-lock"), "a+") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        t0 = time.time()
        time.sleep(float(os.environ["FAKE_TIME_S"]))
        t1 = time.time()
        with open(os.environ["FAKE_LOCKLOG"], "a") as f:
            f.write(f"{opt('--gpu-lock')} {os.environ.get('CUDA_VISIBLE_DEVICES')} {t0} {t1}\n")
        fcntl.flock(lk, fcntl.LOCK_UN)
if "crash" in name:
    print("fake judge: crashing", file=sys.stderr)
    sys.exit(3)
build = json.loads(Path(opt("--build-json")).read_text())
cases = []
for slot in fixtures.SLOTS:
    for dtype in ("int32", "float32"):
        status = "pass"
        if build["status"] == "layout_error" or slot in build["failed_slots"]:
            status = "compile_error"
        elif "racy" in name and slot == "hillis_steele":
            status = "race"
        cases.append(fixtures.make_case(slot, 100, dtype, status, backend=opt("--backend")))
doc = fixtures.make_results(cases, backend=opt("--backend"), build=build, name=name)
doc["submission"]["path"] = opt("--submission-path")
doc["phases"] = {"correctness_s": 0.1, "prepare_s": 0.0, "timing_s": 0.0, "lock_wait_s": 0.0, "sanitizer_s": 0.0}
Path(opt("--out")).write_text(json.dumps(doc))
with open(os.environ["FAKE_COUNTER"], "a") as f:
    f.write(f"{name} {start} {time.time()}\n")
sys.exit(doc["exit_code"])
'''

GOOD = {f"student/{s}.cu": f"// {s}\n" for s in SLOTS}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def write_zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for rel, text in files.items():
            zf.writestr(rel, text)
    return path


@pytest.fixture
def fake_env(tmp_path, fake_build_dir):
    judge = write_script(tmp_path / "tools" / "fake_batch_judge", FAKE_JUDGE)
    tc_path = fake_build_dir / "grading" / "toolchain.json"
    tc = json.loads(tc_path.read_text())
    tc["judge"] = str(judge)
    tc_path.write_text(json.dumps(tc))
    counter = tmp_path / "counter.txt"
    env = dict(os.environ, PYTHONPATH=str(TESTS), FAKE_COUNTER=str(counter), FAKE_LOCKLOG=str(tmp_path / "locks.txt"))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return {"build": fake_build_dir, "env": env, "counter": counter, "locklog": tmp_path / "locks.txt"}


def run_batch(subs: Path, out: Path, fake: dict, *extra, env_extra=None, timeout=120):
    env = dict(fake["env"], **(env_extra or {}))
    return subprocess.run([sys.executable, str(BATCH), str(subs), "--out", str(out), "--build-dir", str(fake["build"]),
                           "--backend", "emulate", "--jobs", "2", *map(str, extra)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def read_gradebook(out: Path) -> dict[str, dict]:
    with open(out / "gradebook.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def judged(counter: Path) -> list[str]:
    """The submissions the fake judge graded, in order (batch.py's preflight run left out)."""
    lines = counter.read_text().splitlines() if counter.is_file() else []
    return [line.split()[0] for line in lines if line.split()[0] != "preflight"]


class TagBalance(HTMLParser):
    VOID = {"meta", "br", "wbr", "img", "hr", "input", "link", "line", "rect", "path", "circle"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.links: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a":
            self.links.append(a.get("href", ""))
        if "id" in a:
            self.ids.append(a["id"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        if "id" in dict(attrs):
            self.ids.append(dict(attrs)["id"])

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()


def check_report(path: Path) -> TagBalance:
    p = TagBalance()
    p.feed(path.read_text())
    p.close()
    assert not p.errors, p.errors[:5]
    assert p.stack == [], p.stack
    return p


# --- ids ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, want, lms", [
    ("smithjohn_12345_67890_submission.zip", "smithjohn_12345", "canvas"),
    ("smithjohn_LATE_12345_67891_hw3.tar.gz", "smithjohn_12345", "canvas"),
    ("John Smith_12345_assignsubmission_file_", "john-smith_12345", "moodle"),
    ("Zoë O'Brien_77_assignsubmission_file_scan.zip", "zo-o-brien_77", "moodle"),
    ("submission_123456789", "submission_123456789", "gradescope"),
    ("Alice.zip", "alice", "plain"),
    ("=cmd|' /C calc'!A0.zip", "cmd-c-calc-a0", "plain"),
    ("...", "submission", "plain"),
])
def test_student_ids(raw, want, lms):
    assert lmsmod.student_id(raw) == (want, lms)


def test_gradescope_metadata_and_collisions(tmp_path):
    (tmp_path / "submission_111").mkdir()
    (tmp_path / "submission_222").mkdir()
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_111:\n  :submitters:\n  - :name: Ann Lee\n    :sid: 'A0042'\n    :email: ann@u.edu\n"
        "submission_222:\n  :submitters:\n  - :name: Bo Chen\n    :email: bo.chen@u.edu\n")
    (tmp_path / "alice").mkdir()
    write_zip(tmp_path / "alice.zip", GOOD)
    (tmp_path / ".DS_Store").write_text("x")
    entries = lmsmod.discover(tmp_path, set())
    ids = {e.raw_name: e.student_id for e in entries}
    assert ids == {"submission_111": "a0042", "submission_222": "bo.chen", "alice": "alice", "alice.zip": "alice-2"}
    assert any("alice-2" in n for e in entries for n in e.notes)


# --- a batch over a mix ---------------------------------------------------------------------------------

def make_mix(subs: Path) -> None:
    write_tree(subs / "goodfolder", GOOD)                                        # folder
    write_zip(subs / "smithjohn_12345_67890_submission.zip", {f"hw/{k}": v for k, v in GOOD.items()})  # canvas zip
    (subs / "corrupt.zip").write_bytes(b"PK\x03\x04 this is not a zip")          # corrupt zip
    write_zip(subs / "flat.zip", {f"{s}.cu": "// x\n" for s in SLOTS})           # bad layout
    write_tree(subs / "crash_me", GOOD)                                          # the judge exits 3
    write_tree(subs / "compiles_not", dict(GOOD, **{"student/blelloch.cu": "SYNTAX_ERROR\n"}))
    write_tree(subs / "racy_one", GOOD)
    with tarfile.open(subs / "Jane Doe_4_assignsubmission_file_.tar.gz", "w:gz") as tf:
        src = write_tree(subs.parent / "tarsrc", GOOD)
        tf.add(src / "student", arcname="student")
    (subs / "notes.txt").write_text("not a submission")


def test_batch_over_a_mix(tmp_path, fake_env):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    make_mix(subs)
    r = run_batch(subs, out, fake_env, "--threshold", "0.5")
    assert r.returncode == 3, r.stderr      # the crashing judge: an internal_error row
    book = read_gradebook(out)
    assert set(book) == {"goodfolder", "smithjohn_12345", "corrupt", "flat", "crash_me", "compiles_not",
                         "racy_one", "jane-doe_4", "notes.txt"}
    flags = {k: set(v["flags"].split()) for k, v in book.items()}
    assert flags["goodfolder"] == set() and flags["smithjohn_12345"] == set() and flags["jane-doe_4"] == set()
    assert flags["corrupt"] == {"layout_error"} and flags["flat"] == {"layout_error"}
    assert flags["notes.txt"] == {"layout_error"}
    assert flags["crash_me"] == {"internal_error"}
    assert flags["compiles_not"] == {"compile_error"}
    assert flags["racy_one"] == {"race"}
    assert book["crash_me"]["outcome"] == "error" and book["crash_me"]["total"] == ""
    assert book["goodfolder"]["total"] == book["goodfolder"]["max_total"] == "8"
    assert book["goodfolder"]["meets_threshold"] == "yes" and book["flat"]["meets_threshold"] == "no"
    assert book["compiles_not"]["blelloch"] == "0" and book["compiles_not"]["hillis_steele"] == "2"
    assert book["smithjohn_12345"]["raw_name"] == "smithjohn_12345_67890_submission.zip"
    for sid, row in book.items():
        if sid == "crash_me":
            continue
        results = json.loads((out / row["results"]).read_text())
        assert_valid(results, "results")
        assert float(row["total"]) == results["score"]["total"]
        assert (out / "students" / sid / "gradescope.json").is_file()
        assert (out / "students" / sid / "stamp.json").is_file()
    assert not (out / "students" / "crash_me" / "stamp.json").exists()    # retried on the next run
    assert "NOT GRADED crash_me" in r.stderr
    # report: well formed, the histogram, a link per student
    p = check_report(out / "report.html")
    assert "score-histogram" in p.ids
    for sid in book:
        if sid != "crash_me":
            assert f"students/{sid}/results.json" in p.links, sid
    assert "crash_me" in (out / "report.html").read_text()
    record = json.loads((out / "batch.json").read_text())
    assert len(record["students"]) == 9 and "compile" in record["phase_totals"]
    # the judge's own phases come from results.json's "phases" (the fake judge: 0.1 s of correctness)
    judged = {s["student_id"]: s for s in record["students"]}["goodfolder"]
    assert judged["judge_phases"]["correctness"] == 0.1 and judged["judge_phases"]["sanitizer"] == 0.0
    assert len((out / "batch.log").read_text().splitlines()) == 9


# --- resume ---------------------------------------------------------------------------------------------

def test_resume_after_a_kill_and_regrade_on_a_changed_suite(tmp_path, fake_env):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for i in range(6):
        write_tree(subs / f"s{i}", GOOD)
    env = dict(fake_env["env"], FAKE_SLEEP="0.7")
    cmd = [sys.executable, str(BATCH), str(subs), "--out", str(out), "--build-dir", str(fake_env["build"]),
           "--backend", "emulate", "--jobs", "1"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list(out.glob("students/*/stamp.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    time.sleep(1.0)     # a judge killed with the batch writes nothing more
    done = {p.parent.name for p in (out / "students").glob("*/stamp.json")}
    assert 2 <= len(done) < 6, done
    before = judged(fake_env["counter"])

    r = run_batch(subs, out, fake_env)
    assert r.returncode == 0, r.stderr
    after = judged(fake_env["counter"])
    for sid in done:
        assert after.count(sid) == 1, f"{sid} was graded again"
    assert set(after[len(before):]) == {f"s{i}" for i in range(6)} - done
    book = read_gradebook(out)
    assert len(book) == 6 and all(row["outcome"] == "graded" for row in book.values())
    assert {k for k, v in book.items() if v["run"] == "reused"} == done

    # nothing changed: nothing graded
    r = run_batch(subs, out, fake_env)
    assert r.returncode == 0 and judged(fake_env["counter"]) == after
    # results rewritten after they were stamped (by anyone but the grader): that student is graded again
    forged = out / "students" / "s1" / "results.json"
    forged.write_text(forged.read_text().replace('"outcome"', '"forged": true, "outcome"', 1))
    n = len(judged(fake_env["counter"]))
    r = run_batch(subs, out, fake_env)
    assert r.returncode == 0 and judged(fake_env["counter"])[n:] == ["s1"]
    assert '"forged"' not in forged.read_text()
    after = judged(fake_env["counter"])
    # a changed submission: only it is graded again
    (subs / "s0" / "student" / "blelloch.cu").write_text("// changed\n")
    r = run_batch(subs, out, fake_env)
    assert judged(fake_env["counter"])[len(after):] == ["s0"]
    # a changed suite: everyone is graded again
    suite = tmp_path / "suite.json"
    suite.write_text((REPO / "testcases" / "public.json").read_text() + "\n")
    n = len(judged(fake_env["counter"]))
    r = run_batch(subs, out, fake_env, "--suite", suite)
    assert r.returncode == 0, r.stderr
    assert sorted(judged(fake_env["counter"])[n:]) == [f"s{i}" for i in range(6)]
    # --no-resume: everyone again
    n = len(judged(fake_env["counter"]))
    run_batch(subs, out, fake_env, "--suite", suite, "--no-resume")
    assert len(judged(fake_env["counter"])) == n + 6


def test_secret_is_fingerprinted_never_stored(tmp_path, fake_env):
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_tree(subs / "a", GOOD)
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2-very-secret\n")
    hidden = REPO / "testcases" / "hidden.example.json"
    r = run_batch(subs, out, fake_env, "--hidden-suite", hidden, "--secret-file", secret)
    assert r.returncode == 0, r.stderr
    for p in out.rglob("*"):
        if p.is_file() and p.name != "worker":
            assert "hunter2" not in p.read_text(errors="replace"), p
    n = len(judged(fake_env["counter"]))
    secret.write_text("another secret\n")
    run_batch(subs, out, fake_env, "--hidden-suite", hidden, "--secret-file", secret)
    assert len(judged(fake_env["counter"])) == n + 1      # a new secret regrades


# --- GPU lock and GPU pools ------------------------------------------------------------------------------

def test_gpu_pools_time_one_at_a_time_per_gpu(tmp_path, fake_env):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for i in range(8):
        write_tree(subs / f"s{i}", GOOD)
    env = {"FAKE_TIME_S": "0.3"}
    start = time.monotonic()
    r = subprocess.run([sys.executable, str(BATCH), str(subs), "--out", str(out), "--build-dir", str(fake_env["build"]),
                        "--backend", "gpu", "--gpus", "0,1", "--judges-per-gpu", "3", "--jobs", "4", "--formats", "none"],
                       capture_output=True, text=True, timeout=120, env=dict(fake_env["env"], **env))
    wall = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in fake_env["locklog"].read_text().splitlines()]
    assert len(rows) == 8
    by_lock: dict[str, list[tuple[float, float]]] = {}
    for lock, cuda, t0, t1 in rows:
        assert Path(lock).name == f"gpu{cuda}.lock"            # one lock file per GPU, CUDA_VISIBLE_DEVICES set
        by_lock.setdefault(lock, []).append((float(t0), float(t1)))
    assert len(by_lock) == 2                                   # both GPUs got work
    for spans in by_lock.values():
        spans.sort()
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert b0 >= a1 - 1e-3, f"two timing steps overlapped on one GPU: {spans}"
    assert wall < 8 * 0.3 + 20
    book = read_gradebook(out)
    assert len(book) == 8 and all(v["outcome"] == "graded" for v in book.values())


def test_flock_blocks_a_second_holder(tmp_path):
    """The lock the judge takes (flock) excludes a second holder until the first lets go (no timing:
    the second holder says whether it was refused, then waits and says when it got the lock)."""
    lock = tmp_path / "gpu0.lock"
    code = ("import fcntl, sys\nf = open(sys.argv[1], 'a+')\n"
            "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('free', flush=True)\n"
            "except BlockingIOError:\n    print('refused', flush=True)\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\nprint('acquired', flush=True)\n")
    with open(lock, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        child = subprocess.Popen([sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "refused"
        time.sleep(0.2)
        assert child.poll() is None, "the second holder waits while the first holds the lock"
        fcntl.flock(f, fcntl.LOCK_UN)
    out, _ = child.communicate(timeout=30)
    assert out.strip() == "acquired" and child.returncode == 0


def test_help_and_usage_errors(tmp_path):
    r = subprocess.run([sys.executable, str(BATCH), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "gradebook" in r.stdout and "Canvas" in r.stdout
    r = subprocess.run([sys.executable, str(BATCH), str(tmp_path), "--out", str(tmp_path / "o"),
                        "--hidden-suite", "x.json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--secret-file" in r.stderr


# --- the real thing ----------------------------------------------------------------------------------------

@pytest.mark.skipif(not REAL_TOOLCHAIN.is_file(), reason=f"no build at {REAL_BUILD} (set SCANGRADE_BUILD_DIR)")
def test_real_batch_on_the_emulate_backend(tmp_path):
    tc = json.loads(REAL_TOOLCHAIN.read_text())
    if "emulate" not in tc:
        pytest.skip("this build has no emulation backend")
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    gallery = GRADING / "gallery"
    write_tree(subs / "kogge_stone", {f"student/{p.name}": p.read_text()
                                      for p in (gallery / "correct_kogge_stone" / "student").iterdir()})
    write_zip(subs / "swapped_7_1_submission.zip", {f"student/{p.name}": p.read_text()
              for p in (gallery / "wrong_inclusive_exclusive_swapped" / "student").iterdir()})
    write_tree(subs / "nocompile", {f"student/{p.name}": p.read_text()
                                    for p in (gallery / "wrong_does_not_compile" / "student").iterdir()})
    r = subprocess.run([sys.executable, str(BATCH), str(subs), "--out", str(out), "--build-dir", str(REAL_BUILD),
                        "--backend", "emulate", "--max-n", "70000", "--formats", "gradescope"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    book = read_gradebook(out)
    assert set(book) == {"kogge_stone", "swapped_7", "nocompile"}
    for sid, row in book.items():
        results = json.loads((out / row["results"]).read_text())
        assert_valid(results, "results")
        sc = results["score"]
        assert float(row["total"]) == pytest.approx(sc["total"]) and float(row["max_total"]) == sc["max_total"]
        for slot in SLOTS:
            assert float(row[slot]) == results["slots"][slot]["points"]
        assert row["backend"] == "emulate"
    assert book["kogge_stone"]["total"] == book["kogge_stone"]["max_total"] and book["kogge_stone"]["flags"] == ""
    assert "fail" in book["swapped_7"]["flags"].split()
    assert "compile_error" in book["nocompile"]["flags"].split()
    check_report(out / "report.html")


def test_report_with_gpu_timings(tmp_path):
    """Perf-ratio histograms per slot from GPU results (the fake batch runs have none)."""
    import fixtures
    from scangrade.batch_report import render_report
    students = []
    for i, name in enumerate(["all_pass_gpu", "mixed", "layout_error", "not_graded"]):
        doc = fixtures.document(name)
        st = gradebook.Student(lmsmod.Entry(f"raw {i}.zip", tmp_path / f"{i}.zip", "zip", f"s{i}"), tmp_path / f"s{i}")
        st.results, st.outcome, st.flags = doc, doc["outcome"], gradebook.flags_of(doc)
        students.append(st)
    students.append(gradebook.Student(lmsmod.Entry("<b>x</b>", tmp_path / "x", "other", "x"), tmp_path / "x",
                                     error="the judge exited 3 & wrote nothing", flags=["internal_error"]))
    columns, rows = gradebook.gradebook_rows(students, tmp_path, 0.5)
    assert "hierarchical_perf" in columns and "single_pass_perf" in columns
    record = {"backend": "gpu", "gpus": ["0"], "suites": ["public.json"], "phase_totals":
              gradebook.phase_totals(students, 1), "threshold": 0.5}
    path = tmp_path / "report.html"
    path.write_text(render_report(students, record, columns, rows))
    p = check_report(path)
    assert {"score-histogram", "perf-hierarchical", "perf-single_pass", "pass-hierarchical"} <= set(p.ids)
    text = path.read_text()
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text     # raw names are escaped
    assert gradebook.flags_of(fixtures.document("not_graded")) == ["internal_error"]
    assert gradebook.flags_of(fixtures.document("layout_error")) == ["layout_error"]
