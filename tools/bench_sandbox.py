#!/usr/bin/env python3
"""What the sandbox costs: one table, measured in one run on this machine.

  start     scangrade_sandbox running `true` (its probe, then bubblewrap, the uid drop, limits,
            cleanup) against scangrade_sandbox --probe alone, N times each, interleaved: the
            difference is what one sandboxed process start adds (the judge probes once per
            submission, then pays this per worker start); the probe is the per-submission part
  grade     grade.py on the same submission with --sandbox off and --sandbox auto, alternately,
            R times each: the cost per submission (compiles, worker starts, cleanup)

    tools/bench_sandbox.py [--build-dir build] [--backend emulate|gpu] [--entry correct_kogge_stone]
                           [-n 50] [-r 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", type=Path, default=REPO / "build")
    parser.add_argument("--backend", choices=["emulate", "gpu"], default="emulate")
    parser.add_argument("--entry", default="correct_kogge_stone", help="gallery entry graded (default: %(default)s)")
    parser.add_argument("-n", type=int, default=50, help="process starts of each kind (default: 50)")
    parser.add_argument("-r", type=int, default=3, help="gradings of each kind (default: 3)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    launcher = args.build_dir / "grading" / "scangrade_sandbox"
    probe = json.loads(subprocess.run([str(launcher), "--probe"], capture_output=True, text=True, check=True).stdout)

    plain, probed, boxed = [], [], []
    for _ in range(args.n):
        plain.append(timed(["/usr/bin/true"]))
        probed.append(timed([str(launcher), "--probe"]))
        boxed.append(timed([str(launcher), "--", "/usr/bin/true"]))

    grades: dict[str, list[float]] = {"off": [], "auto": []}
    with tempfile.TemporaryDirectory(prefix="scangrade-bench-sandbox-") as tmp:
        for i in range(args.r):
            for mode in ("off", "auto"):
                cmd = [sys.executable, str(REPO / "grading" / "grade.py"), str(REPO / "grading" / "gallery" / args.entry),
                       "--build-dir", str(args.build_dir), "--backend", args.backend, "--sandbox", mode,
                       "--out", f"{tmp}/{mode}-{i}", "--formats", "none", "--quiet"]
                grades[mode].append(timed(cmd))

    start_ms = (statistics.median(boxed) - statistics.median(probed)) * 1000
    probe_ms = statistics.median(probed) * 1000
    off, on = statistics.median(grades["off"]), statistics.median(grades["auto"])
    print(f"sandbox cost on this machine ({args.backend} backend); {probe['summary']}")
    print(f"{'measure':44s} {'plain':>10s} {'sandboxed':>10s} {'added':>10s}")
    print(f"{'one process start (median of ' + str(args.n) + ')':44s} {statistics.median(plain) * 1000:8.1f}ms "
          f"{statistics.median(plain) * 1000 + start_ms:8.1f}ms {start_ms:8.1f}ms")
    print(f"{'the probe, once per submission':44s} {'':>10s} {probe_ms:8.1f}ms {probe_ms:8.1f}ms")
    print(f"{'one submission, ' + args.entry + ' (median of ' + str(args.r) + ')':44s} {off:9.2f}s {on:9.2f}s "
          f"{(on / off - 1) * 100:+8.1f}%")
    if args.json:
        args.json.write_text(json.dumps({"backend": args.backend, "isolation": probe, "start_plain_s": plain, "probe_s": probed,
                                         "start_sandboxed_s": boxed, "grade_s": grades}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
