#!/usr/bin/env python3
"""Benchmark: the public suite on the CPU emulation backend (target: under a minute on 2 cores).

Times, on this machine, (1) the reference solutions' emulated kernel tests over the public suite
(`scangrade_selftest_emu`, one process) and (2) grading each known-correct gallery submission on the
emulate backend (compile + judge, cases up to the emulation cap). A benchmark, not a test: it
prints a table and never fails on time.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(cmd: list[str]) -> tuple[float, int]:
    start = time.monotonic()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return time.monotonic() - start, rc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=REPO / "build")
    parser.add_argument("--out", type=Path, default=REPO / "grading-results" / "bench")
    args = parser.parse_args()
    rows = []
    selftest = args.build_dir / "scangrade_selftest_emu"
    if not selftest.exists():
        print(f"bench: {selftest} not built: run make first", file=sys.stderr)
        return 3
    seconds, rc = timed([str(selftest)])
    rows.append(("reference kernel tests (make test path)", seconds, rc))
    for entry in sorted((REPO / "grading" / "gallery").glob("correct_*")):
        seconds, rc = timed([sys.executable, str(REPO / "grading" / "grade.py"), str(entry), "--backend", "emulate",
                             "--build-dir", str(args.build_dir), "--out", str(args.out / entry.name),
                             "--formats", "none", "--quiet"])   # the judge stops at its emulation cap
        rows.append((f"grade {entry.name}", seconds, rc))
    print(f"public suite on the emulation backend, {os.cpu_count()} cores (cases up to 2^22 + 1)")
    for label, seconds, rc in rows:
        print(f"  {label:<45} {seconds:7.1f} s   exit {rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
