#!/usr/bin/env python3
"""Write the grader tree that students' feedback CI may check out: this repository's tracked files
without anything that solves a slot or is secret.

Left out: reference/ (the model answers), grading/gallery/ (complete correct and near-correct
submissions), grading/docs/ (screenshots of a class report: gallery entries' messages and code), the
emulator's and the grader's tests (their kernels and fixtures solve slots: grading/tests/,
grading/judge/tests/, grading/worker/tests/, grading/fidelity/, harness/emulation/tests/), every suite
but the public one. What stays builds the judge, the sandbox and the emulation backend (CMake without
reference/ builds no GPU worker: the GPU worker times against the reference), so the feedback
workflow grades on the emulation backend. Publish the tree as its own repository (or a branch of
one) and pin it in the handout's feedback workflow (tools/handout.py --grader-repo/--grader-ref).

    tools/feedback_grader.py --out DIR [--force]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LEFT_OUT = ("reference/", "grading/gallery/", "grading/docs/", "grading/tests/", "grading/judge/tests/",
            "grading/worker/tests/", "grading/fidelity/", "harness/emulation/tests/")
KEPT_SUITES = ("testcases/public.json", "testcases/generate.py")


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True)
    return [f for f in out.stdout.decode().split("\0") if f]


def kept(path: str) -> bool:
    if path.startswith(LEFT_OUT):
        return False
    if path.startswith("testcases/") and path not in KEPT_SUITES:
        return False
    return True


def write_tree(out: Path, force: bool = False) -> list[str]:
    if out.exists():
        if not force:
            raise SystemExit(f"feedback_grader: {out} exists (--force replaces it)")
        shutil.rmtree(out)
    files = [f for f in tracked_files() if kept(f) and (REPO / f).is_file()]
    for rel in files:
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, dest)
    leaked = [f for f in files if f.startswith(LEFT_OUT) or "hidden" in Path(f).name]
    if leaked:
        raise SystemExit(f"feedback_grader: refusing, these would leak: {leaked}")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write the tree into")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    args = parser.parse_args(argv)
    files = write_tree(args.out, args.force)
    print(f"feedback_grader: wrote {len(files)} files to {args.out} (no reference/, no gallery, public suite only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
