#!/usr/bin/env python3
"""`make test`: check student/ as the grader does, build each slot on its own, run the kernel tests.

    python3 tools/student_test.py --build build --backend emulate [--suite F] [-- gtest flags]

1. Layout: student/ is read with the grader's own rules (scangrade.submission: the same file names,
   message and suggestion); a layout error stops here, as it stops the grader (every slot scores 0).
2. Build: the test program is built with `make -k`/`ninja -k 0`, so every file is compiled even when
   one fails. Where nvcc is installed, the student files are also compiled for the device by nvcc
   with the grader's flags, even when the tests run emulated: nvcc's errors are the GPU grader's
   compile errors (emulated, the handout's build folder has nvcc-check.json: each file is compiled
   by nvcc here, beside the emulated build; a build with CUDA in CMake compiles scangrade_student). A slot file that does not compile is replaced by a not-implemented
   stand-in (SCANGRADE_STUDENT_STUBS: the handout's harness/starter/ files, else the grader's own
   stub) and reported as COMPILE ERROR, the other slots are tested as usual; a
   helper file that does not compile fails every slot (as in the grader). Compiler output is shown
   with the student's first error first and the emulator's internals trimmed.
3. Policy: the grader's build-time policy (scangrade.policy) on what was built: the source scan of
   each student file (library includes and calls, file:line) and the scans of its objects (nm, readelf,
   objdump: symbols, start-up code, system calls), with the backend each object was built for. A file
   that breaks a rule is printed with the grader's message; its slot, like the grader's
   policy_violation, is not linked (the not-implemented stand-in) and scores 0; a helper file that
   breaks one charges every slot, and no slot is tested. A scan that cannot run (no nm) is a note.
4. Run: the kernel tests (harness/tests/kernel_tests.cpp) with SCANGRADE_COMPILE_ERRORS naming the
   slots that did not compile and SCANGRADE_POLICY_VIOLATIONS those that break a rule.

Exit status: 0 every case that ran passed (a slot that is not implemented is not a failure), 1 some
case failed, a slot did not compile or breaks a rule, 2 layout error (the grader's layout_error), 3
the build itself is broken (not the student's code: CMake, the harness).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the grader's submission rules (grading/scangrade, in the project and in the handout)
import grader_package  # noqa: E402,F401
from scangrade.submission import load_submission  # noqa: E402
from scangrade.vocab import SLOT_FILES, SLOTS  # noqa: E402

EXIT_PASSED, EXIT_FAILED, EXIT_LAYOUT, EXIT_BROKEN = 0, 1, 2, 3
ERROR_LINES = 12  # compiler lines shown per failed file


def cache_value(build: Path, key: str) -> str | None:
    try:
        for line in (build / "CMakeCache.txt").read_text().splitlines():
            if line.startswith(key + ":"):
                return line.split("=", 1)[1]
    except OSError:
        return None
    return None


def starter_dir(build: Path, stubs: list[str]) -> Path:
    """The folder of stand-ins for slots that did not compile: the handout's starter files, else
    (the project) the grader's own generated stubs, written into the build folder."""
    if (ROOT / "harness" / "starter").is_dir():
        return ROOT / "harness" / "starter"
    from scangrade.build import stub_source  # the grader's stub (the project has grading/)
    folder = build / "student-stubs"
    folder.mkdir(parents=True, exist_ok=True)
    for slot in stubs:
        text = stub_source(slot, f"student/{slot}.cu did not compile (make test)")
        if not (folder / f"{slot}.cu").is_file() or (folder / f"{slot}.cu").read_text() != text:
            (folder / f"{slot}.cu").write_text(text)
    return folder


def configure_stubs(build: Path, stubs: list[str]) -> bool:
    """Set SCANGRADE_STUDENT_STUBS (a reconfigure only when it changes); False when CMake failed."""
    want = ";".join(stubs)
    if (cache_value(build, "SCANGRADE_STUDENT_STUBS") or "") == want:
        return True
    run = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), f"-DSCANGRADE_STUDENT_STUBS={want}",
                          f"-DSCANGRADE_STARTER_DIR={starter_dir(build, stubs)}"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr, end="")
    return run.returncode == 0


def build_targets(build: Path, targets: list[str], jobs: int) -> subprocess.CompletedProcess:
    """Every file of the targets compiled, failures or not (make -k, ninja -k 0)."""
    keep_going = ["-k", "0"] if "Ninja" in (cache_value(build, "CMAKE_GENERATOR") or "") else ["-k"]
    cmd = ["cmake", "--build", str(build), "-j", str(jobs)]
    for t in targets:
        cmd += ["--target", t]
    return subprocess.run(cmd + ["--", *keep_going], capture_output=True, text=True)


@dataclass
class NvccCheck:
    """One student file compiled by nvcc beside the emulated build (nvcc-check.json)."""

    name: str  # the file's name without .cu
    process: subprocess.Popen
    out: Path  # the folder of its object, dependency list and stamp
    recipe: dict


def digest_of(recipe: dict, files: list[str]) -> str | None:
    """sha256 of the recipe and of the files' names and contents; None when one is gone."""
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode())
    for name in sorted(files):
        try:
            digest.update(f"{name}\0".encode() + Path(name).read_bytes() + b"\0")
        except OSError:
            return None
    return digest.hexdigest()


def dependencies(depfile: Path) -> list[str]:
    """The files a make-style dependency list (nvcc -MD -MF) names after its target."""
    text = depfile.read_text().replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    return [d.replace("\\ ", " ") for d in re.split(r"(?<!\\)\s+", deps.strip()) if d]


def start_nvcc_checks(build: Path, student: Path) -> list[NvccCheck]:
    """nvcc on every student .cu with the grader's flags (nvcc-check.json, written by CMake when the
    emulated build has an nvcc beside it), all started at once; none without that file. A file whose
    last check passed is not compiled again while the file, everything it included (nvcc's own
    dependency list) and the flags are unchanged; a failure is compiled again on every run, so its
    message always shows."""
    try:
        recipe = json.loads((build / "nvcc-check.json").read_text())
        nvcc, flags = recipe["nvcc"], list(recipe["flags"])
    except OSError:
        return []
    except (ValueError, KeyError, TypeError) as e:
        print(f"note: {build / 'nvcc-check.json'} is unreadable ({e}): student files not compiled by nvcc "
              "(make clean, then make test)")
        return []
    checks = []
    for src in sorted(student.glob("*.cu")):
        out = build / "nvcc-check" / src.stem
        out.mkdir(parents=True, exist_ok=True)
        try:
            stamp = json.loads((out / "passed.json").read_text())
            if digest_of(recipe, stamp["deps"]) == stamp["digest"]:
                continue
        except (OSError, ValueError, KeyError, TypeError):
            pass
        (out / "passed.json").unlink(missing_ok=True)
        # the path relative to where make runs, as the compiler's messages then name it (student/x.cu:N)
        try:
            shown_src = src.relative_to(Path.cwd())
        except ValueError:
            shown_src = src
        cmd = [nvcc, *flags, "-MD", "-MF", str(out / "deps.d"), "-c", str(shown_src), "-o", str(out / f"{src.stem}.o")]
        try:
            process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as e:
            print(f"note: {nvcc} cannot be run ({e.strerror}): student files not compiled by nvcc "
                  "(make clean, then make test, configures again)")
            for check in checks:
                check.process.kill()
                check.process.wait()
            return []
        checks.append(NvccCheck(src.stem, process, out, recipe))
    return checks


def finish_nvcc_checks(checks: list[NvccCheck]) -> dict[str, str]:
    """name -> nvcc's output, for the files nvcc did not compile; the others get their stamp."""
    failed = {}
    for check in checks:
        output, _ = check.process.communicate()
        if check.process.returncode != 0:
            failed[check.name] = output
            continue
        try:
            deps = [str(Path(d).resolve()) for d in dependencies(check.out / "deps.d")]
            digest = digest_of(check.recipe, deps)
        except (OSError, ValueError):
            continue  # no stamp: compiled again next time
        if digest is not None:
            (check.out / "passed.json").write_text(json.dumps({"digest": digest, "deps": deps}))
    return failed


# a compiled student file, as the build names its object: the emulated rewrite
# (emulated/<target>/<name>.<hash>/<name>.cpp) or nvcc's (scangrade_student.dir/.../<name>.cu.o)
EMULATED_OBJECT = re.compile(r"emulated/[^/\s]+/([\w-]+)\.[0-9a-f]{8}/")
NVCC_OBJECT = re.compile(r"scangrade_student\.dir/\S*?([\w-]+)\.cu\.o")


def failed_files(output: str) -> tuple[set[str], set[str]]:
    """Names (without .cu) of the student files whose emulated build (rewrite or compile) failed,
    and of those nvcc failed to compile."""
    emulated, nvcc = set(), set()
    for line in output.splitlines():
        if "*** [" in line or line.startswith("FAILED:"):
            emulated.update(EMULATED_OBJECT.findall(line))
            nvcc.update(NVCC_OBJECT.findall(line))
    return emulated, nvcc


def student_errors(output: str, name: str) -> list[str]:
    """The compiler's lines about student/<name>.cu: its first error first, the emulator's headers'
    template trace and make's own lines dropped."""
    mine = re.compile(rf"(?:^|/)student/{re.escape(name)}\.cu[:(]")
    noise = re.compile(r"harness/emulation/|In instantiation of|required from|In file included from|"
                       r"^\s+from |^make|^gmake|^ninja|^\[|^FAILED:|^Error|^Scanning|^Consolidate|^Rewriting|"
                       r"note:|In function|In member function|At global scope|^compilation terminated|"
                       r"errors? detected in the compilation")
    lines = [l for l in output.splitlines() if mine.search(l) or (l.startswith((" ", "\t")) and l.strip())]
    keep, take = [], False
    for line in output.splitlines():
        if mine.search(line):
            take = not noise.search(line)
            if take:
                keep.append(line)
        elif take and line.startswith((" ", "\t")) and not noise.search(line):
            keep.append(line)  # the source line and caret under a message of ours
        else:
            take = False
    if not keep:
        keep = [l for l in lines if "error" in l][:ERROR_LINES] or output.strip().splitlines()[-ERROR_LINES:]
    first = next((i for i, l in enumerate(keep) if re.search(r"\berror\b", l)), 0)
    ordered = keep[first:] + keep[:first]
    # drop exact repeats (one error reached through several instantiations)
    seen, out = set(), []
    for l in ordered:
        if l not in seen:
            seen.add(l)
            out.append(l)
    return out


def shown(path_text: str) -> str:
    return path_text.replace(str(ROOT) + "/", "")


def compile_errors(output: str, nvcc_failed: dict[str, str],
                   violating: set[str] = frozenset()) -> tuple[dict[str, str], int | None]:
    """Print each student file's compile errors from the failed build's output (and nvcc's own, where
    the nvcc check ran beside the build): the slots to link a stand-in for (slot -> why), or the exit
    status when no slot can be tested. A file that breaks a rule of the policy (`violating`, said
    already) is not a compile error, as in the grader; when only such files broke the build (a second
    main() at the link), their stand-ins are linked next."""
    emulated, nvcc = failed_files(output)
    nvcc |= set(nvcc_failed)
    emulated, nvcc = emulated - violating, nvcc - violating
    failed = emulated | nvcc
    helpers = sorted(f for f in failed if f not in SLOTS)
    if not failed and violating:
        return {}, None
    if not failed:
        print(shown(output[-6000:]), end="")
        print("\nmake test: the build failed outside your files (see above): not your code; please report it")
        return {}, EXIT_BROKEN
    nvcc_only = nvcc - emulated
    for f in sorted(failed):
        by = " by nvcc (the GPU grader's compiler; the emulated build accepts it)" if f in nvcc_only else ""
        print(f"\ncompile error in student/{f}.cu{by}:")
        source = nvcc_failed[f] if f in nvcc_only and f in nvcc_failed else output
        for line in student_errors(source, f)[:ERROR_LINES]:
            print("  " + shown(line))
    if helpers:
        print(f"\nstudent/{helpers[0]}.cu is a helper file, compiled into every slot: no slot can be tested "
              "(the grader gives every slot compile_error)")
        return {}, EXIT_FAILED
    return {f: ("nvcc rejects it (the GPU grader's compiler)" if f in nvcc_only else
                "it does not compile") + ", see the compiler's message above" for f in failed}, None


# --- the grader's build-time policy on what make built ----------------------------------------------

POLICY_TIMEOUT_S = 60  # per nm/readelf/objdump run: each takes well under a second
FATAL_ERROR = re.compile(r"^(?P<file>[^\s:]+):\d+:(?:\d+:)? fatal error: ")


@dataclass
class PolicyFile:
    """A student .cu as the grader's policy scans see it after make built it."""

    name: str                                           # without .cu
    source: Path
    objects: list[tuple[str, Path]] = field(default_factory=list)  # (backend, object) compiled this time
    failed_output: str = ""     # the compiler's fatal errors, where the emulated compile stopped at one


def build_objects(build: Path, student: Path, name: str, program: str, cuda: bool) -> list[tuple[str, Path]]:
    """The objects this build compiled from student/<name>.cu, with the backend each is for: the
    emulated program's (rewrite.py, then g++: emulated/<program>/<name>.<md5 of the folder>/, as
    harness/emulation/CMakeLists.txt names it), CMake's nvcc object (scangrade_student) and make test's
    nvcc check (nvcc-check/<name>/). Only those that exist."""
    found: list[tuple[str, Path]] = []
    if program.endswith("_emu"):
        folder = build / "CMakeFiles" / f"{program}.dir" / "emulated" / program
        digest = hashlib.md5(str(student).encode()).hexdigest()[:8]
        obj = folder / f"{name}.{digest}" / f"{name}.cpp.o"
        if not obj.is_file():  # a folder CMake spelled otherwise: the one object of that name
            others = list(folder.glob(f"{glob_escape(name)}.*/{glob_escape(name)}.cpp.o"))
            obj = others[0] if len(others) == 1 else obj
        found.append(("emulate", obj))
    if cuda:
        target = build / "CMakeFiles" / "scangrade_student.dir"
        try:
            where = student.resolve().relative_to(ROOT)
        except ValueError:
            where = Path(*student.resolve().parts[1:])
        obj = target / where / f"{name}.cu.o"
        if not obj.is_file():
            others = [o for o in target.rglob(f"{glob_escape(name)}.cu.o")
                      if not {"starter", "student-stubs"} & set(o.parts)]
            obj = others[0] if len(others) == 1 else obj
        found.append(("gpu", obj))
    found.append(("gpu", build / "nvcc-check" / name / f"{name}.o"))
    return [(backend, obj) for backend, obj in found if obj.is_file()]


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def fatal_errors(output: str, name: str) -> str:
    """The build output's fatal errors (a missing header) that stopped student/<name>.cu: in the file
    itself or in a header it included."""
    mine = re.compile(rf"(?:^|[\s/]){re.escape('student/' + name)}\.cu:")
    keep, included_by_mine = [], False
    for line in output.splitlines():
        if line.startswith("In file included from "):
            included_by_mine = bool(mine.search(line))
        elif line.lstrip().startswith("from ") and line.startswith(" "):
            included_by_mine = included_by_mine or bool(mine.search(line))
        else:
            m = FATAL_ERROR.match(line)
            if m and (included_by_mine or mine.search(m.group("file") + ":")):
                keep.append(line)
            included_by_mine = False
    return "\n".join(keep)


def policy_recipe(backend: str):
    """The grader's recipe, as far as its scans of an object use it: the backend, the binutils and the
    allowlists (compiling is make's; the tools run without the grader's sandbox, on the student's own
    files)."""
    from scangrade.build_tools import ALLOWLISTS_ENV, Recipe
    tools = {tool: shutil.which(tool) or tool for tool in ("nm", "readelf", "objdump")}
    return Recipe(backend, ("c++",), (), ("c++",), (), ("rewrite",) if backend == "emulate" else None, **tools,
                  allowlists=os.environ.get(ALLOWLISTS_ENV, "on") != "off")


def policy_findings(files: list[PolicyFile], root: Path, student: Path) -> tuple[dict[str, list], list[str]]:
    """The grader's build-time findings per file (name -> policy.Violation list, files with none left
    out), as build_compile.compile_unit makes them: the source scan first (a file it flags is not even
    compiled by the grader), a compile stopped at a forbidden header, else the scans of each object
    (nm, readelf, objdump) with the backend it was built for, each rule once. And notes for the scans
    that could not run (a missing nm): never an exception. The files are scanned in parallel."""
    try:
        from scangrade import policy
        from scangrade.build_scan import scan_object
        from scangrade.build_tools import ToolchainError
    except Exception as exc:  # noqa: BLE001 -- a broken policy never stops make test
        return {}, [f"the grader's policy scans cannot load ({type(exc).__name__}: {exc}): not checked"]
    notes = []
    missing = [tool for tool in ("nm", "readelf", "objdump") if shutil.which(tool) is None]
    if missing and any(f.objects for f in files):
        notes.append(f"{', '.join(missing)} not found (binutils): the grader's scans of your objects (symbols, "
                     "start-up code, system calls) are skipped")
        files = [dataclasses.replace(f, objects=[]) for f in files]

    def scan(f: PolicyFile) -> tuple[list, str | None]:
        try:
            violations = policy.include_violations(f.source, student, root)
            if not violations and f.failed_output:
                violations = policy.missing_header_violations(f.failed_output, "emulate")
            for backend, obj in ([] if violations else f.objects):
                try:
                    more = scan_object(policy_recipe(backend), obj, root, POLICY_TIMEOUT_S)
                except ToolchainError as exc:
                    return violations, f"the grader's policy scan of student/{f.name}.cu did not run ({exc})"[:300]
                violations += [v for v in more if v.rule not in {w.rule for w in violations}]
            return violations, None
        except Exception as exc:  # noqa: BLE001
            return [], f"the grader's policy scan of student/{f.name}.cu failed ({type(exc).__name__}: {exc})"[:300]

    with ThreadPoolExecutor(max_workers=max(1, min(len(files), os.cpu_count() or 1))) as pool:
        results = list(pool.map(scan, files))
    found = {f.name: violations for f, (violations, _) in zip(files, results) if violations}
    failed = [note for _, note in results if note]
    if failed:  # one line, however many files
        notes.append(failed[0] + (f" (and for {len(failed) - 1} more file{'s' if len(failed) > 2 else ''})"
                                  if len(failed) > 1 else ""))
    return found, notes


def judge_message(slot: str, evidence: str) -> str:
    """The message the grader's judge gives each case of a slot with a build-time violation
    (grading/judge/functional.cpp, Build::verdict)."""
    return f"student/{SLOT_FILES[slot]} breaks a rule of the assignment: {evidence}"


def wrapped(text: str, indent: str = "") -> str:
    """A block line wrapped at 80 columns like the test program's messages (continuations 2 further in)."""
    return textwrap.fill(text, 80, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def policy_verdicts(found: dict[str, list], present: list[str]) -> tuple[dict[str, str], str | None]:
    """The grader's verdicts from the findings (build._Verdicts, the grader's own rule): slot -> the
    judge's message for each slot present that is charged (its own violation, else a helper's), and the
    helper's evidence when a helper breaks a rule (every slot present is charged)."""
    from scangrade.build import Run, Unit, _Verdicts
    units = [Unit(f"student/{name}.cu", Path("student") / f"{name}.cu", Path(), name if name in SLOTS else None,
                  run=Run(0, "", 0.0), violations=found.get(name, [])) for name in present]
    verdicts = _Verdicts.of(units)
    return {slot: judge_message(slot, why) for slot, why in verdicts.violations.items()}, verdicts.helper_violation


def report_policy(found: dict[str, list], messages: dict[str, str], helper: str | None) -> None:
    """One block per file that breaks a rule: what the grader does with it and its message (a helper's:
    the one every slot gets; the grader names one helper and its first finding, the others follow)."""
    for name in sorted(found, key=lambda n: (n not in SLOTS, SLOTS.index(n) if n in SLOTS else 0, n)):
        if name in SLOTS:
            print("\n" + wrapped(f"policy violation in student/{name}.cu: the grader does not link it, and every "
                                 f"case of the {name} slot scores 0 (policy_violation), with this message:"))
            print(wrapped(messages[name], "  "))
            continue
        charged = [s for s in SLOTS if s in messages and helper and helper in messages[s]]
        print("\n" + wrapped(f"policy violation in student/{name}.cu, a helper file linked with every slot: the "
                             "grader links neither it nor any slot, and every case of "
                             f"{', '.join(charged) or 'every slot'} scores 0 (policy_violation)"
                             + (f", with this message ({charged[0]}'s):" if charged else ":")))
        rest = found[name]
        if charged and helper.startswith(f"student/{name}.cu "):
            print(wrapped(messages[charged[0]], "  "))
            rest = rest[1:]
        for v in rest:
            print(wrapped(f"student/{name}.cu: {v.evidence}", "  "))


def check_policy(build: Path, sub, sub_dir: Path, program: str, cuda: bool, output: str,
                 nvcc_failed: dict[str, str]) -> tuple[dict[str, str], set[str], str | None]:
    """The grader's build-time policy on the student files make just built (`sub_dir`: student/ as
    CMake names it): prints each finding, or a note where a scan could not run; returns slot -> the
    grader's message for the slots it charges, the files that break a rule, and, when a helper file
    breaks one, that helper's evidence. Never raises: a policy that cannot run is a note."""
    try:
        emulated_failed, nvcc_failed_names = failed_files(output)
        nvcc_failed_names |= set(nvcc_failed)
        present = sorted([p.stem for p in sub.slot_files.values()] + [p.stem for p in sub.helper_files],
                         key=lambda n: (n not in SLOTS, SLOTS.index(n) if n in SLOTS else 0, n))
        files = []
        for name in present:
            source = sub.student_dir / f"{name}.cu"
            objects = [(backend, obj) for backend, obj in build_objects(build, sub_dir, name, program, cuda)
                       if not (name in emulated_failed if backend == "emulate" else name in nvcc_failed_names)
                       and fresh(obj, source)]
            files.append(PolicyFile(name, source, objects,
                                    fatal_errors(output, name) if name in emulated_failed else ""))
        found, notes = policy_findings(files, sub.root, sub.student_dir)
        for note in dict.fromkeys(notes):
            print(f"note: {note}; make test goes on")
        if not found:
            return {}, set(), None
        messages, helper = policy_verdicts(found, present)
    except Exception as exc:  # noqa: BLE001 -- never stops make test
        print(f"note: the grader's policy scans failed ({type(exc).__name__}: {exc}); make test goes on")
        return {}, set(), None
    report_policy(found, messages, helper)
    return messages, set(found), helper


def fresh(obj: Path, source: Path) -> bool:
    """The object is not older than its source (one left from an earlier build is not scanned)."""
    try:
        return obj.stat().st_mtime >= source.stat().st_mtime
    except OSError:
        return False


def run_tests(program: Path, args: argparse.Namespace, errors: dict[str, str],
              violations: dict[str, str] | None = None) -> int:
    """The kernel tests, told which slots did not compile and which break a rule (they fail)."""
    env = dict(os.environ)
    env["SCANGRADE_COMPILE_ERRORS"] = ";".join(f"{s}={why}" for s, why in sorted(errors.items()))
    # one slot a line: the grader's message may hold ';'
    env["SCANGRADE_POLICY_VIOLATIONS"] = "\n".join(f"{s}={' '.join(why.split())}"
                                                   for s, why in sorted((violations or {}).items()))
    # emulated cases run in forked children: up to --jobs of them at once, the screen as with one
    env.setdefault("SCANGRADE_TEST_JOBS", str(max(1, args.jobs)))
    try:  # the program as the rerun commands name it: relative to where make runs
        shown_program = str(program.relative_to(Path.cwd()))
    except ValueError:
        shown_program = str(program)
    cmd = [shown_program] + ([f"--suite={args.suite}"] if args.suite else []) + args.gtest
    rc = subprocess.run(cmd, env=env, executable=str(program)).returncode
    if rc == 0 and (errors or violations):
        return EXIT_FAILED
    return EXIT_FAILED if rc != 0 else EXIT_PASSED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit status: 0 passed, 1 failed, compile error or policy violation, "
                                            "2 layout error, 3 the build is broken (not your code).")
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="CMake build folder (configured)")
    parser.add_argument("--backend", choices=("gpu", "emulate"), default="emulate")
    parser.add_argument("--suite", help="suite file (default: testcases/public.json)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="parallel build jobs, and emulated test cases run at once (default: the CPU count)")
    parser.add_argument("gtest", nargs="*", help="flags for the test program (after --), e.g. --gtest_filter=...")
    args = parser.parse_args(argv)
    build = args.build.resolve()
    sys.stdout.reconfigure(line_buffering=True)  # our lines before the test program's

    # 1. the grader's layout rules
    sub_dir = Path(cache_value(build, "SCANGRADE_STUDENT_DIR") or ROOT / "student")
    sub = load_submission(sub_dir)
    if sub.layout_error:
        print(f"layout error: {sub.layout_error}")
        print("The grader refuses this layout (layout_error): every slot would score 0. Nothing was built.")
        return EXIT_LAYOUT
    for note in sub.notes:
        print(f"note: {note}")

    # 2. build, every file on its own
    cuda = (cache_value(build, "SCANGRADE_CUDA") or "").upper() in ("ON", "TRUE", "1")
    program = "scangrade_student_test" + ("_emu" if args.backend == "emulate" else "")
    targets = [program] + (["scangrade_student"] if cuda and args.backend == "emulate" else [])
    if not configure_stubs(build, []):
        return EXIT_BROKEN
    checks = start_nvcc_checks(build, sub_dir) if args.backend == "emulate" else []
    also = " (and student/*.cu with nvcc, as the GPU grader compiles them)" if checks else ""
    print(f"building {', '.join(targets)}{also} ...", flush=True)
    first = build_targets(build, targets, args.jobs)
    nvcc_failed = finish_nvcc_checks(checks)
    output = first.stdout + first.stderr if first.returncode != 0 else ""

    # 3. the grader's build-time policy on what was built
    violations, violating, helper = check_policy(build, sub, sub_dir, program, cuda, output, nvcc_failed)
    errors: dict[str, str] = {}  # slot -> why
    if first.returncode != 0 or nvcc_failed:
        errors, stop = compile_errors(output, nvcc_failed, violating)
        if stop is not None:
            return stop
    if helper is not None:
        print("\n" + wrapped("no slot is tested: a helper file that breaks a rule is linked with every slot "
                             "(the grader gives every slot policy_violation, 0 points)"))
        return EXIT_FAILED
    stubs = sorted(set(errors) | set(violations))
    if stubs:
        print(f"\ntesting the other slots; {', '.join(stubs)}: a not-implemented stand-in is linked instead")
        if not configure_stubs(build, stubs):
            return EXIT_BROKEN
        second = build_targets(build, [program], args.jobs)
        if second.returncode != 0:
            print(shown((second.stdout + second.stderr)[-6000:]), end="")
            print("\nmake test: the build failed with the stand-ins linked: please report it")
            return EXIT_BROKEN

    # what the build did with the per-machine emulation runtime (harness/cmake/runtime_cache.cmake), once
    note = build / "runtime-cache.note"
    if note.is_file():
        print(note.read_text().strip())
        note.unlink()

    # 4. run
    return run_tests(build / program, args, errors, violations)


if __name__ == "__main__":
    sys.exit(main())
