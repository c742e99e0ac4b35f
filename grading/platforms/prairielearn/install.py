#!/usr/bin/env python3
"""Copy what grading on the CPU emulation backend needs from a built ScanGrade tree into an install
folder: the PrairieLearn image's /opt/scangrade (its Dockerfile runs this in the build stage).

    python3 grading/platforms/prairielearn/install.py --build build --dest /stage/opt/scangrade --prefix /opt/scangrade

What goes in: grading/*.py, the scangrade package (Python only) and schemas, grading/platforms/prairielearn/, the public
suite, the starter files (the image's smoke test), the contract and emulator headers, rewrite.py,
and from the build only the judge, the sandbox launcher, the link libraries of toolchain.json's "emulate" recipe and
toolchain.json itself, its paths rewritten to --prefix. What never goes in: reference/ (sources,
rewritten copies or the reference worker), the gallery, tests, object files. PrairieLearn images are
pulled from Docker Hub, so treat the image as public: no model solution and no hidden suite in it
(hidden suites and the secret belong in the course's serverFilesCourse/).

Exit status: 0 installed, 2 the build is missing or has no emulation backend.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SOURCE_FILES = ["testcases/public.json", "harness/emulation/rewrite.py", "grading/policy_rules.json"]
SOURCE_GLOBS = ["grading/*.py", "grading/results.schema.json", "grading/schemas/*.json", "student/*.cu",
                "harness/include/**/*", "harness/emulation/include/**/*", "grading/scangrade/**/*.py",
                "grading/platforms/README.md", "grading/platforms/prairielearn/*"]


def rewrite_paths(value: object, mapping: list[tuple[str, str]]) -> object:
    """Every string (and every -I/-L... flag) that starts with a mapped folder, moved to its new place."""
    if isinstance(value, dict):
        return {k: rewrite_paths(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_paths(v, mapping) for v in value]
    if isinstance(value, str):
        for old, new in mapping:
            for flag in ("", "-I", "-L", "-Wl,-rpath,"):
                if value.startswith(flag + old + "/") or value == flag + old:
                    return flag + new + value[len(flag + old):]
    return value


def install(src: Path, build: Path, dest: Path, prefix: Path) -> list[Path]:
    toolchain_path = build / "grading" / "toolchain.json"
    toolchain = json.loads(toolchain_path.read_text())
    emu = toolchain.get("emulate")
    if not isinstance(emu, dict):
        raise SystemExit(f"install: {toolchain_path} has no 'emulate' recipe: build with Boost.Context installed")
    copied: list[Path] = []

    def copy(from_path: Path, rel: Path) -> None:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(from_path, target)
        copied.append(rel)

    for rel in SOURCE_FILES:
        copy(src / rel, Path(rel))
    for pattern in SOURCE_GLOBS:
        for p in sorted(src.glob(pattern)):
            if p.is_file() and "__pycache__" not in p.parts and p.name != "gallery.py":
                copy(p, p.relative_to(src))
    # from the build: the judge and the emulate recipe's libraries, nothing else
    build_r = build.resolve()
    for item in [toolchain["judge"], toolchain["sandbox"], *emu.get("link", [])]:
        p = Path(item).resolve() if not item.startswith("-") else None
        if p is not None and build_r in p.parents:
            copy(p, Path("build") / p.relative_to(build_r))
    installed = {k: v for k, v in toolchain.items() if k in ("version", "cxx", "judge", "sandbox")}
    installed["emulate"] = {k: v for k, v in emu.items() if k != "reference_worker"}
    mapping = [(str(build_r), str(prefix / "build")), (str(build), str(prefix / "build")),
               (str(src.resolve()), str(prefix)), (str(src), str(prefix))]
    installed = rewrite_paths(installed, mapping)
    out = dest / "build" / "grading" / "toolchain.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(installed, indent=2) + "\n")
    copied.append(Path("build/grading/toolchain.json"))
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit status: 0 installed, 2 no usable build.")
    parser.add_argument("--src", type=Path, default=REPO, help="the ScanGrade tree (default: this one)")
    parser.add_argument("--build", type=Path, required=True, help="its CMake build folder")
    parser.add_argument("--dest", type=Path, required=True, help="where to write the install")
    parser.add_argument("--prefix", type=Path, help="the install's path at run time (default: --dest)")
    args = parser.parse_args(argv)
    if not (args.build / "grading" / "toolchain.json").is_file():
        print(f"install: {args.build}/grading/toolchain.json not found: build the grader first", file=sys.stderr)
        return 2
    try:
        copied = install(args.src.resolve(), args.build.resolve(), args.dest, (args.prefix or args.dest).resolve())
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"install: {len(copied)} files in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
