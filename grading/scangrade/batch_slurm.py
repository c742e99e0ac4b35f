"""A class graded on a Slurm cluster: batch.py --slurm plans the shards and submits the jobs
(slurm_submit), waits for them (slurm_wait); each array task grades one shard as a local batch
(slurm_shard); the gradebook comes from what the tasks graded (slurm_finish, finish_class), a student
left ungraded showing its task's Slurm state (explain_not_run). What is asked of Slurm itself is in
slurm.py.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .batch_class import EXIT_OK, EXIT_SLURM, Setup, Stop, load_inputs, pick_gpus, resolve_jobs, write_class
from .batch_local import Batch, current_stamp
from .batch_seats import expected_judge_s, previous_judge_s
from .build import Recipe
from .results import ResultsError, load_results
from .files import write_atomic
from .gradebook import Student
from .lms import Entry
from . import instructor
from . import repos as repomod
from . import slurm
from .vocab import EXIT_BAD_INPUT, EXIT_INTERNAL

REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)

BATCH_SCRIPT = REPO / "grading" / "batch.py"
SHARD_OVERHEAD_S = 10.0     # what a student costs besides its judge (unpack, compile, worker start), roughly


def run_argv(args: argparse.Namespace, backend: str) -> list[str]:
    """batch.py's command line for a run's jobs: this run's settings, no Slurm flags (each job adds its
    mode: --plan for a shard, --slurm-finish)."""
    argv = [sys.executable, str(BATCH_SCRIPT), str(args.submissions.resolve()), "--out", str(args.out),
            "--backend", backend, "--build-dir", str(args.build_dir.resolve()), "--budget-s", f"{args.budget_s:g}",
            "--compile-timeout", f"{args.compile_timeout:g}", "--formats", ",".join(args.formats) or "none",
            "--resume" if args.resume else "--no-resume", "--sandbox", args.sandbox, "--bwrap", args.bwrap]
    for suite in args.suite:
        argv += ["--suite", str(suite)]
    for suite in args.hidden_suite:
        argv += ["--hidden-suite", str(suite)]
    if args.secret_file:
        argv += ["--secret-file", str(args.secret_file.resolve())]
    for flag, value in (("--jobs", args.jobs_given), ("--judges-per-gpu", args.judges_per_gpu),
                        ("--max-n", args.max_n), ("--threshold", args.threshold)):
        if value is not None:
            argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    argv += instructor.argv(args)   # --roster, --similarity, ...: the finishing job writes those files
    return argv + (["--quiet"] if args.quiet else [])


def entry_record(e: Entry) -> dict:
    return {"raw_name": e.raw_name, "path": str(e.path), "kind": e.kind, "student_id": e.student_id, "lms": e.lms,
            "notes": list(e.notes)}


def entry_from(rec: dict) -> Entry:
    return Entry(rec["raw_name"], Path(rec["path"]), rec["kind"], rec["student_id"], rec["lms"], list(rec["notes"]))


def intake_record(it: repomod.Intake) -> dict:
    return {**dataclasses.asdict(it), "folder": str(it.folder) if it.folder else None}


def intake_from(rec: dict) -> repomod.Intake:
    rec = dict(rec)
    spec = repomod.RepoSpec(**rec.pop("spec"))
    folder = rec.pop("folder")
    return repomod.Intake(spec=spec, folder=Path(folder) if folder else None, **rec)


def shard_costs(students: list[Student], weights: dict[str, float]) -> dict[str, float]:
    """Each student's expected seconds, for the shards: the judge's time at the last grading (old
    stamp), else the weight of the slots that compiled last time (build.json), else of every slot,
    weights turned into seconds by the median ratio seen in this class (1 when none is known), plus a
    fixed cost for unpacking and compiling."""
    full = sum(weights.values())
    known, ratios = {}, []
    for st in students:
        prev = previous_judge_s(st.out / "stamp.json")
        built = expected_judge_s(st.out / "build.json", weights, None) if (st.out / "build.json").is_file() else None
        known[st.entry.student_id] = (prev, built)
        if prev is not None and built:
            ratios.append(prev / built)
    factor = sorted(ratios)[len(ratios) // 2] if ratios else 1.0
    return {sid: SHARD_OVERHEAD_S + (prev if prev is not None else factor * (built if built is not None else full))
            for sid, (prev, built) in known.items()}


def slurm_options(args: argparse.Namespace) -> slurm.Options:
    return slurm.Options(partition=args.partition, account=args.account, time=args.time,
                         gpus_per_task=args.gpus_per_task, cpus_per_task=args.jobs_given,
                         array_parallel=args.array_parallel, sbatch_args=list(args.sbatch_arg))


def refuse_if_queued(out: Path) -> None:
    """Stop when the class's last Slurm run is still in the queue (two runs would grade the same students)."""
    previous = slurm.latest_run_dir(out)
    if previous is None:
        return
    with contextlib.suppress(OSError, ValueError, KeyError):
        job = slurm.read_json(previous / "job.json")
        left = slurm.queued(str(job["array_job"]))
        if left:
            raise Stop(EXIT_SLURM, f"job {job['array_job']} ({previous}) is still grading this class "
                       f"({', '.join(sorted(set(left.values())))}): wait for it to end, or scancel "
                       f"{job['array_job']}, then run this again")
        if left is None:
            log.warning("squeue did not answer: cannot tell whether job %s still runs", job["array_job"])


def make_plan(args: argparse.Namespace, setup: Setup, costs: dict[str, float], current: list[str]) -> dict:
    """plan.json: the run's command line, the class, and the students to grade in shards of about equal cost."""
    tasks = args.tasks or -(-len(costs) // slurm.STUDENTS_PER_TASK)
    shards = slurm.shard_students(costs, tasks)
    return {"plan_version": slurm.PLAN_VERSION, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "argv": run_argv(args, setup.backend), "backend": setup.backend,
            "class": [entry_record(e) for e in setup.entries],
            "intakes": [intake_record(it) for it in setup.intakes], "current_at_submit": sorted(current),
            "shards": [{"task": k, "students": shard, "expected_s": round(sum(costs[s] for s in shard), 1)}
                       for k, shard in enumerate(shards)]}


def slurm_submit(args: argparse.Namespace, setup: Setup) -> int:
    """Plan the shards, submit the array job and the job that finishes it; wait unless --no-wait."""
    out = args.out
    refuse_if_queued(out)
    batch = Batch(args, setup.toolchain, setup.recipe, setup.backend, [])
    students = [Student(e, out / "students" / e.student_id) for e in setup.entries]
    current: list[str] = []
    to_grade: list[Student] = []
    for st in students:
        batch.stamp(st)
        if args.resume and current_stamp(st) is not None:
            current.append(st.entry.student_id)
        else:
            to_grade.append(st)
    costs = shard_costs(to_grade, batch.weights)
    batch.close()
    if current:
        log.info("%d student(s) already graded with these settings (stamp.json): not graded again", len(current))
    if not to_grade:
        log.info("nothing to grade on the cluster: writing the gradebook")
        return finish_class(args, setup.toolchain, setup.recipe, setup.backend, setup.entries, setup.intakes,
                            None, {}, {})
    plan = make_plan(args, setup, costs, current)
    argv, shards = plan["argv"], [s["students"] for s in plan["shards"]]
    opts = slurm_options(args)
    name = f"scangrade-{out.name}"
    run = slurm.new_run_dir(out)
    plan_path = run / "plan.json"
    try:
        write_atomic(plan_path, json.dumps(plan, indent=1) + "\n")
        task_sh = slurm.write_script(run / "task.sh", [*argv, "--plan", str(plan_path)],
                                     "one shard of the class: $SLURM_ARRAY_TASK_ID picks it (scangrade batch.py --slurm)")
        finish_sh = slurm.write_script(run / "finish.sh", [*argv, "--slurm-finish", "--plan", str(plan_path)],
                                       "the gradebook and report once every task has ended (scangrade batch.py --slurm)")
        array_job = slurm.submit(slurm.array_command(opts, len(shards), task_sh, run / "logs", name))
    except slurm.SlurmError as exc:
        shutil.rmtree(run, ignore_errors=True)
        raise Stop(EXIT_SLURM, f"{exc}\nnothing was submitted and nothing in {out} changed") from None
    except BaseException:
        shutil.rmtree(run, ignore_errors=True)   # a run folder that was never submitted
        raise
    job = {"array_job": array_job, "finish_job": None, "tasks": len(shards), "students": len(to_grade),
           "submitted_at": time.time(), "plan": str(plan_path)}
    write_atomic(run / "job.json", json.dumps(job, indent=1) + "\n")
    log.info("submitted job %s: %d task(s) grading %d student(s) (%s; logs in %s)", array_job, len(shards),
             len(to_grade), "+".join(str(len(s)) for s in shards), run / "logs")
    finish_problem = ""
    try:
        job["finish_job"] = slurm.submit(slurm.finish_command(opts, array_job, finish_sh, run / "logs", name))
        write_atomic(run / "job.json", json.dumps(job, indent=1) + "\n")
        log.info("submitted job %s: writes the gradebook once job %s has ended", job["finish_job"], array_job)
    except slurm.SlurmError as exc:
        finish_problem = str(exc)
    if not args.wait:
        if finish_problem:
            raise Stop(EXIT_SLURM, f"the job that writes the gradebook was not submitted: {finish_problem}\n"
                       f"job {array_job} grades the class; once it has ended, run this command again with "
                       f"--slurm-finish (in place of --slurm) to write the gradebook")
        log.info("not waiting: %s and %s appear when job %s has ended (squeue -j %s)", out / "gradebook.csv",
                 out / "report.html", job["finish_job"], array_job)
        print(array_job, flush=True)   # as sbatch --parsable: for a script's --dependency
        return EXIT_OK
    if finish_problem:
        log.warning("the job that writes the gradebook was not submitted (%s): this command writes it", finish_problem)
    return slurm_wait(args, setup, run, plan, job)


def slurm_wait(args: argparse.Namespace, setup: Setup, run: Path, plan: dict, job: dict) -> int:
    """Wait for the array job (progress from squeue and the tasks' records), then finish here."""
    array_job = job["array_job"]
    total = sum(len(s["students"]) for s in plan["shards"])
    last, silent, seen, gone = "", 0, False, 0
    try:
        while True:
            left = slurm.queued(array_job)
            _, records = slurm.read_records(run)
            if left is None:
                silent += 1
                if silent in (4, 40):
                    log.warning("squeue does not answer; still waiting for job %s", array_job)
            else:
                silent = 0
                seen = seen or bool(left)
                gone = 0 if left else gone + 1
                if not left and not seen and gone < 3:   # not listed yet: ask again before believing it ended
                    time.sleep(args.poll_s)
                    continue
                counts: dict[str, int] = {}
                for jid, state in left.items():
                    counts[state.lower()] = counts.get(state.lower(), 0) + slurm.count_tasks(jid)
                tasks = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "all ended"
                line = f"job {array_job}: tasks {tasks}; {len(records)}/{total} student(s) finished"
                if line != last and not args.quiet:
                    log.info("%s", line)
                last = line
                if not left:
                    break
            time.sleep(args.poll_s)
    except KeyboardInterrupt:
        log.error("stopped waiting; job %s keeps running%s", array_job,
                  f" and job {job['finish_job']} writes the gradebook when it ends" if job.get("finish_job") else
                  ": once it has ended, run this command with --slurm-finish in place of --slurm")
        return 130
    if job.get("finish_job"):
        slurm.cancel_pending(job["finish_job"])   # this command finishes; the job is the fallback
    return finish_class(args, setup.toolchain, setup.recipe, setup.backend, [entry_from(r) for r in plan["class"]],
                        [intake_from(r) for r in plan["intakes"]], run, plan, job)


def slurm_shard(args: argparse.Namespace) -> int:
    """One array task: grade the students of one shard of the plan, exactly as a local batch would,
    into the shared folder; its records go to the run's records/task-K.jsonl; no gradebook."""
    try:
        plan = slurm.read_json(args.plan)
    except (OSError, ValueError) as exc:
        raise Stop(EXIT_BAD_INPUT, f"--plan {args.plan}: {exc}") from None
    run = args.plan.resolve().parent
    k = args.shard
    if k is None:
        task = os.environ.get("SLURM_ARRAY_TASK_ID", "")
        if not task.isdigit():
            raise Stop(EXIT_BAD_INPUT, "--plan without --shard outside a Slurm array task ($SLURM_ARRAY_TASK_ID)")
        k = int(task)
    if not 0 <= k < len(plan["shards"]):
        raise Stop(EXIT_BAD_INPUT, f"--shard {k}: the plan has shards 0 to {len(plan['shards']) - 1}")
    ids = set(plan["shards"][k]["students"])
    entries = [entry_from(r) for r in plan["class"] if r["student_id"] in ids]
    toolchain, _judge, backend, recipe = load_inputs(args)
    resolve_jobs(args)
    gpus = pick_gpus(args, backend)
    batch = Batch(args, toolchain, recipe, backend, gpus)
    batch.log_path = slurm.records_path(run, k)
    batch.locks = batch.private / "locks"   # this task's GPUs are its own: their locks and baselines too
    header = {"task_header": k, "job": os.environ.get("SLURM_ARRAY_JOB_ID"), "node": socket.gethostname(),
              "started_at": batch.wall0, "gpus": gpus, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "jobs": args.jobs, "judges_per_gpu": args.judges_per_gpu, "students": sorted(ids)}
    with open(batch.log_path, "a") as f:
        f.write(json.dumps(header) + "\n")
    log.info("task %d on %s: %d student(s), backend %s, %d CPU slot(s), %s", k, header["node"], len(entries), backend,
             args.jobs, f"GPU(s) {','.join(gpus)}" if gpus else "emulated")

    def stopped(signum, _frame) -> None:
        # scancel, the time limit or a node going down: what is stamped stays, the rest stays ungraded
        log.error("task %d: stopped by signal %d; its unfinished students stay ungraded (rerun the command)", k, signum)
        if batch.case_cache is not None:
            shutil.rmtree(batch.case_cache, ignore_errors=True)
        shutil.rmtree(batch.private, ignore_errors=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stopped)
    # a judge that ended by SIGTERM, SIGINT or SIGHUP was stopped with the task (the grader itself stops a
    # judge only with SIGKILL): its student is not recorded, so it stays to be graded by the next run
    batch.on_judge_stopped = lambda signum: stopped(signum, None) if signum in (
        signal.SIGTERM, signal.SIGINT, signal.SIGHUP) else None
    students = batch.run(entries)
    bad = [st for st in students if st.outcome != "graded"]
    log.info("task %d: %d student(s), %d reused, %d not graded", k, len(students), sum(st.reused for st in students),
             len(bad))
    for st in bad:
        log.info("NOT GRADED %s: %s", st.entry.student_id, st.error or "internal error")
    return EXIT_INTERNAL if bad else EXIT_OK


def slurm_finish(args: argparse.Namespace, parse_args: Callable[[list[str]], argparse.Namespace]) -> int:
    """--slurm-finish: the gradebook of OUT's last run (or --plan's), with that run's own settings."""
    run = args.plan.resolve().parent if args.plan else slurm.latest_run_dir(args.out)
    if run is None:
        raise Stop(EXIT_BAD_INPUT, f"no Slurm run in {args.out / 'slurm'}: grade the class with --slurm first")
    try:
        plan = slurm.read_json(run / "plan.json")
        job = slurm.read_json(run / "job.json")
    except (OSError, ValueError) as exc:
        raise Stop(EXIT_BAD_INPUT, f"{run}: {exc}") from None
    given = args
    args = parse_args(plan["argv"][2:])
    args.quiet = given.quiet or args.quiet
    if given.threshold is not None:
        args.threshold = given.threshold
    toolchain, _judge, backend, recipe = load_inputs(args)
    return finish_class(args, toolchain, recipe, backend, [entry_from(r) for r in plan["class"]],
                        [intake_from(r) for r in plan["intakes"]], run, plan, job)


def finish_class(args: argparse.Namespace, toolchain: dict, recipe: Recipe, backend: str, entries: list[Entry],
                 intakes: list[repomod.Intake], run: Path | None, plan: dict, job: dict) -> int:
    """The gradebook from what is in the shared folder: a student whose stamp matches is graded
    (this run, or before it: reused); one its task finished without a stamp shows what the task
    said; any other is not graded, with its task's Slurm state and log."""
    resolve_jobs(args)
    headers, records = slurm.read_records(run) if run else ({}, {})
    array_job = job.get("array_job")
    states, why = slurm.task_states(array_job) if array_job else ({}, "")
    task_of = {sid: s["task"] for s in plan.get("shards", []) for sid in s["students"]}
    first = min((h["started_at"] for h in headers.values()), default=time.time())
    shift = {k: h["started_at"] - first for k, h in headers.items()}
    batch = Batch(args, toolchain, recipe, backend, [])
    students: list[Student] = []
    not_run: set[str] = set()
    for e in entries:
        st = Student(e, args.out / "students" / e.student_id)
        batch.stamp(st)
        rec = records.get(e.student_id)
        if batch.reusable(st):
            if rec is not None and not rec.get("reused"):
                st.reused = False          # graded by this run
        elif rec is not None:              # finished by its task without a stamp: the task's verdict
            st.outcome, st.flags, st.error = rec.get("outcome", "error"), rec.get("flags") or [], rec.get("error", "")
            if rec.get("score") is not None:
                with contextlib.suppress(ResultsError):
                    st.results = load_results(st.results_path, validate=False)
        else:
            not_run.add(e.student_id)
            st.outcome = "not_graded"
            st.error = explain_not_run(run, array_job, task_of.get(e.student_id), states, why, headers)
        if rec is not None and not st.reused:
            k = task_of.get(e.student_id)
            st.gpu = rec.get("gpu")
            st.phases = {p: [round(a + shift.get(k, 0.0), 3), round(b + shift.get(k, 0.0), 3)]
                         for p, (a, b) in (rec.get("phases") or {}).items()}
            st.judge_phases = rec.get("judge_phases") or st.judge_phases
        students.append(st)
    batch.close()
    if run is not None:
        append_records_once(args.out / "batch.log", run, records)

    def per_task(key: str, default):   # the tasks' own settings (each task's --jobs is its allocation's)
        return max((h.get(key) or 0 for h in headers.values()), default=0) or default

    gpus = [f"{h['node']}:{g}" for _, h in sorted(headers.items()) for g in h.get("gpus") or []]
    tasks = [{"task": s["task"], "students": len(s["students"]), "node": headers.get(s["task"], {}).get("node"),
              "state": states[s["task"]].describe() if s["task"] in states else None} for s in plan.get("shards", [])]
    head = {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(first)),
            "wall_s": round(time.time() - first, 3) if headers else 0.0, "backend": backend, "gpus": gpus,
            "jobs": per_task("jobs", args.jobs), "judges_per_gpu": per_task("judges_per_gpu", args.judges_per_gpu),
            "stamp": batch.stamp_base,
            **({"slurm": {"run": str(run), "array_job": array_job, "finish_job": job.get("finish_job"),
                          "tasks": tasks, "not_run": sorted(not_run)}} if run else {})}
    for t in tasks:
        if t["state"] and not t["state"].startswith("COMPLETED"):
            log.warning("Slurm task %d of job %s: %s (log: %s)", t["task"], array_job, t["state"],
                        run / "logs" / f"task-{array_job}_{t['task']}.out")
    return write_class(args, students, intakes, head, len(gpus), frozenset(not_run))


def explain_not_run(run: Path | None, array_job: str | None, k: int | None, states: dict[int, slurm.TaskState],
                    why: str, headers: dict[int, dict]) -> str:
    """Why a student has no grade: its task's Slurm state and the last line of its log."""
    if run is None or array_job is None or k is None:
        return "no stamp.json matches this run's settings (grade it with --slurm)"
    task = f"Slurm task {k} of job {array_job}"
    state = states.get(k)
    if state is None:
        where = f"state unknown: {why}" if why else "state unknown"
    elif state.state in slurm.ACTIVE_STATES:
        where = f"is still {state.describe()}"
    else:
        where = f"ended {state.describe()}"
    started = "" if k in headers else "; it never started grading"
    logfile = run / "logs" / f"task-{array_job}_{k}.out"
    last = slurm.last_log_line(logfile)
    return f"{task} {where} before grading it{started}; log {logfile}" + (f": {last}" if last else "")


def append_records_once(batch_log: Path, run: Path, records: dict[str, dict]) -> None:
    """The run's student records join OUT/batch.log once, whoever finishes the run (this command
    or the dependent job)."""
    try:
        fd = os.open(run / "batch-log-appended", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    os.close(fd)
    with open(batch_log, "a") as f:
        for rec in records.values():
            f.write(json.dumps(rec) + "\n")
