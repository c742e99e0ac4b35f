"""batch.py --slurm against a real Slurm: a one-node cluster on this machine (slurm_cluster.py:
munged, slurmctld and slurmd, started once for the session), the real grader on the emulation
backend, small classes from the gallery (--max-n 4096: a few seconds a student).

  - the class graded through --slurm --tasks 2 gets the gradebook and results a local batch gets;
    the same command again submits nothing;
  - --no-wait returns at once and the dependent job writes the gradebook;
  - a task cancelled while it grades leaves only its unfinished student ungraded (exit 4, the
    task's Slurm state named); the same command again grades only that student;
  - a bad partition and a GPU request on a GPU-less cluster: sbatch's message, exit 4, nothing lost.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

import slurm_cluster
from conftest import GRADING, REAL_BUILD, REAL_TOOLCHAIN, assert_valid

BATCH = GRADING / "batch.py"
GALLERY = GRADING / "gallery"
EXIT_SLURM = 4
# the settings of every run here: small cases, one CPU slot a task unless a test says otherwise
SETTINGS = ["--backend", "emulate", "--max-n", "4096", "--formats", "gradescope,junit"]


def emulated_build() -> str | None:
    if not REAL_TOOLCHAIN.is_file():
        return f"no build at {REAL_BUILD} (set SCANGRADE_BUILD_DIR)"
    if "emulate" not in json.loads(REAL_TOOLCHAIN.read_text()):
        return "this build has no emulation backend"
    return None


pytestmark = pytest.mark.skipif(emulated_build() is not None, reason=str(emulated_build()))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    try:
        c = slurm_cluster.start(tmp_path_factory.mktemp("slurm") / "cluster")
    except slurm_cluster.Unavailable as exc:
        pytest.skip(f"no test Slurm cluster: {exc}")
    yield c
    c.stop()


def copy_entry(name: str, dest: Path) -> Path:
    shutil.copytree(GALLERY / name / "student", dest / "student")
    return dest


def zip_entry(name: str, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w") as zf:
        for p in sorted((GALLERY / name / "student").iterdir()):
            zf.write(p, f"student/{p.name}")
    return dest


def batch(cluster, subs: Path, out: Path, *extra: str, timeout: float = 540) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BATCH), str(subs), "--out", str(out), "--build-dir", str(REAL_BUILD),
                           *SETTINGS, *extra], capture_output=True, text=True, timeout=timeout, env=cluster.env)


def slurm_batch(cluster, subs: Path, out: Path, *extra: str, timeout: float = 540) -> subprocess.CompletedProcess:
    return batch(cluster, subs, out, "--slurm", "--poll-s", "1", *extra, timeout=timeout)


def gradebook(out: Path) -> dict[str, dict]:
    with open(out / "gradebook.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def runs(out: Path) -> list[Path]:
    return sorted(p for p in (out / "slurm").iterdir() if p.is_dir()) if (out / "slurm").is_dir() else []


def stamps(out: Path) -> dict[str, tuple[float, str]]:
    """Per student: its stamp's finished_at and bytes (a regrade rewrites both)."""
    found = {}
    for p in (out / "students").glob("*/stamp.json"):
        found[p.parent.name] = (json.loads(p.read_text())["finished_at"], p.read_text())
    return found


def logs(out: Path) -> str:
    """Every run's Slurm output files, for a failing assertion's message."""
    return "\n".join(f"--- {p}\n{p.read_text(errors='replace')}" for p in sorted((out / "slurm").glob("*/logs/*.out")))


def task_records(run: Path) -> list[str]:
    """The students the run's tasks finished (their records files), in order."""
    ids = []
    for path in sorted((run / "records").glob("task-*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if "student_id" in rec:
                ids.append(rec["student_id"])
    return ids


# --- a class on the cluster and on this machine --------------------------------------------------------------

@pytest.fixture(scope="module")
def graded_class(cluster, tmp_path_factory):
    """Four gallery entries (one a Canvas zip) graded on the cluster with --tasks 2 and locally."""
    base = tmp_path_factory.mktemp("class")
    subs = base / "subs"
    subs.mkdir()
    copy_entry("correct_brent_kung", subs / "correct_brent_kung")
    zip_entry("wrong_off_by_one_index", subs / "leeann_1001_2002_scan.zip")
    copy_entry("wrong_does_not_compile", subs / "wrong_does_not_compile")
    copy_entry("wrong_inclusive_exclusive_swapped", subs / "swapped")
    local = batch(cluster, subs, base / "local", "--jobs", "2")
    assert local.returncode == 0, local.stderr
    cluster.wait_idle()
    slurm = slurm_batch(cluster, subs, base / "slurm", "--tasks", "2")
    return {"subs": subs, "local": base / "local", "slurm": base / "slurm", "run": slurm}


def test_the_cluster_grades_the_class_as_a_local_batch_does(graded_class):
    r = graded_class["run"]
    assert r.returncode == 0, r.stderr + logs(graded_class["slurm"])
    assert "submitted job" in r.stderr and "2 task(s) grading 4 student(s)" in r.stderr
    assert "student(s) finished" in r.stderr     # the progress line
    local, slurm = gradebook(graded_class["local"]), gradebook(graded_class["slurm"])
    assert set(slurm) == {"correct_brent_kung", "leeann_1001", "wrong_does_not_compile", "swapped"}
    for sid, row in slurm.items():
        assert {k: v for k, v in row.items() if k != "seconds"} == \
               {k: v for k, v in local[sid].items() if k != "seconds"}, f"{sid}: {r.stderr}"
        assert row["run"] == "graded" and row["outcome"] == "graded"
        mine = json.loads((graded_class["slurm"] / row["results"]).read_text())
        theirs = json.loads((graded_class["local"] / row["results"]).read_text())
        assert_valid(mine, "results")
        assert mine["score"] == theirs["score"]
        assert [(c["slot"], c["n"], c["status"]) for c in mine["cases"]] == \
               [(c["slot"], c["n"], c["status"]) for c in theirs["cases"]]
        folder = graded_class["slurm"] / "students" / sid
        for name in ("stamp.json", "build.json", "judge.log", "feedback.html", "gradescope.json", "junit.xml"):
            assert (folder / name).is_file(), f"{sid}: {name}"
    assert slurm["correct_brent_kung"]["total"] == slurm["correct_brent_kung"]["max_total"]
    assert "compile_error" in slurm["wrong_does_not_compile"]["flags"].split()
    assert "fail" in slurm["leeann_1001"]["flags"].split()
    # the run folder: two shards of two, both tasks COMPLETED, each student finished once
    (run,) = runs(graded_class["slurm"])
    plan = json.loads((run / "plan.json").read_text())
    assert sorted(len(s["students"]) for s in plan["shards"]) == [2, 2]
    assert sorted(task_records(run)) == sorted(slurm)
    record = json.loads((graded_class["slurm"] / "batch.json").read_text())
    assert [t["state"].split()[0] for t in record["slurm"]["tasks"]] == ["COMPLETED", "COMPLETED"]
    assert record["slurm"]["not_run"] == [] and len(record["students"]) == 4
    assert len((graded_class["slurm"] / "batch.log").read_text().splitlines()) == 4
    assert "score-histogram" in (graded_class["slurm"] / "report.html").read_text()


def test_the_same_command_again_submits_nothing(cluster, graded_class):
    before = stamps(graded_class["slurm"])
    r = slurm_batch(cluster, graded_class["subs"], graded_class["slurm"], "--tasks", "2")
    assert r.returncode == 0, r.stderr + logs(graded_class["slurm"])
    assert "nothing to grade on the cluster" in r.stderr, r.stderr + logs(graded_class["slurm"]) and "submitted job" not in r.stderr
    assert stamps(graded_class["slurm"]) == before
    assert {row["run"] for row in gradebook(graded_class["slurm"]).values()} == {"reused"}
    assert len(runs(graded_class["slurm"])) == 1


# --- Slurm says no -----------------------------------------------------------------------------------------------

def test_refused_submissions_name_slurms_message_and_lose_nothing(cluster, graded_class, tmp_path):
    subs = tmp_path / "subs"
    shutil.copytree(graded_class["subs"], subs)
    copy_entry("correct_kogge_stone", subs / "newcomer")     # something to grade, so sbatch is asked
    out = graded_class["slurm"]
    before = {p: p.read_bytes() for p in [out / "gradebook.csv", out / "report.html", out / "batch.json",
                                          *out.glob("students/*/*.json")]}
    r = slurm_batch(cluster, subs, out, "--partition", "no_such_partition")
    assert r.returncode == EXIT_SLURM, r.stderr
    assert "sbatch refused the job" in r.stderr and "Invalid partition name specified" in r.stderr
    assert "nothing was submitted" in r.stderr
    r = batch(cluster, subs, out, "--slurm", "--backend", "gpu", "--gpus-per-task", "1")
    assert r.returncode == EXIT_SLURM, r.stderr
    assert "Invalid generic resource (gres) specification" in r.stderr
    assert {p: p.read_bytes() for p in before} == before
    assert not (out / "students" / "newcomer").exists()
    assert len(runs(out)) == 1                                # no run folder left by a refused job
    assert cluster.jobs() == []


# --- --no-wait: the dependent job writes the gradebook ----------------------------------------------------------

def test_no_wait_leaves_the_gradebook_to_the_dependent_job(cluster, tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    copy_entry("wrong_does_not_compile", subs / "a")
    copy_entry("wrong_off_by_one_index", subs / "b")
    cluster.wait_idle()
    r = slurm_batch(cluster, subs, out, "--tasks", "2", "--no-wait", timeout=120)
    assert r.returncode == 0, r.stderr
    assert "not waiting" in r.stderr and not (out / "gradebook.csv").exists()
    (run,) = runs(out)
    job = json.loads((run / "job.json").read_text())
    assert job["finish_job"] and job["tasks"] == 2
    deadline = time.monotonic() + 300
    while not (out / "gradebook.csv").exists() and time.monotonic() < deadline:
        time.sleep(1)
    cluster.wait_idle()
    book = gradebook(out)
    assert {sid: row["outcome"] for sid, row in book.items()} == {"a": "graded", "b": "graded"}
    assert "compile_error" in book["a"]["flags"].split() and "fail" in book["b"]["flags"].split()
    finish_log = (run / "logs" / f"finish-{job['finish_job']}.out").read_text()
    assert "gradebook.csv" in finish_log


# --- a task cancelled while it grades ------------------------------------------------------------------------------

def test_a_cancelled_task_leaves_its_unfinished_student_to_the_next_run(cluster, tmp_path):
    if cluster.cpus < 2:
        pytest.skip("one CPU: a task cannot judge two students side by side")
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("correct_brent_kung", "wrong_off_by_one_index", "wrong_does_not_compile", "wrong_hangs_spin"):
        copy_entry(name, subs / name)
    # two CPU slots a task: the shard's two students are judged side by side (and one task runs at a
    # time on the test node); the hanging one spins until its slot's share of the budget is spent
    cmd = [sys.executable, str(BATCH), str(subs), "--out", str(out), "--build-dir", str(REAL_BUILD), *SETTINGS,
           "--budget-s", "150", "--slurm", "--tasks", "2", "--jobs", "2", "--poll-s", "1"]
    cluster.wait_idle()
    proc = subprocess.Popen(cmd, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not runs(out) or not (runs(out)[0] / "job.json").is_file():
            assert time.monotonic() < deadline and proc.poll() is None, "no job submitted"
            time.sleep(0.2)
        (run,) = runs(out)
        plan = json.loads((run / "plan.json").read_text())
        job = json.loads((run / "job.json").read_text())
        shard = next(s for s in plan["shards"] if "wrong_hangs_spin" in s["students"])
        others = [s for s in shard["students"] if s != "wrong_hangs_spin"]
        assert others, plan["shards"]
        hang = out / "students" / "wrong_hangs_spin"
        # cancel once the shard's other student is stamped and the hanging one is being judged
        while not ((hang / "judge.log").is_file() and all((out / "students" / s / "stamp.json").is_file()
                                                           for s in others)):
            assert time.monotonic() < deadline and proc.poll() is None, "the shard did not get that far"
            time.sleep(0.2)
        assert not (hang / "stamp.json").exists()
        r = cluster.run("scancel", f"{job['array_job']}_{shard['task']}")
        assert r.returncode == 0, r.stderr
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_SLURM, stderr
    assert "NOT GRADED wrong_hangs_spin" in stderr and "CANCELLED" in stderr
    assert f"task-{job['array_job']}_{shard['task']}.out" in stderr     # where its log is
    book = gradebook(out)
    assert book["wrong_hangs_spin"]["outcome"] == "not_graded" and book["wrong_hangs_spin"]["run"] == "not_run"
    assert book["wrong_hangs_spin"]["total"] == ""
    assert {sid for sid, row in book.items() if row["outcome"] == "graded"} == \
           {"correct_brent_kung", "wrong_off_by_one_index", "wrong_does_not_compile"}
    assert not (hang / "stamp.json").exists()                 # nothing half-done passes for a grade
    record = json.loads((out / "batch.json").read_text())
    assert record["slurm"]["not_run"] == ["wrong_hangs_spin"]
    assert any(t["state"].startswith("CANCELLED") for t in record["slurm"]["tasks"])
    finished = stamps(out)
    assert set(finished) == {"correct_brent_kung", "wrong_off_by_one_index", "wrong_does_not_compile"}

    # the same command again: only the cancelled student is graded
    cluster.wait_idle()
    r = subprocess.run(cmd, env=cluster.env, capture_output=True, text=True, timeout=540)
    assert r.returncode == 0, r.stderr
    assert "3 student(s) already graded" in r.stderr and "1 task(s) grading 1 student(s)" in r.stderr
    rerun = runs(out)[-1]
    assert rerun != run and task_records(rerun) == ["wrong_hangs_spin"]
    after = stamps(out)
    for sid, stamp in finished.items():
        assert after[sid] == stamp, f"{sid} was graded again"
    book = gradebook(out)
    assert {sid: row["run"] for sid, row in book.items()} == {
        "correct_brent_kung": "reused", "wrong_off_by_one_index": "reused", "wrong_does_not_compile": "reused",
        "wrong_hangs_spin": "graded"}
    assert "timeout" in book["wrong_hangs_spin"]["flags"].split()
    assert all(row["outcome"] == "graded" for row in book.values())
