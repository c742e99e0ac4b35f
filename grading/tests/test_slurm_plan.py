"""batch.py --slurm without a cluster: the shards, the sbatch command lines, Slurm's answers parsed,
the flags' rules, and whole runs with stand-in Slurm commands (sbatch prints a job id and logs its
arguments; the test then runs the job scripts as Slurm would, task by task) and test_batch.py's fake
judge. test_slurm_cluster.py does the same against a real Slurm."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GRADING, write_script
from scangrade import slurm
from scangrade.batch_slurm import SHARD_OVERHEAD_S, shard_costs
from scangrade.gradebook import Student
from scangrade.lms import Entry
from test_batch import FAKE_JUDGE, GOOD, write_tree

BATCH = GRADING / "batch.py"
EXIT_SLURM = 4


# --- shards -----------------------------------------------------------------------------------------------------

def test_shards_balance_expected_work_and_do_not_depend_on_order():
    costs = {"a": 90.0, "b": 10.0, "c": 40.0, "d": 35.0, "e": 30.0, "f": 5.0, "g": 50.0}
    shards = slurm.shard_students(costs, 3)
    assert sorted(s for shard in shards for s in shard) == sorted(costs)
    loads = [sum(costs[s] for s in shard) for shard in shards]
    assert max(loads) - min(loads) <= max(costs.values())        # longest first, to the least loaded
    assert max(loads) == 90.0                                     # the longest student alone bounds it
    assert slurm.shard_students(dict(reversed(list(costs.items()))), 3) == shards
    # equal costs: round robin by id; more tasks than students: one student a shard, none empty
    assert slurm.shard_students({s: 1.0 for s in "dcba"}, 2) == [["a", "c"], ["b", "d"]]
    assert slurm.shard_students({"x": 1.0, "y": 2.0}, 8) == [["y"], ["x"]]


def test_costs_come_from_old_stamps_else_build_json_else_every_slot(tmp_path):
    weights = {"hillis_steele": 10.0, "blelloch": 10.0, "hierarchical": 20.0, "single_pass": 20.0}

    def student(name: str, judge_s: float | None = None, failed: list[str] | None = None) -> Student:
        st = Student(Entry(name, tmp_path / name, "folder", name), tmp_path / "out" / name)
        st.out.mkdir(parents=True)
        if judge_s is not None:
            (st.out / "stamp.json").write_text(json.dumps({"judge_phases": {"correctness": judge_s}}))
        if failed is not None:
            (st.out / "build.json").write_text(json.dumps({"status": "ok", "failed_slots": failed,
                                                           "missing_slots": [], "policy_violations": {}}))
        return st

    costs = shard_costs([student("graded", 120.0, failed=[]), student("known", 30.0),
                         student("built", failed=["single_pass"]), student("new")], weights)
    # graded: 120 s judged over a weight of 60 -> 2 s per unit of weight for the others
    assert costs["graded"] == SHARD_OVERHEAD_S + 120.0 and costs["known"] == SHARD_OVERHEAD_S + 30.0
    assert costs["built"] == SHARD_OVERHEAD_S + 2 * 40.0 and costs["new"] == SHARD_OVERHEAD_S + 2 * 60.0


# --- commands and answers ----------------------------------------------------------------------------------------

def test_sbatch_command_lines(tmp_path):
    opts = slurm.Options(partition="gpu", account="cs101", time="1:00:00", gpus_per_task=2, cpus_per_task=16,
                         array_parallel=3, sbatch_args=["--qos=short"])
    cmd = slurm.array_command(opts, 10, tmp_path / "task.sh", tmp_path / "logs", "scangrade-hw3")
    assert cmd[:2] == ["sbatch", "--parsable"] and cmd[-1] == str(tmp_path / "task.sh")
    for flag in ("--array=0-9%3", "--partition=gpu", "--account=cs101", "--time=1:00:00", "--gres=gpu:2",
                 "--cpus-per-task=16", "--qos=short", "--job-name=scangrade-hw3", "--ntasks=1",
                 f"--output={tmp_path / 'logs' / 'task-%A_%a.out'}"):
        assert flag in cmd, flag
    fin = slurm.finish_command(opts, "4242", tmp_path / "finish.sh", tmp_path / "logs", "scangrade-hw3")
    assert "--dependency=afterany:4242" in fin and "--partition=gpu" in fin and "--qos=short" in fin
    assert not any(a.startswith("--gres") for a in fin)                 # the gradebook needs no GPU
    emulated = slurm.array_command(slurm.Options(), 2, tmp_path / "t.sh", tmp_path, "x")
    assert "--array=0-1" in emulated and not any(a.startswith(("--gres", "--cpus", "--partition")) for a in emulated)


def test_slurms_answers_are_read():
    sacct = "77_0|COMPLETED|0:0|None\n77_1|CANCELLED by 0|0:15|None\n77_2|TIMEOUT|0:0|TimeLimit\n77_[3-5%2]|PENDING|0:0|JobArrayTaskLimit\n"
    states = slurm.parse_sacct(sacct, "77")
    assert sorted(states) == [0, 1, 2]
    assert states[1].state == "CANCELLED" and states[1].exit_code == "0:15"
    assert states[2].describe() == "TIMEOUT (ExitCode 0:0, Reason TimeLimit; sacct)"
    scontrol = ("JobId=80 ArrayJobId=77 ArrayTaskId=1 JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0 Partition=gpu\n"
                "JobId=77 ArrayJobId=77 ArrayTaskId=2-5%2 JobState=PENDING Reason=JobArrayTaskLimit ExitCode=0:0\n"
                "JobId=90 ArrayJobId=12 ArrayTaskId=1 JobState=COMPLETED Reason=None ExitCode=0:0\n")
    states = slurm.parse_scontrol(scontrol, "77")
    assert list(states) == [1] and states[1].state == "NODE_FAIL" and states[1].reason == "NodeDown"
    assert [slurm.count_tasks(j) for j in ("77_3", "77_[3-5%2]", "77_[0,4-6]", "77_[0-8:4]")] == [1, 3, 4, 3]


@pytest.mark.parametrize("flags, message", [
    (["--slurm"], "--slurm needs --backend gpu or --backend emulate"),
    (["--slurm", "--backend", "gpu", "--gpus", "0"], "use --gpus-per-task"),
    (["--slurm", "--backend", "emulate", "--gpus-per-task", "1"], "leave out --gpus-per-task"),
    (["--slurm", "--backend", "gpu", "--gpus-per-task", "0"], "--gpus-per-task 1 or more"),
    (["--partition", "gpu"], "--partition apply to --slurm"),
    (["--slurm", "--backend", "emulate", "--tasks", "0"], "--tasks must be at least 1"),
    (["--slurm", "--slurm-finish", "--backend", "emulate"], "do not go together"),
    (["--shard", "1"], "--shard needs --plan"),
])
def test_flag_rules(tmp_path, flags, message):
    r = subprocess.run([sys.executable, str(BATCH), str(tmp_path), "--out", str(tmp_path / "o"), *flags],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stderr, r.stderr


# --- whole runs with stand-in Slurm commands -----------------------------------------------------------------------

# sbatch logs its arguments and prints the next job id (";cluster" as --parsable does on a federation),
# or fails with $FAKE_SBATCH_FAIL; squeue prints $FAKE_SQUEUE; sacct prints the file $FAKE_SACCT, or
# says accounting is off; scontrol knows no job; scancel logs.
FAKE_SLURM = {
    "sbatch": r'''
import json, os, sys
from pathlib import Path
log = Path(os.environ["FAKE_SLURM_LOG"])
if os.environ.get("FAKE_SBATCH_FAIL"):
    print(os.environ["FAKE_SBATCH_FAIL"], file=sys.stderr)
    sys.exit(1)
n = len(log.read_text().splitlines()) if log.exists() else 0
with open(log, "a") as f:
    f.write(json.dumps(["sbatch", *sys.argv[1:]]) + "\n")
print(f"{500 + n};testcluster")
''',
    "squeue": r'''
import os
print(os.environ.get("FAKE_SQUEUE", ""), end="")
''',
    "sacct": r'''
import os, sys
from pathlib import Path
if os.environ.get("FAKE_SACCT"):
    print(Path(os.environ["FAKE_SACCT"]).read_text(), end="")
else:
    print("Slurm accounting storage is disabled", file=sys.stderr)
    sys.exit(1)
''',
    "scontrol": r'''
import sys
print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
sys.exit(1)
''',
    "scancel": r'''
import json, os, sys
with open(os.environ["FAKE_SLURM_LOG"], "a") as f:
    f.write(json.dumps(["scancel", *sys.argv[1:]]) + "\n")
''',
}


@pytest.fixture
def fake_slurm(tmp_path, fake_build_dir):
    """A class of five, the fake judge, and Slurm commands that only pretend."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKE_SLURM.items():
        write_script(bin_dir / name, body)
    judge = write_script(tmp_path / "tools" / "fake_batch_judge", FAKE_JUDGE)
    tc_path = fake_build_dir / "grading" / "toolchain.json"
    tc_path.write_text(json.dumps(dict(json.loads(tc_path.read_text()), judge=str(judge))))
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(GRADING / "tests"),
               FAKE_COUNTER=str(tmp_path / "counter.txt"), FAKE_LOCKLOG=str(tmp_path / "locks.txt"),
               FAKE_SLURM_LOG=str(tmp_path / "slurm.log"))
    for var in [v for v in env if v.startswith(("SLURM_", "SBATCH_", "CUDA_VISIBLE"))]:
        env.pop(var)
    subs = tmp_path / "subs"
    for i in range(5):
        write_tree(subs / f"s{i}", GOOD)
    return {"env": env, "build": fake_build_dir, "subs": subs, "out": tmp_path / "out", "tmp": tmp_path}


def submit(fake, *extra, env_extra=None):
    return subprocess.run([sys.executable, str(BATCH), str(fake["subs"]), "--out", str(fake["out"]),
                           "--build-dir", str(fake["build"]), "--backend", "emulate", "--slurm", "--no-wait",
                           *extra], capture_output=True, text=True, timeout=120, env=dict(fake["env"], **(env_extra or {})))


def sbatch_calls(fake) -> list[list[str]]:
    log = fake["tmp"] / "slurm.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run_as_slurm(fake, script: Path, env_extra: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(script)], capture_output=True, text=True, timeout=120,
                          env=dict(fake["env"], **env_extra))


def graded_by_judge(fake) -> list[str]:
    counter = fake["tmp"] / "counter.txt"
    lines = counter.read_text().splitlines() if counter.exists() else []
    return [line.split()[0] for line in lines if line.split()[0] != "preflight"]


def read_book(out: Path) -> dict[str, dict]:
    with open(out / "gradebook.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def test_a_run_submits_one_array_and_a_dependent_job_and_its_tasks_grade_their_shards(fake_slurm):
    r = submit(fake_slurm, "--tasks", "2", "--jobs", "2", "--partition", "gpu", "--account", "cs101",
               "--time", "0:30:00", "--array-parallel", "1", "--sbatch-arg=--qos=short")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "500\n"                                   # the array job's id, for scripts
    array, finish = sbatch_calls(fake_slurm)
    assert "--array=0-1%1" in array and "--cpus-per-task=2" in array and "--qos=short" in array
    assert "--partition=gpu" in array and "--account=cs101" in array and "--time=0:30:00" in array
    assert not any(a.startswith("--gres") for a in array)
    assert "--dependency=afterany:500" in finish
    (run,) = [p.parent for p in (fake_slurm["out"] / "slurm").glob("*/job.json")]
    job = json.loads((run / "job.json").read_text())
    assert job == dict(job, array_job="500", finish_job="501", tasks=2, students=5)
    plan = json.loads((run / "plan.json").read_text())
    assert sorted(len(s["students"]) for s in plan["shards"]) == [2, 3]
    assert not (fake_slurm["out"] / "gradebook.csv").exists()

    for k in (0, 1):   # what Slurm does with task.sh
        t = run_as_slurm(fake_slurm, run / "task.sh", {"SLURM_ARRAY_TASK_ID": str(k), "SLURM_ARRAY_JOB_ID": "500",
                                                       "SLURM_CPUS_PER_TASK": "2"})
        assert t.returncode == 0, t.stderr
        assert f"task {k} on" in t.stderr and not (fake_slurm["out"] / "gradebook.csv").exists()
    assert sorted(graded_by_judge(fake_slurm)) == [f"s{i}" for i in range(5)]
    assert not (fake_slurm["out"] / "locks").exists()          # each task keeps its GPU locks to itself
    f = run_as_slurm(fake_slurm, run / "finish.sh", {"SLURM_JOB_ID": "501"})
    assert f.returncode == 0, f.stderr
    book = read_book(fake_slurm["out"])
    assert {sid: (row["outcome"], row["run"]) for sid, row in book.items()} == \
           {f"s{i}": ("graded", "graded") for i in range(5)}
    record = json.loads((fake_slurm["out"] / "batch.json").read_text())
    assert record["slurm"]["array_job"] == "500" and len(record["slurm"]["tasks"]) == 2
    assert len((fake_slurm["out"] / "batch.log").read_text().splitlines()) == 5
    # finishing again (this command and the dependent job may both do it) changes nothing
    assert run_as_slurm(fake_slurm, run / "finish.sh", {}).returncode == 0
    assert len((fake_slurm["out"] / "batch.log").read_text().splitlines()) == 5
    # by hand, with only --out: the same run
    h = subprocess.run([sys.executable, str(BATCH), "--out", str(fake_slurm["out"]), "--slurm-finish"],
                       capture_output=True, text=True, timeout=120, env=fake_slurm["env"])
    assert h.returncode == 0, h.stderr
    assert read_book(fake_slurm["out"]) == book


def test_students_of_a_task_that_died_are_listed_and_graded_by_the_next_run(fake_slurm):
    r = submit(fake_slurm, "--tasks", "2")
    assert r.returncode == 0, r.stderr
    (run,) = [p.parent for p in (fake_slurm["out"] / "slurm").glob("*/job.json")]
    plan = json.loads((run / "plan.json").read_text())
    t = run_as_slurm(fake_slurm, run / "task.sh", {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "500"})
    assert t.returncode == 0, t.stderr
    (run / "logs" / "task-500_1.out").write_text("slurmstepd: error: *** JOB 502 ON node7 CANCELLED DUE TO NODE FAILURE ***\n")
    sacct = fake_slurm["tmp"] / "sacct.txt"
    sacct.write_text("500_0|COMPLETED|0:0|None\n500_1|NODE_FAIL|0:0|None\n")
    f = run_as_slurm(fake_slurm, run / "finish.sh", {"FAKE_SACCT": str(sacct)})
    assert f.returncode == EXIT_SLURM, f.stderr
    lost = plan["shards"][1]["students"]
    book = read_book(fake_slurm["out"])
    for sid, row in book.items():
        assert (row["outcome"], row["run"]) == (("not_graded", "not_run") if sid in lost else ("graded", "graded"))
    assert "NODE_FAIL" in f.stderr and "CANCELLED DUE TO NODE FAILURE" in f.stderr
    assert "run the same command again" in f.stderr
    # the next run grades only those
    done = graded_by_judge(fake_slurm)
    r = submit(fake_slurm, "--tasks", "2")
    assert r.returncode == 0, r.stderr
    runs = sorted(p.parent for p in (fake_slurm["out"] / "slurm").glob("*/job.json"))
    plan2 = json.loads((runs[-1] / "plan.json").read_text())
    assert sorted(s for shard in plan2["shards"] for s in shard["students"]) == sorted(lost)
    for k in range(len(plan2["shards"])):
        assert run_as_slurm(fake_slurm, runs[-1] / "task.sh", {"SLURM_ARRAY_TASK_ID": str(k)}).returncode == 0
    assert sorted(graded_by_judge(fake_slurm)[len(done):]) == sorted(lost)
    assert run_as_slurm(fake_slurm, runs[-1] / "finish.sh", {}).returncode == 0
    book = read_book(fake_slurm["out"])
    assert {sid for sid, row in book.items() if row["run"] == "graded"} == set(lost)
    assert all(row["outcome"] == "graded" for row in book.values())


def test_sbatch_refusing_the_job_is_an_error_with_its_message(fake_slurm):
    msg = "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"
    r = submit(fake_slurm, env_extra={"FAKE_SBATCH_FAIL": msg})
    assert r.returncode == EXIT_SLURM
    assert msg in r.stderr and "nothing was submitted" in r.stderr
    assert not (fake_slurm["out"] / "slurm").exists() or not any((fake_slurm["out"] / "slurm").iterdir())


def test_a_class_still_in_the_queue_is_not_submitted_twice(fake_slurm):
    assert submit(fake_slurm).returncode == 0
    r = submit(fake_slurm, env_extra={"FAKE_SQUEUE": "500_0|RUNNING\n500_[1-3]|PENDING\n"})
    assert r.returncode == EXIT_SLURM and "is still grading this class" in r.stderr and "scancel 500" in r.stderr
    assert len(sbatch_calls(fake_slurm)) == 2          # the first run's two jobs only


def test_gpu_tasks_ask_for_gres_and_grade_on_the_gpus_slurm_gives(fake_slurm):
    r = subprocess.run([sys.executable, str(BATCH), str(fake_slurm["subs"]), "--out", str(fake_slurm["out"]),
                        "--build-dir", str(fake_slurm["build"]), "--backend", "gpu", "--slurm", "--no-wait",
                        "--tasks", "1", "--formats", "none"], capture_output=True, text=True, timeout=120,
                       env=fake_slurm["env"])
    assert r.returncode == 0, r.stderr
    array, _finish = sbatch_calls(fake_slurm)
    assert "--gres=gpu:1" in array
    (run,) = [p.parent for p in (fake_slurm["out"] / "slurm").glob("*/job.json")]
    t = run_as_slurm(fake_slurm, run / "task.sh", {"SLURM_ARRAY_TASK_ID": "0", "CUDA_VISIBLE_DEVICES": "3",
                                                   "SLURM_CPUS_PER_TASK": "4"})
    assert t.returncode == 0, t.stderr
    header = json.loads((run / "records" / "task-0.jsonl").read_text().splitlines()[0])
    assert header["gpus"] == ["3"] and header["jobs"] == 4 and header["judges_per_gpu"] == 4


def test_repositories_are_taken_once_at_submission_and_keep_their_columns(fake_slurm):
    from test_repos import Remote
    ann = Remote(fake_slurm["tmp"], "ann")
    ann.commit(GOOD, "2025-03-01T20:00:00+00:00")
    ann.push()
    class_list = fake_slurm["tmp"] / "class.txt"
    class_list.write_text(f"ann {ann.url}\nbob {(fake_slurm['tmp'] / 'server' / 'bob.git').as_uri()}\n")
    r = subprocess.run([sys.executable, str(BATCH), "--repos", str(class_list), "--out", str(fake_slurm["out"]),
                        "--build-dir", str(fake_slurm["build"]), "--backend", "emulate", "--slurm", "--no-wait"],
                       capture_output=True, text=True, timeout=120, env=fake_slurm["env"])
    assert r.returncode == 0, r.stderr
    (run,) = [p.parent for p in (fake_slurm["out"] / "slurm").glob("*/job.json")]
    assert "--repos" not in (run / "task.sh").read_text()          # the tasks grade the exported folders
    assert run_as_slurm(fake_slurm, run / "task.sh", {"SLURM_ARRAY_TASK_ID": "0"}).returncode == 0
    f = run_as_slurm(fake_slurm, run / "finish.sh", {})
    assert f.returncode == 1, f.stderr                  # as a local --repos batch: bob could not be taken
    book = read_book(fake_slurm["out"])
    assert book["ann"]["outcome"] == "graded" and book["ann"]["commit"] and book["ann"]["commit_rule"] == "tip"
    assert book["bob"]["run"] == "not_taken" and book["bob"]["repo_error"]
    assert graded_by_judge(fake_slurm) == ["ann"]


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are claimed only as root (otherwise student code runs as the grader)")
def test_batches_on_one_machine_never_share_sandbox_uids(tmp_path):
    """Two Slurm tasks on one node (or two batches on one host) each hold their own uid blocks: a
    sandbox's end kills every process of its uid, which must never be another judge's worker."""
    from scangrade.batch_seats import UID_BLOCK, claim_sandbox_uids
    first, held1 = claim_sandbox_uids(3, (tmp_path,))
    second, held2 = claim_sandbox_uids(UID_BLOCK + 1, (tmp_path,))      # two blocks
    assert len(first) == 3 and len(second) == UID_BLOCK + 1 and not set(first) & set(second)
    for f in held1:
        f.close()
    third, held3 = claim_sandbox_uids(2, (tmp_path,))                    # the first batch's block is free again
    assert third == first[:2]
    # another process sees the same locks
    code = ("import sys; from pathlib import Path; from scangrade.batch_seats import claim_sandbox_uids; "
            "print(claim_sandbox_uids(1, (Path(sys.argv[1]),))[0][0])")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(GRADING)))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) not in set(second) | set(third)
    for f in held2 + held3:
        f.close()
