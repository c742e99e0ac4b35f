#!/usr/bin/env python3
"""Benchmark batch grading end to end: N submissions made from the gallery, graded by grading/batch.py.

    python3 tools/bench_batch.py [-n 100] [--backend auto|gpu|emulate] [--build-dir build] [--work DIR]
                                 [--max-n N] [--jobs N] [--gpus auto|0,1] [--judges-per-gpu N]
                                 [--budget-s S] [--with-hangs] [--target-s 150]

Each of the N submissions is a copy of a gallery entry (grading/gallery/*, cycled in name order) with
a unique comment line appended to every source file, so nothing can be reused by content; names
rotate through Canvas (.zip), Moodle (folder) and plain (.tar.gz) styles. The batch runs with
--no-resume into WORK/out; afterwards the tool reads WORK/out/batch.json and prints where the wall
time went (per phase: the sum over submissions and the wall time during which the phase ran), and
whether every copy got its gallery entry's verdicts (expected.json; emulation_verdicts on the
emulate backend). The summary table is printed last; WORK/bench.json keeps the numbers.

The hanging entry (expected verdict timeout) is left out unless --with-hangs: each of its slow cases
waits for its deadline, so it measures --budget-s, not the batch.

Exit status: 0 every copy graded with its expected verdicts, 1 some verdict did not match or
batch.py failed (missing the wall-time target is reported, not an error).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
READY = re.compile(r"worker \d+ ready ([0-9.]+) s after its start \(its own code ran ([0-9.]+|\?) s after it, its CUDA "
                   r"context ([0-9.]+) s, the policy monitor ([0-9.]+) s, the hello sent at ([0-9.]+|\?) s\)")
GALLERY = REPO / "grading" / "gallery"


def gallery_entries(with_hangs: bool) -> list[tuple[str, dict]]:
    out = []
    for folder in sorted(p for p in GALLERY.iterdir() if (p / "expected.json").is_file()):
        spec = json.loads((folder / "expected.json").read_text())
        if not with_hangs and "timeout" in spec["verdicts"].values():
            continue
        if spec.get("kind") == "exploit":   # graded with the allowlists off: gpu-check.sh batch's second class
            continue
        out.append((folder.name, spec))
    return out


def perturbed_files(entry: str, i: int) -> dict[str, bytes]:
    """student/* of a gallery entry, every source file with a unique last line."""
    files = {}
    for p in sorted((GALLERY / entry / "student").iterdir()):
        data = p.read_bytes()
        if p.suffix in (".cu", ".cuh", ".h"):
            data += f"\n// bench_batch copy {i} of {entry} ({time.time_ns()})\n".encode()
        files[f"student/{p.name}"] = data
    return files


def make_submissions(folder: Path, n: int, entries: list[tuple[str, dict]]) -> dict[str, str]:
    """Writes n submissions; returns raw name -> gallery entry."""
    folder.mkdir(parents=True)
    made = {}
    for i in range(n):
        entry = entries[i % len(entries)][0]
        files = perturbed_files(entry, i)
        style = i % 3
        if style == 0:     # Canvas: lastfirst_userid_submissionid_file.zip
            name = f"bench{i:03d}student_{10000 + i}_{50000 + i}_scan.zip"
            with zipfile.ZipFile(folder / name, "w", zipfile.ZIP_DEFLATED) as zf:
                for rel, data in files.items():
                    zf.writestr(f"hw/{rel}", data)
        elif style == 1:   # Moodle: Full Name_participantid_assignsubmission_file_
            name = f"Bench Student {i:03d}_{20000 + i}_assignsubmission_file_"
            for rel, data in files.items():
                (folder / name / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / name / rel).write_bytes(data)
        else:              # plain tarball
            name = f"student{i:03d}.tar.gz"
            with tarfile.open(folder / name, "w:gz") as tf:
                for rel, data in files.items():
                    info = tarfile.TarInfo(rel)
                    info.size = len(data)
                    tf.addfile(info, io.BytesIO(data))
        made[name] = entry
    return made


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=100, help="submissions (default: 100)")
    parser.add_argument("--backend", choices=["auto", "gpu", "emulate"], default="auto")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: BUILD_DIR/bench-batch; emptied)")
    parser.add_argument("--max-n", type=int, default=None,
                        help="passed to batch.py (default: all; emulated: the judge's emulation cap)")
    parser.add_argument("--jobs", type=int, default=None, help="passed to batch.py (default: CPU count)")
    parser.add_argument("--gpus", default="auto", help="passed to batch.py")
    parser.add_argument("--judges-per-gpu", type=int, default=None, help="passed to batch.py")
    parser.add_argument("--budget-s", type=float, default=None, help="passed to batch.py (default: its own, 900)")
    parser.add_argument("--with-hangs", action="store_true", help="include the gallery's hanging entry")
    parser.add_argument("--target-s", type=float, default=150, help="wall-time target to report against (default: 150)")
    args = parser.parse_args()
    if args.n < 1:
        parser.error("-n must be at least 1")
    return args


def run_batch(args: argparse.Namespace, work: Path, made: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    """batch.py over the copies, with the benchmark's settings; its exit and wall time."""
    cmd = [sys.executable, str(REPO / "grading" / "batch.py"), str(work / "submissions"), "--out", str(work / "out"),
           "--build-dir", str(args.build_dir), "--backend", args.backend, "--no-resume", "--gpus", args.gpus]
    for flag, value in (("--max-n", args.max_n), ("--jobs", args.jobs), ("--judges-per-gpu", args.judges_per_gpu),
                        ("--budget-s", args.budget_s)):
        if value is not None:
            cmd += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    print("bench: " + " ".join(cmd), file=sys.stderr, flush=True)
    start = time.monotonic()
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, timeout=6 * 3600)
    wall = time.monotonic() - start
    return proc, wall


def check_verdicts(args: argparse.Namespace, work: Path, made: dict[str, str], record: dict) -> list[tuple]:
    """Each copy's slot verdicts against its gallery entry's (gallery.py --results-from): the mismatches."""
    # verdicts per copy: gallery.py checks them (the slot-verdict rule lives in scangrade/vocab.py)
    copies = work / "copies.json"
    copies.write_text(json.dumps(made, indent=1) + "\n")
    verdicts = work / "verdicts.json"
    subprocess.run([sys.executable, str(REPO / "grading" / "gallery.py"), "--results-from", str(work / "out"),
                    "--copies", str(copies), "--json", str(verdicts), "--backend", record["backend"],
                    "--build-dir", str(args.build_dir)], stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
    checked = json.loads(verdicts.read_text()) if verdicts.is_file() else {}
    entry_of = {st["student_id"]: made.get(st["raw_name"]) for st in record["students"]}
    mismatches = []
    for sid, entry in sorted(entry_of.items()):
        v = checked.get(sid, {"expected": {}, "got": {}, "error": "gallery.py did not check it"})
        bad = {s: (want, v["got"].get(s)) for s, want in v["expected"].items() if v["got"].get(s) != want}
        if bad or v["error"]:
            mismatches.append((sid, entry, bad or {"error": (v["error"], None)}))
    return mismatches


def print_mismatches(work: Path, mismatches: list[tuple]) -> None:
    for sid, entry, bad in mismatches:
        print(f"bench: MISMATCH {sid} ({entry}): " + ", ".join(f"{s} expected {w}, got {g}" for s, (w, g) in bad.items()))
        results = work / "out" / "students" / sid / "results.json"
        if results.is_file():
            for c in json.loads(results.read_text())["cases"]:
                if c["slot"] in bad and c["status"] != "pass":
                    print(f"  {c['id']}: {c['status']} ({c['duration_s']:.2f} s): {c['message'][:300]}")


def time_spent(work: Path, record: dict) -> tuple[dict[str, float], dict]:
    """Where the judges' time went: seconds per case (summed over the submissions) and the process starts."""
    # where the judges' time went, per case (summed over the submissions)
    per_case: dict[str, float] = {}
    starts = {"worker_starts": 0, "worker_start_s": 0.0, "checker_start_s": 0.0}
    for st in record["students"]:
        results = work / "out" / "students" / st["student_id"] / "results.json"
        if results.is_file():
            graded = json.loads(results.read_text())
            for c in graded["cases"]:
                per_case[c["id"]] = per_case.get(c["id"], 0.0) + c["duration_s"]
            for k in starts:
                starts[k] += graded.get("phases", {}).get(k, 0)
    # the judges' own lines: "worker N ready T s after its start (its own code ran L s after it, its CUDA
    # context C s, the policy monitor M s, the hello sent at S s)"
    ready = []
    for log in (work / "out" / "students").glob("*/judge.log"):
        for line in log.read_text(errors="replace").splitlines():
            m = READY.search(line)
            if m:
                ready.append(tuple(float(x) if x != "?" else None for x in m.groups()))
    if ready:
        k = len(ready)
        mean = lambda i: sum(r[i] for r in ready if r[i] is not None) / max(1, sum(r[i] is not None for r in ready))  # noqa: E731
        starts["split"] = {"starts": k, "mean_s": mean(0), "loaded_s": mean(1), "cuda_context_s": mean(2),
                           "policy_monitor_s": mean(3), "hello_sent_s": mean(4), "max_s": max(r[0] for r in ready)}
    return per_case, starts


def main() -> int:
    args = parse_args()
    work = (args.work or args.build_dir / "bench-batch").resolve()
    shutil.rmtree(work, ignore_errors=True)
    entries = gallery_entries(args.with_hangs)
    t = time.monotonic()
    made = make_submissions(work / "submissions", args.n, entries)
    make_s = time.monotonic() - t
    proc, wall = run_batch(args, work, made)
    record_path = work / "out" / "batch.json"
    if not record_path.is_file():
        print(f"bench: batch.py exited {proc.returncode} without batch.json", file=sys.stderr)
        return proc.returncode or 3
    record = json.loads(record_path.read_text())

    mismatches = check_verdicts(args, work, made, record)
    n = len(record["students"])
    totals = record["phase_totals"]
    summary = {"n": n, "entries": [e for e, _ in entries], "backend": record["backend"], "gpus": record["gpus"],
               "jobs": record["jobs"], "judges_per_gpu": record["judges_per_gpu"], "cpus": os.cpu_count(),
               "max_n": record["max_n"], "make_submissions_s": round(make_s, 2), "wall_s": round(wall, 2),
               "batch_wall_s": record["wall_s"], "phase_totals": totals,
               "graded": sum(s["outcome"] == "graded" for s in record["students"]),
               "verdict_mismatches": [{"id": i, "entry": e, "bad": b} for i, e, b in mismatches],
               "batch_exit": proc.returncode}
    (work / "bench.json").write_text(json.dumps(summary, indent=1) + "\n")
    print_mismatches(work, mismatches)
    per_case, starts = time_spent(work, record)
    summary["process_starts"] = starts
    slowest = sorted(per_case.items(), key=lambda kv: -kv[1])[:8]
    summary["slowest_cases_s"] = dict(slowest)
    (work / "bench.json").write_text(json.dumps(summary, indent=1) + "\n")
    if slowest:
        print(f"\nslowest cases (sum of duration_s over the submissions; all cases: {sum(per_case.values()):.0f} s)")
        for cid, secs in slowest:
            print(f"  {secs:8.1f} s  {cid}")
    where = (f"{len(record['gpus'])} GPU(s) x {record['judges_per_gpu']} judges" if record["gpus"]
             else f"{record['judges_per_gpu']} emulated judges")
    print(f"\nScanGrade batch benchmark: {n} submissions from {len(entries)} gallery entries"
          f"{'' if args.with_hangs else ' (hanging entry left out)'}, backend {record['backend']}, "
          f"{record['jobs']} CPU slots, {where}, max n {record['max_n'] or 'all'}")
    print(f"{'phase':<12} {'sum (s)':>10} {'wall (s)':>10} {'per sub (s)':>12}")
    print("-" * 47)
    for phase, v in totals.items():
        wall_cell = "-" if v["wall_s"] is None else f"{v['wall_s']:.1f}"
        print(f"{phase:<12} {v['sum_s']:>10.1f} {wall_cell:>10} {v['sum_s'] / max(1, n):>12.2f}")
    print("-" * 47)
    if starts["worker_starts"]:
        split = starts.get("split")
        print(f"worker starts: {starts['worker_starts']} ({starts['worker_start_s'] / starts['worker_starts']:.2f} s "
              f"each from start to hello, spares started ahead of need"
              + (f"; its own code ran after {split['loaded_s']:.2f} s, then the CUDA context {split['cuda_context_s']:.2f} s, "
                 f"the policy monitor {split['policy_monitor_s']:.2f} s, the hello sent at {split['hello_sent_s']:.2f} s; "
                 f"the longest {split['max_s']:.1f} s" if split else "")
              + f"); checker starts {starts['checker_start_s'] / max(1, n):.2f} s each")
    ok = proc.returncode == 0 and not mismatches
    print(f"{'total wall':<12} {wall:>10.1f} s for {n} submissions ({wall / max(1, n):.2f} s each); "
          f"{summary['graded']}/{n} graded, {n - len(mismatches)}/{n} verdicts as expected; "
          f"target {args.target_s:g} s: {'met' if wall <= args.target_s else 'MISSED'}"
          + ("" if args.n == 100 else f" (target is for 100; scaled: {wall * 100 / n:.0f} s)"))
    print(f"details: {work / 'bench.json'}, report: {work / 'out' / 'report.html'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
