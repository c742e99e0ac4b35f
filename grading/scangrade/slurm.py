"""Grading a class on a Slurm cluster: what batch.py --slurm asks of Slurm and reads back.

batch.py --slurm splits the students to grade into shards (shard_students: balanced by expected
work, deterministic), writes a run folder OUT/slurm/<run>/ (plan.json, task.sh, finish.sh, logs/,
records/) and submits ONE array job through sbatch --parsable: array task K runs
`batch.py <same options> --plan OUT/slurm/<run>/plan.json --shard K`, a local batch of shard K
only. A second job, --dependency=afterany:<array job>, runs `batch.py ... --slurm-finish`, which
writes the gradebook and the report from the shared folder once every task has ended.

This module only speaks to Slurm (sbatch, squeue, sacct, scontrol, scancel) and keeps the run
folder's files; batch_slurm.py plans, submits, waits and finishes, and each task grades its shard as a
local batch (batch_local.py). No ssh, no scheduling of its own: Slurm places the tasks.

Task states come from sacct (State, ExitCode, Reason) when the cluster keeps accounting, else from
scontrol show job (slurmctld keeps ended jobs for MinJobAge, 300 s by default).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PLAN_VERSION = 1
STUDENTS_PER_TASK = 16        # --tasks default: one array task per this many students to grade
SLURM_TIMEOUT_S = 60          # one sbatch, squeue, sacct or scontrol call
ACTIVE_STATES = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
                 "SIGNALING", "STAGE_OUT", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT"}


class SlurmError(Exception):
    """A Slurm command failed; the message is Slurm's own (its stderr), prefixed by what we asked."""


@dataclass
class Options:
    """batch.py's Slurm flags, as sbatch options."""
    partition: str | None = None
    account: str | None = None
    time: str | None = None               # per task, any sbatch --time format
    gpus_per_task: int = 0                # --gres=gpu:N (0: none, the emulation backend)
    cpus_per_task: int | None = None      # batch.py --jobs, when given
    array_parallel: int | None = None     # %M: array tasks running at once
    sbatch_args: list[str] = field(default_factory=list)

    def common(self) -> list[str]:
        """The options both jobs get: where they run and who pays."""
        out = []
        if self.partition:
            out.append(f"--partition={self.partition}")
        if self.account:
            out.append(f"--account={self.account}")
        if self.time:
            out.append(f"--time={self.time}")
        return out + list(self.sbatch_args)


# --- shards ---------------------------------------------------------------------------------------------

def shard_students(costs: dict[str, float], tasks: int) -> list[list[str]]:
    """Split students (id -> expected seconds) into at most `tasks` shards of about equal expected
    work: longest first, each to the shard with the least work so far (ties: the lower shard); the
    same costs always give the same shards. No shard is empty; each lists its students by id."""
    tasks = max(1, min(tasks, len(costs)))
    loads = [0.0] * tasks
    shards: list[list[str]] = [[] for _ in range(tasks)]
    for sid in sorted(costs, key=lambda s: (-costs[s], s)):
        k = min(range(tasks), key=lambda i: (loads[i], i))
        shards[k].append(sid)
        loads[k] += costs[sid]
    return [sorted(s) for s in shards]


# --- commands -------------------------------------------------------------------------------------------

def array_command(opts: Options, tasks: int, script: Path, logs: Path, name: str) -> list[str]:
    """sbatch for the array job: task K grades shard K."""
    array = f"0-{tasks - 1}" + (f"%{opts.array_parallel}" if opts.array_parallel else "")
    cmd = ["sbatch", "--parsable", f"--job-name={name}", f"--array={array}",
           f"--output={logs / 'task-%A_%a.out'}", "--ntasks=1", *opts.common()]
    if opts.cpus_per_task:
        cmd.append(f"--cpus-per-task={opts.cpus_per_task}")
    if opts.gpus_per_task:
        cmd.append(f"--gres=gpu:{opts.gpus_per_task}")
    return cmd + [str(script)]


def finish_command(opts: Options, array_job: str, script: Path, logs: Path, name: str) -> list[str]:
    """sbatch for the job that writes the gradebook once every array task has ended, however."""
    return ["sbatch", "--parsable", f"--job-name={name}-finish", f"--dependency=afterany:{array_job}",
            f"--output={logs / 'finish-%j.out'}", "--ntasks=1", "--cpus-per-task=1", *opts.common(), str(script)]


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=SLURM_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError(f"{what}: {cmd[0]} not found: is this a Slurm login node (PATH)?") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise SlurmError(f"{what}: {shlex.join(cmd)}: {exc}") from None


def submit(cmd: list[str]) -> str:
    """Run sbatch --parsable; the job id (without the cluster name). Raises SlurmError with sbatch's
    stderr when it refuses the job."""
    r = _run(cmd, "sbatch")
    job = r.stdout.strip().split(";")[0]
    if r.returncode != 0 or not job.isdigit():
        msg = (r.stderr.strip() or r.stdout.strip() or f"exit status {r.returncode}")
        raise SlurmError(f"sbatch refused the job (exit {r.returncode}): {msg}")
    return job


def cancel_pending(job: str) -> None:
    """Cancel the job if it has not started (the finish job, when the submitting command finishes)."""
    try:
        _run(["scancel", "--state=PENDING", job], "scancel")
    except SlurmError:
        pass


def write_script(path: Path, argv: list[str], comment: str) -> Path:
    path.write_text(f"#!/bin/sh\n# {comment}\nexec {shlex.join(argv)}\n")
    path.chmod(0o755)
    return path


# --- states ---------------------------------------------------------------------------------------------

@dataclass
class TaskState:
    task: int
    state: str          # COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PENDING, RUNNING ...
    exit_code: str = ""  # sacct's and scontrol's ExitCode: status:signal
    reason: str = ""
    source: str = ""    # sacct | scontrol

    def describe(self) -> str:
        extra = [f"ExitCode {self.exit_code}"] if self.exit_code else []
        if self.reason and self.reason not in ("None", "(null)"):
            extra.append(f"Reason {self.reason}")
        return f"{self.state}" + (f" ({', '.join(extra)}; {self.source})" if extra else f" ({self.source})")


def _task_of(job_field: str, job: str) -> int | None:
    m = re.fullmatch(rf"{re.escape(job)}_(\d+)", job_field.strip())
    return int(m.group(1)) if m else None


def parse_sacct(text: str, job: str) -> dict[int, TaskState]:
    """sacct -X -n -P -o JobID,State,ExitCode,Reason: one row per array task (a pending remainder such
    as 12_[3-9%2] is left out)."""
    states = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 3:
            continue
        k = _task_of(parts[0], job)
        if k is not None:
            state = parts[1].split()[0] if parts[1].strip() else "UNKNOWN"   # "CANCELLED by 0"
            states[k] = TaskState(k, state, parts[2], parts[3] if len(parts) > 3 else "", "sacct")
    return states


def parse_scontrol(text: str, job: str) -> dict[int, TaskState]:
    """scontrol -o show job ARRAY_JOB: one line per task record (JobState, Reason, ExitCode)."""
    states = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("ArrayJobId") != job or not fields.get("ArrayTaskId", "").isdigit():
            continue
        k = int(fields["ArrayTaskId"])
        states[k] = TaskState(k, fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", ""),
                              fields.get("Reason", ""), "scontrol")
    return states


def task_states(job: str) -> tuple[dict[int, TaskState], str]:
    """Every array task's state: sacct, else scontrol. Returns (states, why neither answered)."""
    why = []
    try:
        r = _run(["sacct", "-j", job, "-X", "-n", "-P", "-o", "JobID,State,ExitCode,Reason"], "sacct")
        states = parse_sacct(r.stdout, job) if r.returncode == 0 else {}
        if states:
            return states, ""
        why.append(f"sacct: {r.stderr.strip() or 'no record'}")
    except SlurmError as exc:
        why.append(str(exc))
    try:
        r = _run(["scontrol", "-o", "show", "job", job], "scontrol")
        states = parse_scontrol(r.stdout, job) if r.returncode == 0 else {}
        if states:
            return states, ""
        why.append(f"scontrol: {r.stderr.strip() or 'no record'}")
    except SlurmError as exc:
        why.append(str(exc))
    return {}, "; ".join(why)


def queued(job: str) -> dict[str, str] | None:
    """The array's tasks still known to squeue (task id or pending range -> state); {} when none is
    left; None when squeue did not answer (the caller asks again)."""
    try:
        r = _run(["squeue", "-h", "-r", "-j", job, "-o", "%i|%T"], "squeue")
    except SlurmError:
        return None
    if r.returncode != 0:
        # an ended job that slurmctld has already forgotten
        return {} if "Invalid job id" in r.stderr else None
    out = {}
    for line in r.stdout.splitlines():
        if "|" in line:
            jid, state = line.split("|", 1)
            out[jid.strip()] = state.strip()
    return out


def count_tasks(job_field: str) -> int:
    """How many array tasks one squeue row stands for: 12_3 is one, a pending 12_[4-9,11%2] is seven."""
    m = re.search(r"_\[([^\]]*)\]", job_field)
    if not m:
        return 1
    n = 0
    for part in m.group(1).split("%")[0].split(","):
        a, _, b = part.partition("-")
        step = 1
        if ":" in b:
            b, _, st = b.partition(":")
            step = int(st) if st.isdigit() and int(st) > 0 else 1
        if a.isdigit() and (not b or b.isdigit()):
            n += (int(b) - int(a)) // step + 1 if b else 1
    return max(n, 1)


# --- the run folder ---------------------------------------------------------------------------------------

def new_run_dir(out: Path) -> Path:
    """OUT/slurm/<UTC time>-<pid>: one per submission, so a task always reads its own plan."""
    run = out / "slurm" / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}"
    (run / "logs").mkdir(parents=True)
    (run / "records").mkdir()
    return run


def latest_run_dir(out: Path) -> Path | None:
    """The newest run folder that was submitted (has job.json)."""
    runs = sorted(p.parent for p in (out / "slurm").glob("*/job.json"))
    return runs[-1] if runs else None


def read_json(path: Path) -> dict:
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a JSON object")
    return doc


def records_path(run: Path, task: int) -> Path:
    return run / "records" / f"task-{task}.jsonl"


def read_records(run: Path) -> tuple[dict[int, dict], dict[str, dict]]:
    """What the tasks wrote: per task its header (node, start time, GPUs), per student its last
    finished record. A line cut short by a killed task is skipped."""
    headers: dict[int, dict] = {}
    students: dict[str, dict] = {}
    for path in sorted((run / "records").glob("task-*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            if "task_header" in rec:
                headers[int(rec["task_header"])] = rec
            elif isinstance(rec.get("student_id"), str):
                students[rec["student_id"]] = rec
    return headers, students


def last_log_line(path: Path, limit: int = 300) -> str:
    try:
        lines = [l.strip() for l in path.read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return ""
    return lines[-1][:limit] if lines else ""
