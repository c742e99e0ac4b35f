#!/usr/bin/env python3
"""Where a benchmark's machine time went: CPU seconds by program, CPU and GPU busy over time.

    python3 tools/bench_sample.py --out FILE.json [--interval 0.25] -- COMMAND [ARGS...]

Runs COMMAND and, while it runs, samples every INTERVAL seconds: /proc/stat (the share of all CPUs
busy), /proc/PID/stat of every process (user + system CPU seconds, summed per program name: a
process is counted up to its last sample, so one that lives shorter than INTERVAL is missed) and,
when nvidia-smi is there, the GPU's utilization (the share of the last sample period in which a
kernel ran) and memory in use. Prints a short table on stderr when COMMAND ends (the busiest
programs, then CPU and GPU busy per tenth of the run) and writes every number to FILE.json. Exit
status: COMMAND's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def processes() -> dict[int, tuple[str, int]]:
    """pid -> (program name, user + system jiffies)."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        rest = raw[raw.rindex(")") + 2:].split()
        out[int(entry.name)] = (name, int(rest[11]) + int(rest[12]))
    return out


class GpuSampler(threading.Thread):
    def __init__(self, interval_ms: int) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float, float]] = []  # (t, util %, memory MiB)
        self.proc = None
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits",
                 f"-lms={interval_ms}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            pass

    def run(self) -> None:
        if not self.proc:
            return
        t0 = time.monotonic()
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.samples.append((time.monotonic() - t0, float(parts[0]), float(parts[1])))
            except (ValueError, IndexError):
                continue

    def stop(self) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait()


def buckets(series: list[tuple[float, float]], wall: float, n: int = 10) -> list[float | None]:
    sums = [0.0] * n
    counts = [0] * n
    for t, v in series:
        i = min(n - 1, int(t / wall * n)) if wall > 0 else 0
        sums[i] += v
        counts[i] += 1
    return [sums[i] / counts[i] if counts[i] else None for i in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")

    gpu = GpuSampler(int(args.interval * 1000))
    gpu.start()
    t0 = time.monotonic()
    seen = processes()  # what ran before COMMAND counts from here on
    child = subprocess.Popen(command)
    by_program: dict[str, float] = {}
    cpu_series: list[tuple[float, float]] = []
    last_busy, last_total = cpu_busy()
    while True:
        done = child.poll() is not None
        now = processes()
        for pid, (name, jiffies) in now.items():
            before = seen.get(pid)
            start = before[1] if before else 0
            by_program[name] = by_program.get(name, 0.0) + (jiffies - start) / TICK
        seen = now
        busy, total = cpu_busy()
        if total > last_total:
            cpu_series.append((time.monotonic() - t0, 100.0 * (busy - last_busy) / (total - last_total)))
        last_busy, last_total = busy, total
        if done:
            break
        time.sleep(args.interval)
    wall = time.monotonic() - t0
    gpu.stop()

    cpus = os.cpu_count() or 1
    top = sorted(by_program.items(), key=lambda kv: -kv[1])
    cpu_b = buckets(cpu_series, wall)
    gpu_b = buckets([(t, u) for t, u, _ in gpu.samples], wall)
    mem_peak = max((m for _, _, m in gpu.samples), default=None)
    cpu_mean = sum(v for _, v in cpu_series) / len(cpu_series) if cpu_series else 0.0
    gpu_mean = sum(u for _, u, _ in gpu.samples) / len(gpu.samples) if gpu.samples else None
    Path(args.out).write_text(json.dumps({
        "wall_s": wall, "cpus": cpus, "cpu_busy_mean_pct": cpu_mean, "gpu_util_mean_pct": gpu_mean,
        "gpu_memory_peak_mib": mem_peak, "cpu_s_by_program": dict(top), "cpu_busy_pct_by_tenth": cpu_b,
        "gpu_util_pct_by_tenth": gpu_b}, indent=1))

    fmt = lambda xs: " ".join("  - " if x is None else f"{x:3.0f}" for x in xs)  # noqa: E731
    err = sys.stderr
    print(f"machine use over {wall:.1f} s ({cpus} CPUs): CPU busy {cpu_mean:.0f}% on average"
          + (f", GPU busy {gpu_mean:.0f}%, GPU memory peak {mem_peak:.0f} MiB" if gpu_mean is not None else ""),
          file=err)
    print("CPU seconds by program: " + ", ".join(f"{name} {s:.0f}" for name, s in top[:12]), file=err)
    print(f"CPU busy % by tenth of the run: {fmt(cpu_b)}", file=err)
    if gpu_mean is not None:
        print(f"GPU busy % by tenth of the run: {fmt(gpu_b)}", file=err)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
