#!/usr/bin/env python3
"""Benchmark: where the time goes when the grader compiles a submission's slot files with nvcc.

For each .cu file (default: the starter student/*.cu and the gallery's correct_brent_kung), runs

    nvcc <cuda_flags> -I <the file's folder> -c FILE -o OBJ -time PHASES.csv

exactly as grading/scangrade/build.py does (cuda_flags from <build-dir>/grading/toolchain.json, or
--flags), --repeat times, and prints per file: wall and CPU seconds (user + sys of nvcc and every
tool it ran; the least of the repetitions, the figure least disturbed by other load) and the share
of each nvcc phase (nvcc's own -time CSV: host preprocessing + cudafe++, device preprocessing +
cicc, ptxas, fatbinary, the host compiler), the architectures built (SASS and PTX), the headers
the file pulls in and the lines the host compiler then reads. Two reference rows show the floor:
an empty .cu (what nvcc costs before any code: cuda_runtime.h, which nvcc includes in every file)
and a .cu that only includes the contract header.

Per submission it adds the sum over its files (CPU), and the wall time of compiling its files in
parallel as build.py does (--jobs, default the CPU count).

--variant LABEL=FLAGS compares flag sets (each a full replacement of cuda_flags, split like a
shell would), e.g. --variant 'sass+ptx=-std=c++17 -O3 -lineinfo -gencode arch=compute_90,code=[sm_90,compute_90]'.
--whole grades nothing but runs build.py's whole build (compiles in its sandbox, the policy's nm
scans, stubs, the link) on each submission and splits its wall and CPU time by step.

A benchmark, not a test: it never fails on time. Exit status 0, or 3 when nvcc or the toolchain
is missing. --json FILE writes every figure for tools/gpu-check.sh.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SUBMISSIONS = [REPO / "student", REPO / "grading" / "gallery" / "correct_brent_kung" / "student"]

# nvcc -time phase names -> the columns of the table
PHASES = {
    "gcc (preprocessing 4)": "host_pp",
    "cudafe++": "cudafe",
    "gcc (preprocessing 1)": "dev_pp",
    "cicc": "cicc",
    "ptxas": "ptxas",
    "fatbinary": "fatbin",
    "gcc (compiling)": "host_cc",
}
COLUMNS = ["host_pp", "cudafe", "dev_pp", "cicc", "ptxas", "fatbin", "host_cc", "other"]
CONTRACT = '#include "scangrade/student_api.h"\n'


@dataclass
class FileResult:
    label: str                  # submission/file.cu, or (empty .cu) / (contract header only)
    ok: bool
    wall_s: float               # least over the repetitions
    cpu_s: float                # user + sys of nvcc and its tools; least over the repetitions
    phases_ms: dict[str, float] = field(default_factory=dict)   # from the fastest repetition
    sass: list[str] = field(default_factory=list)   # ptxas targets (sm_XX)
    ptx: list[str] = field(default_factory=list)    # cicc targets (compute_XX; embedded or not)
    headers: int = 0            # files nvcc -M lists besides the source
    lines: int = 0              # lines of the host preprocessed source
    error: str = ""


def run_measured(cmd: list[str], cwd: Path | None = None) -> tuple[int, float, float, str]:
    """(exit status, wall s, CPU s of the process tree, output): os.wait4 returns the rusage of the
    child and every descendant it waited for (nvcc waits for cicc, ptxas, gcc...)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, text


def parse_phases(text: str) -> tuple[dict[str, float], list[str], list[str]]:
    """nvcc -time CSV -> ms per column, SASS targets, PTX targets."""
    ms = {c: 0.0 for c in COLUMNS}
    sass: list[str] = []
    ptx: list[str] = []
    rows = list(csv.reader(io.StringIO(text)))
    for row in rows[1:]:
        if len(row) < 8:
            continue
        phase, arch, value = row[1].strip(), row[4].strip(), row[6].strip()
        if phase == "nvcc (driver)":
            continue   # the driver's own time, included in no phase; counted under wall
        try:
            value_ms = float(value)
        except ValueError:
            continue
        ms[PHASES.get(phase, "other")] += value_ms
        if phase == "ptxas" and arch and arch not in sass:
            sass.append(arch)
        if phase == "cicc" and arch and arch not in ptx:
            ptx.append(arch)
    return ms, sass, ptx


def embedded_ptx(flags: list[str]) -> list[str]:
    """The compute_XX PTX the flags embed (code=compute_XX), beside the SASS."""
    found = []
    for flag in flags:
        if "code=" in flag:
            for part in flag.split("code=", 1)[1].strip("[]").split(","):
                if part.strip("[] ").startswith("compute_"):
                    found.append(part.strip("[] "))
    return found


def compile_once(nvcc: str, flags: list[str], src: Path, work: Path, i: int) -> tuple[int, float, float, str, str]:
    """One timed compile: (exit status, wall s, CPU s, output, nvcc -time CSV)."""
    times = work / f"{src.stem}.{i}.csv"
    times.unlink(missing_ok=True)
    rc, wall, cpu, out = run_measured([nvcc, *flags, "-I", str(src.parent), "-c", str(src), "-o",
                                       str(work / (src.stem + ".o")), "-time", str(times)])
    return rc, wall, cpu, out, times.read_text() if times.exists() else ""


def summarize(nvcc: str, flags: list[str], src: Path, label: str,
              samples: list[tuple[int, float, float, str, str]]) -> FileResult:
    """The least wall and CPU over the samples, the phases of the least-CPU one, headers and lines."""
    failed = [s for s in samples if s[0] != 0]
    if failed:
        return FileResult(label, False, failed[0][1], failed[0][2], error=failed[0][3].strip()[-2000:])
    best = min(samples, key=lambda s: s[2])
    phases, sass, ptx = parse_phases(best[4])
    inc = ["-I", str(src.parent)]
    deps = subprocess.run([nvcc, *flags, *inc, "-M", str(src)], capture_output=True, text=True)
    headers = len({t for t in deps.stdout.replace("\\\n", " ").split()[1:] if t != str(src)})
    pre = subprocess.run([nvcc, *flags, *inc, "-E", str(src)], capture_output=True, text=True)
    return FileResult(label, True, min(s[1] for s in samples), best[2], {k: round(v, 1) for k, v in phases.items()},
                      sass, ptx, headers, pre.stdout.count("\n"))


def parallel_wall(nvcc: str, flags: list[str], files: list[Path], jobs: int, work: Path) -> tuple[float, float]:
    """Wall and CPU seconds of compiling `files` at once on `jobs` threads, as build.py does."""
    cpu = [0.0]
    lock = threading.Lock()

    def one(src: Path) -> None:
        _, _, c, _ = run_measured([nvcc, *flags, "-I", str(src.parent), "-c", str(src), "-o",
                                   str(work / f"par_{src.stem}.o")])
        with lock:
            cpu[0] += c
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, files))
    return time.monotonic() - start, cpu[0]


def print_files(title: str, rows: list[FileResult], ptx: list[str]) -> None:
    """The per-file table; `ptx`: the PTX the flags embed (cicc writes PTX for every build, ptxas
    turns it into the SASS listed)."""
    print(f"\n{title}")
    head = f"  {'file':<44} {'wall s':>6} {'cpu s':>6}  " + " ".join(f"{c:>7}" for c in COLUMNS) + \
           f"  {'archs':<22} {'hdrs':>4} {'lines':>6}"
    print(head)
    print(f"  {'':<44} {'':>6} {'':>6}  " + " ".join(f"{'ms':>7}" for _ in COLUMNS))
    for r in rows:
        if not r.ok:
            print(f"  {r.label:<44} FAILED: {r.error.splitlines()[-1] if r.error else ''}")
            continue
        archs = "+".join(r.sass) + (" + ptx " + "+".join(ptx) if ptx else "")
        print(f"  {r.label:<44} {r.wall_s:6.2f} {r.cpu_s:6.2f}  "
              + " ".join(f"{r.phases_ms.get(c, 0):7.0f}" for c in COLUMNS)
              + f"  {archs:<22} {r.headers:4d} {r.lines:6d}")
    ok = [r for r in rows if r.ok and not r.label.startswith("(")]
    if ok:
        total = {c: sum(r.phases_ms.get(c, 0.0) for r in ok) for c in COLUMNS}
        whole = sum(total.values()) or 1.0
        host = total["host_pp"] + total["cudafe"] + total["host_cc"]
        dev = total["dev_pp"] + total["cicc"] + total["ptxas"] + total["fatbin"]
        print("  share of phase time over the files: " + ", ".join(
            f"{c} {100 * total[c] / whole:.0f}%" for c in COLUMNS if total[c]) +
              f"  (host side {100 * host / whole:.0f}%, device side {100 * dev / whole:.0f}%)")


# --- --whole: build.py end to end, split by step -----------------------------------------------------

def whole_build(build_dir: Path, submission: Path, jobs: int, sandbox: str) -> dict:
    import grader_package  # noqa: F401  (the grader's own package)
    from scangrade import build as b   # noqa: E402  (the grader's own package)
    from scangrade import build_tools   # noqa: E402  (every tool of the build runs through its run_tool)
    from scangrade.submission import load_submission   # noqa: E402

    recipe = b.Recipe.from_toolchain(b.read_toolchain(build_dir), "gpu", sandbox=sandbox)
    steps: dict[str, list[float]] = {}
    lock = threading.Lock()
    real_run_tool = build_tools.run_tool

    def kind(cmd: list[str]) -> str:
        argv = list(map(str, cmd))
        if "--" in argv:
            argv = argv[argv.index("--") + 1:]   # the sandboxed command
        name = Path(argv[0]).name
        if name == "nm" or name.endswith("-nm"):
            return "policy nm scan"
        if "-c" in argv:
            return "stub compile" if any("/stubs/" in a for a in argv) else "compile"
        return "link"

    def counted(cmd, cwd, timeout, confine=b.Confinement(), read_only=(), writable=()):
        before = os.times()
        run = real_run_tool(cmd, cwd, timeout, confine, read_only, writable)
        after = os.times()
        if confine.launcher or not any(str(c) == "--" for c in cmd):
            with lock:
                s = steps.setdefault(kind(cmd), [0, 0.0, 0.0])
                s[0] += 1
                s[1] += run.seconds
                # children's CPU: exact when jobs == 1 (no other tool finishes meanwhile)
                s[2] += (after.children_user - before.children_user) + (after.children_system - before.children_system)
        return run

    build_tools.run_tool = counted
    try:
        with tempfile.TemporaryDirectory(prefix="bench_compile_") as tmp, load_submission(submission) as sub:
            t0, c0 = time.monotonic(), os.times()
            result = b.build(sub, recipe, Path(tmp) / "out", jobs)
            t1, c1 = time.monotonic(), os.times()
    finally:
        build_tools.run_tool = real_run_tool
    return {"submission": str(submission), "status": result.status, "jobs": jobs,
            "wall_s": round(t1 - t0, 3),
            "cpu_s": round((c1.children_user - c0.children_user) + (c1.children_system - c0.children_system), 3),
            "steps": {k: {"runs": v[0], "wall_s": round(v[1], 3), "cpu_s": round(v[2], 3)} for k, v in steps.items()}}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path,
                        help="student folders or .cu files (default: student/ and the gallery's correct_brent_kung)")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build",
                        help="CMake build folder whose grading/toolchain.json gives nvcc and cuda_flags")
    parser.add_argument("--nvcc", help="nvcc to run (default: the toolchain's, else PATH's)")
    parser.add_argument("--flags", help="cuda_flags to use instead of the toolchain's (one string, shell-split)")
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL=FLAGS",
                        help="a flag set to compare (repeatable); default: the toolchain's cuda_flags alone")
    parser.add_argument("--repeat", type=int, default=3, help="compiles per file and flag set; the least counts")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles per submission")
    parser.add_argument("--no-floor", action="store_true", help="leave out the empty-file and header-only rows")
    parser.add_argument("--whole", action="store_true",
                        help="also run build.py's whole build per submission (sandbox, nm scans, link), by step")
    parser.add_argument("--whole-only", action="store_true", help="only the --whole measurement")
    parser.add_argument("--sandbox", default="auto", choices=["auto", "require", "off"], help="for --whole")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args()
    return args


def flag_variants(args: argparse.Namespace, toolchain: dict, path: Path) -> list[tuple[str, list[str]]] | None:
    """The flag sets to compare (label, flags), each with the harness's include folder; None after
    saying why there is none."""
    variants: list[tuple[str, list[str]]] = []
    for v in args.variant:
        label, _, flags = v.partition("=")
        variants.append((label, shlex.split(flags)))
    if not variants:
        if args.flags is not None:
            variants.append(("--flags", shlex.split(args.flags)))
        elif "cuda_flags" in toolchain:
            variants.append(("toolchain.json", list(toolchain["cuda_flags"])))
        else:
            print(f"bench_compile: {path} has no cuda_flags: build the grader or pass --flags", file=sys.stderr)
            return None
    harness_include = f"-I{REPO / 'harness' / 'include'}"
    variants = [(label, flags if any(f.startswith("-I") for f in flags) else [*flags, harness_include])
                for label, flags in variants]
    return variants


def submission_groups(targets: list[Path]) -> dict[str, list[Path]]:
    """The .cu files to compile, by submission (a student/ folder is named after its parent)."""
    groups: dict[str, list[Path]] = {}
    for t in targets:
        files = sorted(t.glob("*.cu")) if t.is_dir() else [t]
        folder = (t if t.is_dir() else t.parent).resolve()
        name = folder.parent.name if folder.name == "student" else folder.name
        if folder == (REPO / "student").resolve():
            name = "starter"
        groups.setdefault(name, []).extend(files)
    return groups


def measure_files(args: argparse.Namespace, nvcc: str, variants: list, groups: dict[str, list[Path]],
                  report: dict) -> list:
    """Each file alone and each submission's files in parallel, per flag set; returns the flag sets
    left (none with --whole-only)."""
    with tempfile.TemporaryDirectory(prefix="bench_compile_") as tmp:
        work = Path(tmp)
        floor_dir = work / "floor"
        floor_dir.mkdir()
        (floor_dir / "empty.cu").write_text("")
        (floor_dir / "contract_only.cu").write_text(CONTRACT)
        if args.whole_only:
            variants = []
            args.whole = True
        files: list[tuple[Path, str, str]] = []   # (source, label, submission or "")
        if not args.no_floor:
            files += [(floor_dir / "empty.cu", "(empty .cu)", ""),
                      (floor_dir / "contract_only.cu", "(contract header only)", "")]
        files += [(f, f"{name}/{f.name}", name) for name, fs in groups.items() for f in fs]
        # repetitions interleave the flag sets, so that other load on the machine hits them alike
        samples: dict[tuple[int, int], list] = {}
        for i in range(args.repeat):
            for v, (_, flags) in enumerate(variants):
                for k, (src, _, _) in enumerate(files):
                    samples.setdefault((v, k), []).append(compile_once(nvcc, flags, src, work, i))
        for v, (label, flags) in enumerate(variants):
            rows = [summarize(nvcc, flags, src, name, samples[(v, k)]) for k, (src, name, _) in enumerate(files)]
            per_sub = []
            for name, fs in groups.items():
                sub_rows = [r for r, (_, _, owner) in zip(rows, files) if owner == name]
                wall, cpu = parallel_wall(nvcc, flags, fs, args.jobs, work)
                per_sub.append({"submission": name, "files": len(fs),
                                "cpu_s_sum": round(sum(r.cpu_s for r in sub_rows), 3),
                                "wall_s_serial": round(sum(r.wall_s for r in sub_rows), 3),
                                "wall_s_parallel": round(wall, 3), "cpu_s_parallel": round(cpu, 3)})
            print_files(f"[{label}] nvcc {' '.join(flags)}", rows, embedded_ptx(flags))
            print("  per submission: " + "; ".join(
                f"{s['submission']} ({s['files']} files): CPU {s['cpu_s_sum']:.2f} s, wall {s['wall_s_serial']:.2f} s "
                f"one at a time, {s['wall_s_parallel']:.2f} s in parallel (--jobs {args.jobs})" for s in per_sub))
            report["variants"].append({"label": label, "flags": flags, "files": [asdict(r) for r in rows],
                                       "submissions": per_sub, "embedded_ptx": embedded_ptx(flags)})
    return variants


def measure_whole(args: argparse.Namespace, toolchain: dict, path: Path, groups: dict[str, list[Path]],
                  report: dict) -> int:
    """build.py's whole build per submission, step by step (--whole): 0, or 3 without a toolchain."""
    if not toolchain:
        print(f"bench_compile: --whole needs {path}", file=sys.stderr)
        return 3
    report["whole"] = []
    print(f"\nbuild.py end to end ({path}): CPU with --sandbox off (a sandboxed tool's CPU time does not "
          f"reach this process), wall with --sandbox {args.sandbox}")
    for name, files in groups.items():
        with tempfile.TemporaryDirectory(prefix="bench_compile_sub_") as tmp:
            root = Path(tmp)
            (root / "student").mkdir()
            for f in sorted(files[0].parent.iterdir()):
                if f.is_file() and f.suffix in (".cu", ".cuh"):
                    shutil.copy(f, root / "student" / f.name)
            runs = {"cpu": whole_build(args.build_dir, root, 1, "off"),
                    "wall_serial": whole_build(args.build_dir, root, 1, args.sandbox),
                    "wall_parallel": whole_build(args.build_dir, root, args.jobs, args.sandbox)}
        report["whole"].append({"submission": name, **runs})
        cpu, serial, par = runs["cpu"], runs["wall_serial"], runs["wall_parallel"]
        print(f"  {name}: {par['status']}; CPU {cpu['cpu_s']:.2f} s; wall {serial['wall_s']:.2f} s one tool at a "
              f"time, {par['wall_s']:.2f} s with --jobs {args.jobs}")
        for step in serial["steps"]:
            c = cpu["steps"].get(step, {"cpu_s": 0.0, "wall_s": 0.0})
            w = serial["steps"][step]
            print(f"    {step:<16} {w['runs']:2d} runs  CPU {c['cpu_s']:6.2f} s  wall {c['wall_s']:6.2f} s unconfined, "
                  f"{w['wall_s']:6.2f} s sandboxed")
    return 0


def main() -> int:
    args = parse_args()
    toolchain: dict = {}
    path = args.build_dir / "grading" / "toolchain.json"
    if path.is_file():
        toolchain = json.loads(path.read_text())
    nvcc = args.nvcc or toolchain.get("nvcc") or shutil.which("nvcc")
    if not nvcc or not Path(nvcc).exists():
        print("bench_compile: no nvcc (install the CUDA toolkit or pass --nvcc)", file=sys.stderr)
        return 3
    variants = flag_variants(args, toolchain, path)
    if variants is None:
        return 3
    groups = submission_groups(args.files or DEFAULT_SUBMISSIONS)
    report: dict = {"nvcc": nvcc, "cpus": os.cpu_count(), "jobs": args.jobs, "repeat": args.repeat, "variants": []}
    ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    report["nvcc_version"] = ver[-1] if ver else ""
    print(f"bench_compile: {report['nvcc_version']}, {os.cpu_count()} CPUs, least of {args.repeat} runs per file")
    measure_files(args, nvcc, variants, groups, report)
    if args.whole and measure_whole(args, toolchain, path, groups, report):
        return 3
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
