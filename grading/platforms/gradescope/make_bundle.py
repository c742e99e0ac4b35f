#!/usr/bin/env python3
"""Build the Gradescope autograder zip: setup.sh and run_autograder at its root, beside the ScanGrade
sources they build and run (Gradescope unpacks the zip into /autograder/source).

    python3 grading/platforms/gradescope/make_bundle.py --out scangrade-gradescope.zip
    python3 grading/platforms/gradescope/make_bundle.py --out hw3.zip --hidden-suite hidden.json --secret-file secret.txt

What goes in: the sources the build and grade.py need (CMakeLists.txt, harness/, student/ starter
files, the public suite, grading/*.py and schemas, grading/platforms/), and scangrade-bundle.json, the
settings that run_autograder.py reads (suites, hidden suites, secret file, emulation cap, time
budget). What never goes in: reference/ and every other file that solves a slot (the gallery, the
grader's and the emulator's test kernels), .git, build folders, the Python tests, the docs'
screenshots, caches, and any suite or secret not named on the command line (hidden suites go to
hidden/, only when given). The zip is unpacked into the image student code runs in, and Gradescope's
container usually keeps bubblewrap out (student code then runs as an unprivileged uid that reads
whatever "others" may read): a model solution in it could be included or printed by a submission.
The emulation backend needs no reference (it gives no timings); hidden/ is made root's alone by
setup.sh and again by run_autograder.py before each grading.

Files come from `git ls-files` (tracked and untracked-but-not-ignored) when the tree is a git
checkout, else from a walk of the tree; the zip is deterministic (sorted, fixed timestamps).
Exit status: 0 written, 2 bad usage (missing file, hidden suite without secret, ...).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
CONFIG_NAME = "scangrade-bundle.json"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

# (top-level) paths the grader needs
INCLUDE = ("CMakeLists.txt", "Makefile", "harness/", "student/", "testcases/public.json", "grading/", "tools/deps.sh")
# never shipped, wherever they are
EXCLUDE_PARTS = {".git", "__pycache__", ".pytest_cache", "gallery", "grading-results", ".deps"}
# what solves a slot (model solutions, gallery entries, test kernels) or shows one (the docs' screenshots)
SOLVES_A_SLOT = ("reference/", "grading/gallery/", "grading/tests/", "grading/judge/tests/", "grading/worker/tests/",
                 "grading/fidelity/", "grading/docs/", "harness/emulation/tests/")
EXCLUDE_PREFIXES = (*SOLVES_A_SLOT, "build", ".github/", ".ci/")
EXCLUDE_SUFFIXES = (".pyc", ".pyo", ".o", ".a", ".so", ".zip", ".tar.gz", ".tgz")
ROOT_SCRIPTS = {"setup.sh": HERE / "setup.sh", "run_autograder": HERE / "run_autograder"}


def candidate_files(repo: Path) -> list[str]:
    """Repository-relative POSIX paths: git's view when it is a checkout, else a walk."""
    if (repo / ".git").exists():
        try:
            r = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                               capture_output=True, check=True, timeout=60)
            return sorted({p for p in r.stdout.decode().split("\0") if p})
        except (OSError, subprocess.SubprocessError):
            pass
    return sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file())


def wanted(rel: str) -> bool:
    path = PurePosixPath(rel)
    if any(part in EXCLUDE_PARTS for part in path.parts):
        return False
    if rel.startswith(EXCLUDE_PREFIXES) or rel.endswith(EXCLUDE_SUFFIXES):
        return False
    return any(rel == inc or (inc.endswith("/") and rel.startswith(inc)) for inc in INCLUDE)


def add_file(zf: zipfile.ZipFile, arcname: str, data: bytes, executable: bool) -> None:
    info = zipfile.ZipInfo(arcname, date_time=ZIP_TIME)
    info.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3     # Unix: the mode above is honoured by unzip
    zf.writestr(info, data)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 written, 2 bad usage. The zip holds the secret when --secret-file is given: "
               "keep it private.")
    parser.add_argument("--out", type=Path, required=True, help="the zip to write")
    parser.add_argument("--hidden-suite", type=Path, action="append", default=[],
                        help="instructor suite shipped as hidden/<name> (repeatable; needs --secret-file)")
    parser.add_argument("--secret-file", type=Path, help="file holding the secret mixed into the hidden suites' seeds")
    parser.add_argument("--suite", type=Path, action="append", default=[],
                        help="public suite shipped as suites/<name> instead of testcases/public.json (repeatable)")
    parser.add_argument("--budget-s", type=float, default=480,
                        help="grade.py's --budget-s on Gradescope (default: %(default)s; keep it below the "
                             "assignment's autograder timeout minus a few minutes for compiling)")
    parser.add_argument("--max-n", type=int, default=None,
                        help="grade only cases with n <= N (default: every case up to the judge's emulation cap)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the ScanGrade tree to bundle (default: this one)")
    args = parser.parse_args(argv)
    if args.hidden_suite and not args.secret_file:
        parser.error("--hidden-suite needs --secret-file")
    if args.secret_file and not args.hidden_suite:
        parser.error("--secret-file only applies to --hidden-suite")
    for f in [*args.hidden_suite, *args.suite, *([args.secret_file] if args.secret_file else [])]:
        if not f.is_file():
            parser.error(f"{f} not found")
    names = [f.name for f in args.hidden_suite]
    if len(set(names)) != len(names) or len({f.name for f in args.suite}) != len(args.suite):
        parser.error("two suites have the same file name")
    if args.budget_s <= 0 or (args.max_n is not None and args.max_n < 0):
        parser.error("--budget-s must be positive and --max-n not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    files = [rel for rel in candidate_files(repo) if wanted(rel) and (repo / rel).is_file()]
    missing = [p for p in ("CMakeLists.txt", "grading/grade.py", "testcases/public.json") if p not in files]
    if missing:
        print(f"make_bundle: error: {repo} has no {missing[0]}: is it a ScanGrade tree?", file=sys.stderr)
        return 2

    config = {"suites": [f"suites/{s.name}" for s in args.suite] or ["testcases/public.json"],
              "hidden_suites": [f"hidden/{s.name}" for s in args.hidden_suite],
              "secret_file": "hidden/secret.txt" if args.secret_file else None,
              "max_n": args.max_n, "budget_s": args.budget_s}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for name, src in ROOT_SCRIPTS.items():
            add_file(zf, name, src.read_bytes(), executable=True)
        add_file(zf, CONFIG_NAME, (json.dumps(config, indent=1) + "\n").encode(), executable=False)
        for rel in files:
            path = repo / rel
            add_file(zf, rel, path.read_bytes(), executable=bool(path.stat().st_mode & 0o111))
        for s in args.suite:
            add_file(zf, f"suites/{s.name}", s.read_bytes(), executable=False)
        for s in args.hidden_suite:
            add_file(zf, f"hidden/{s.name}", s.read_bytes(), executable=False)
        if args.secret_file:
            add_file(zf, "hidden/secret.txt", args.secret_file.read_bytes(), executable=False)
    tmp.replace(args.out)
    size = args.out.stat().st_size
    print(f"make_bundle: wrote {args.out} ({len(files) + len(ROOT_SCRIPTS) + 1} files, {size / 1024:.0f} KiB)"
          + (f"; hidden suites: {', '.join(config['hidden_suites'])} (the zip holds the secret: keep it private)"
             if args.hidden_suite else "; public suite only"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
