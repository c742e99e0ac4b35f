"""Compile a submission's student/ files and link the grading worker; write build.json.

Files compile in parallel, each under a timeout, all of a submission's together under a budget
(COMPILE_BUDGET_S; the files not compiled in time fail, naming the budget), and at most MAX_HELPER_FILES
helper files are compiled (more: none is, and every slot fails with the count). A slot file that fails is replaced by a generated
not-implemented stub, so the other slots still link and are graded; a missing slot file gets the
same stub. A helper .cu (not a slot file) that fails fails every slot. When the link fails, each
slot is tried alone to find the culprit(s).

Policy (policy.py): a file that includes a CUB or Thrust header is not compiled, and every object that
compiles is scanned with `nm` (library scans used or defined; definitions of harness, CUDA runtime,
allocator or `main` symbols); then the allowlists of grading/policy_rules.json judge the compiler's
include tree (-H), the object's undefined and defined symbols, its start-up code (readelf) and its
instructions (objdump), all read in the sandbox. A slot that breaks a rule is linked as a stub, like a slot that did not
compile (nothing of it runs, so an interposer cannot reach the other slots), but it is not a failed
slot: build.json names it in `policy_violations` with the evidence, the judge gives its cases
policy_violation, and the status stays "ok" when nothing else went wrong. A helper that breaks a rule
charges every slot present. build.json follows the `build` object of grading/results.schema.json:

    {"status": "ok"|"compile_error"|"layout_error", "log": STR, "warnings": N,
     "missing_slots": [...], "failed_slots": [...], "policy_violations": {slot: evidence}, "seconds": S}

This module runs the rounds, links the worker and writes build.json. The toolchain's Recipe and running
its tools in the sandbox (run_tool, kills_by_uid) are in build_tools.py, compiling one file (its budget,
the stubs) in build_compile.py, the policy's scans of a compiled file in build_scan.py; their public
names are imported here, so build.<name> reaches them. Every tool runs through build_tools.run_tool (to
wrap or replace it, replace it there).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import build_tools, policy
from .build_compile import (SLOT_FUNCTIONS, STUB_TEMPLATE, Budget, Unit, compile_all,  # noqa: F401
                            stub_source, stub_unit)
from .build_scan import scan_object  # noqa: F401
from .build_tools import (ALLOWLISTS_ENV, COMPILE_NICENESS, KILLED, NICE, SANDBOX_TIMEOUT,  # noqa: F401
                          Confinement, Recipe, Run, ToolchainError, kills_by_uid, paths_named, read_toolchain,
                          run_tool)
from .submission import COMPILER_SAFE, Submission, load_submission
from .vocab import SLOT_FILES, SLOTS

COMPILE_TIMEOUT_S = 120
LINK_TIMEOUT_S = 120
# all compiles of one submission together, and the helper .cu files compiled (grading/policy_rules.json)
COMPILE_BUDGET_S = policy.rules().compile_budget_s
MAX_HELPER_FILES = policy.rules().max_helper_files
LOG_CAP = 8 * 1024


@dataclass
class BuildResult:
    status: str
    log: str = ""
    warnings: int = 0
    missing_slots: list[str] = field(default_factory=list)
    failed_slots: list[str] = field(default_factory=list)
    policy_violations: dict[str, str] = field(default_factory=dict)   # slot -> evidence
    seconds: float = 0.0
    worker: Path | None = None          # the linked worker, None when nothing linked
    harness_errors: list[str] = field(default_factory=list)  # the toolchain, not the submission, failed

    def to_json(self) -> dict:
        return {"status": self.status, "log": self.log, "warnings": self.warnings,
                "missing_slots": self.missing_slots, "failed_slots": self.failed_slots,
                "policy_violations": self.policy_violations, "seconds": round(self.seconds, 3)}

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n")


_NVCC_LOCATION = re.compile(r"^(?P<file>[^\s:()]+\.(?:cu|cuh|h|hpp|cpp|cc))\((?P<line>\d+)\): ", re.MULTILINE)


def normalize_log(text: str, root: Path | None = None) -> str:
    """nvcc writes file(12): error; print it as file:12: error like every other compiler. Paths under
    root (the folder that holds student/) are named from it: student/x.cuh:3, never the grading folder."""
    if root is not None:
        for prefix in dict.fromkeys((str(root), os.path.realpath(root))):
            if prefix.rstrip("/"):
                text = text.replace(prefix.rstrip("/") + "/", "")
    return _NVCC_LOCATION.sub(r"\g<file>:\g<line>: ", text)


_WARNING = re.compile(r"\bwarning\b", re.IGNORECASE)


def count_warnings(text: str) -> int:
    """Lines that report a warning ("warning:" from g++, "warning #12-D:" from nvcc)."""
    return sum(1 for line in text.splitlines() if _WARNING.search(line))


def trim_log(sections: list[str], cap: int = LOG_CAP) -> str:
    """Join log sections (errors first), each cut to its share so later files' first errors survive."""
    if not sections:
        return ""
    share = max(1024, cap // len(sections))
    parts = []
    for s in sections:
        if len(s) > share:
            s = s[:share].rstrip() + f"\n... [{len(s) - share} more characters of this file's output trimmed]\n"
        parts.append(s)
    text = "".join(parts)
    if len(text) > cap:
        text = text[:cap].rstrip() + f"\n... [log trimmed at {cap} characters]\n"
    return text


def write_layout_error(out: Path, message: str) -> BuildResult:
    result = BuildResult(status="layout_error", log=message)
    result.write(out / "build.json")
    return result


def build(sub: Submission, recipe: Recipe, out: Path, jobs: int | None = None,
          timeout: float = COMPILE_TIMEOUT_S, link_timeout: float = LINK_TIMEOUT_S,
          budget_s: float | None = COMPILE_BUDGET_S, max_helpers: int = MAX_HELPER_FILES) -> BuildResult:
    """Compile and link; write <out>/build.json; return the result (worker set when linked)."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if COMPILER_SAFE.fullmatch(str(out)):
        return _build(sub, recipe, out, out, jobs, timeout, link_timeout, budget_s, max_helpers)
    # an output folder whose path the compilers cannot take (a quote, a line break: the compiler's
    # include tree is one path a line) compiles in a private folder; the worker and build.json still
    # go to `out`
    work = Path(tempfile.mkdtemp(prefix="scangrade-build-"))
    try:
        return _build(sub, recipe, out, work, jobs, timeout, link_timeout, budget_s, max_helpers)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build(sub: Submission, recipe: Recipe, out: Path, work: Path, jobs: int | None, timeout: float,
           link_timeout: float, budget_s: float | None, max_helpers: int) -> BuildResult:
    start = time.monotonic()
    if sub.layout_error or sub.student_dir is None or sub.root is None:
        return write_layout_error(out, sub.layout_error or "no student/ folder")
    jobs = jobs or os.cpu_count() or 1
    if recipe.confine.launcher and kills_by_uid(recipe.confine.launcher):
        jobs = 1    # compiles under one uid would end each other (kills_by_uid)
    root, include_dir = sub.root, sub.student_dir

    # round 1: the student's files, and stubs for the missing slots
    units = _first_units(sub, work, max_helpers)
    budget = Budget(budget_s)
    budget.start()
    compile_all(recipe, [u for u in units if u.run is None], include_dir, root, jobs, timeout, budget)

    stub_failures = [u for u in units if u.stub and not u.ok]
    verdicts = _Verdicts.of(units)
    failed, violations = verdicts.failed, verdicts.violations
    policy_stubbed = [s for s in SLOTS if s in violations]

    # round 2: stubs for the slots that failed or broke a rule
    stubs = {u.slot: u for u in units if u.stub}
    extra = [stub_unit(s, f"student/{SLOT_FILES[s]} did not compile", work) for s in failed]
    extra += [stub_unit(s, f"student/{SLOT_FILES[s]} breaks a rule of the assignment", work) for s in policy_stubbed]
    compile_all(recipe, extra, include_dir, root, jobs, timeout)
    stubs.update({u.slot: u for u in extra})
    stub_failures += [u for u in extra if not u.ok]
    if stub_failures:
        # a generated stub always compiles: one that did not failed for want of resources (a heavily
        # loaded machine, no compiler output), so it is tried once more before the build is called
        # broken (not after a timeout: that would only spend the submission's time again)
        retry = [u for u in stub_failures if u.run is not None and u.run.returncode is not None]
        compile_all(recipe, retry, include_dir, root, jobs, timeout)
        stub_failures = [u for u in stub_failures if not u.ok]

    sections, warnings = _log_sections(units, root, verdicts.helpers_failed, recipe)
    result = BuildResult(status="compile_error" if failed else "ok", warnings=warnings,
                         missing_slots=list(sub.missing_slots), failed_slots=failed,
                         policy_violations={s: violations[s] for s in policy_stubbed})
    result.harness_errors += [u.harness_error for u in units if u.harness_error]

    if stub_failures:
        # the harness's own stub did not compile: the toolchain is broken, not the submission
        sections.append("".join(f"== {u.display} (generated) did not compile: harness problem ==\n"
                                f"{u.run.output if u.run else ''}" for u in stub_failures))
        result.harness_errors.append("a generated stub did not compile: the toolchain is broken (internal error)")
    else:
        _link_worker(recipe, units, stubs, verdicts, result, sections, out, work, root, include_dir, jobs, timeout,
                     link_timeout)
    result.log = trim_log(sections)
    result.seconds = time.monotonic() - start
    result.write(out / "build.json")
    return result


def _first_units(sub: Submission, work: Path, max_helpers: int) -> list[Unit]:
    """Round 1's files: the student's slot and helper files, and stubs for the missing slots."""
    units = [Unit(f"student/{p.name}", Path("student") / p.name, work / "obj" / "student" / f"{p.stem}.o", slot)
             for slot, p in sub.slot_files.items()]
    units += [Unit(f"student/{p.name}", Path("student") / p.name, work / "obj" / "student" / f"{p.stem}.o", None)
              for p in sub.helper_files]
    units += [stub_unit(s, f"student/{SLOT_FILES[s]} is missing", work) for s in sub.missing_slots]
    helpers_over = len(sub.helper_files) > max_helpers
    if helpers_over:
        # too many helper files: none is compiled (each would fail every slot anyway)
        for u in units:
            if u.slot is None:
                u.run = Run(1, f"{u.display}: not compiled: student/ has {len(sub.helper_files)} helper .cu files "
                               f"besides the slot files; at most {max_helpers} are compiled: merge some of them\n", 0.0)
    return units


@dataclass
class _Verdicts:
    """What round 1 says of each slot: the rule it breaks, else whether it failed to compile."""
    violations: dict[str, str]          # slot -> evidence (its own, else a helper's)
    helper_violation: str | None        # a helper's broken rule (a helper is linked with every slot)
    helpers_failed: bool                # a helper did not compile: every slot fails
    failed: list[str]                   # slots that did not compile (and broke no rule), in slot order

    @classmethod
    def of(cls, units: list[Unit]) -> "_Verdicts":
        # policy: a slot's own violation, else a helper's (a helper is linked with every slot)
        violations: dict[str, str] = {}
        helper_violation = next((f"{u.display} (a helper file linked with every slot): {u.violations[0].evidence}"
                                 for u in units if u.slot is None and u.violations), None)
        for u in units:
            if u.slot is not None and not u.stub:
                if u.violations:
                    violations[u.slot] = "; ".join(v.evidence for v in u.violations)
                elif helper_violation:
                    violations[u.slot] = helper_violation
        helpers_failed = any(u.slot is None and not u.ok for u in units)
        failed = [u.slot for u in units if not u.stub and u.slot is not None and (not u.ok or helpers_failed)]
        failed = [s for s in SLOTS if s in failed and s not in violations]
        return cls(violations, helper_violation, helpers_failed, failed)


def _log_sections(units: list[Unit], root: Path, helpers_failed: bool, recipe: Recipe) -> tuple[list[str], int]:
    """The build log's sections (rule breakers, then failing files with their first errors, then files
    with warnings only) and the warnings counted."""
    sections: list[str] = []
    warnings = 0
    for u in units:
        text = normalize_log(u.run.output if u.run else "", root)
        warnings += count_warnings(text)
        if not u.ok and not u.stub:
            how = "timed out" if u.run and u.run.returncode is None else f"failed (exit {u.run.returncode})"
            sections.append(f"== {u.display}: compile {how} ==\n{text}")
    if helpers_failed:
        sections.insert(0, "== a helper file did not compile: every slot fails ==\n")
    for u in units:
        if u.violations:
            sections.insert(0, f"== {u.display}: breaks a rule of the assignment (not linked) ==\n"
                               + "".join(f"{v.evidence}\n" for v in u.violations))
    for u in units:
        text = normalize_log(u.run.output if u.run else "", root)
        if u.ok and not u.stub and text.strip():
            sections.append(f"== {u.display}: warnings ==\n{text}")

    if not recipe.allowlists:
        sections.append(f"== note: the build-time allowlists are off ({ALLOWLISTS_ENV}=off) ==\n")
    return sections, warnings


def _link_worker(recipe: Recipe, units: list[Unit], stubs: dict, verdicts: _Verdicts, result: BuildResult,
                 sections: list[str], out: Path, work: Path, root: Path, include_dir: Path, jobs: int,
                 timeout: float, link_timeout: float) -> None:
    """Link the worker: the slots that compiled and the helpers, stubs for the rest. A failed link is
    retried slot by slot to find which slots break it (they fail); the worker goes to out/worker."""
    failed, violations = verdicts.failed, verdicts.violations
    good = {u.slot: u for u in units if not u.stub and u.slot is not None and u.ok and u.slot not in failed
            and u.slot not in violations}
    helpers = [u for u in units if u.slot is None] if not (verdicts.helpers_failed or verdicts.helper_violation) \
        else []
    worker = out / "worker"
    linked = work / "obj" / "worker"   # the link writes only under obj/ (its sandbox's one writable folder)

    def link(real: set[str]) -> Run:
        # the student's objects joined into one whose only global symbols are the slots (see
        # Recipe.join_commands: no interposition); the grader's stubs are linked beside it
        student = [good[s].obj for s in SLOTS if s in real] + [h.obj for h in helpers]
        objs = [stubs[s].obj for s in SLOTS if s not in real]
        if student:
            joined = work / "obj" / "student_joined.o"
            join, symbols, localize = recipe.join_commands(student, joined)

            def step(cmd: list[str]) -> Run:
                return build_tools.run_tool(cmd, root, link_timeout, recipe.confine, [], [work / "obj"])

            run = step(join)
            if not run.ok:
                return run
            listed = step(symbols)  # what nm cannot read has no unique symbol to weaken
            weaken = recipe.unique_symbols_weakened(listed.output, joined) if listed.ok else None
            for cmd in ([weaken] if weaken else []) + [localize]:
                run = step(cmd)
                if not run.ok:
                    return run
            objs.insert(0, joined)
        return build_tools.run_tool(recipe.link_command(objs, linked), root, link_timeout,
                                    recipe.confine, [], [work / "obj"])

    link_run = link(set(good))
    if not link_run.ok:
        # find which slots break the link: each alone with stubs elsewhere
        sections.append(f"== link failed ==\n{normalize_log(link_run.output, root)}")
        stubs_needed = [s for s in good if s not in stubs]
        extra = [stub_unit(s, f"student/{SLOT_FILES[s]} did not link", work) for s in stubs_needed]
        compile_all(recipe, extra, include_dir, root, jobs, timeout)
        stubs.update({u.slot: u for u in extra})
        if any(not u.ok for u in extra):
            result.harness_errors.append("a generated stub did not compile: the toolchain is broken (internal error)")
            good_alone: set[str] = set()
        else:
            good_alone = {s for s in good if link({s}).ok}
        link_run = link(good_alone)
        if not link_run.ok and helpers:
            helpers, good_alone = [], set()
            link_run = link(good_alone)
        newly_failed = set(good) - good_alone
        result.failed_slots = [s for s in SLOTS if s in set(failed) | newly_failed]
        result.status = "compile_error" if result.failed_slots else "ok"
        if not link_run.ok:
            sections.append(f"== link with stubs only failed: harness problem ==\n{link_run.output}")
            result.harness_errors.append("the worker does not link even with stubs: the toolchain is broken")
    if link_run.ok and linked.is_file() and not linked.is_symlink():
        shutil.move(str(linked), str(worker))
        result.worker = worker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compile a submission's student/ files and link the grading worker; write build.json.",
        epilog="Exit status: 0 built (status ok), 1 compile or layout error, 3 toolchain missing.")
    parser.add_argument("submission", type=Path, help="a folder, .zip or .tar.gz containing student/")
    parser.add_argument("--out", type=Path, required=True, help="folder for build.json, objects and the worker")
    parser.add_argument("--build-dir", type=Path, default=Path("build"), help="CMake build folder (default: build)")
    parser.add_argument("--backend", choices=["gpu", "emulate"], default="gpu")
    parser.add_argument("--jobs", type=int, default=None, help="parallel compiles (default: CPU count)")
    parser.add_argument("--timeout", type=float, default=COMPILE_TIMEOUT_S, help="seconds per compile")
    parser.add_argument("--compile-budget", type=float, default=COMPILE_BUDGET_S,
                        help=f"seconds for all compiles of the submission together (default {COMPILE_BUDGET_S:g})")
    args = parser.parse_args(argv)
    try:
        recipe = Recipe.from_toolchain(read_toolchain(args.build_dir), args.backend)
    except ToolchainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    with load_submission(args.submission) as sub:
        result = build(sub, recipe, args.out, args.jobs, args.timeout, budget_s=args.compile_budget)
    print(json.dumps(result.to_json(), indent=1))
    return 0 if result.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
