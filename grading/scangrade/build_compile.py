"""Stages 2 and 3 of a build, for each file of a submission: compile it, then scan what compiled
against the policy. Top to bottom: compile_unit (compile_all runs them in parallel) takes the
denylist's include scan first, then the backend's compile steps in the sandbox under the file's
timeout and the submission's compile budget (Budget), then the policy's scans of what compiled:
the include rules on the compiler's include tree (include_rules) and the symbol, start-up code and
instruction rules on the object (scan_object, read with nm, readelf and objdump in the sandbox);
then what the files say of each slot (SlotVerdicts) and the generated not-implemented stub that
stands in for a slot (stub_unit). Every tool runs through build_tools.run_tool.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import build_tools, policy
from .build_tools import KILLED, Recipe, Run, ToolchainError
from .files import read_head
from .vocab import SLOT_FILES, SLOTS

@dataclass
class Unit:
    """One source file to compile."""

    display: str                # as named in the log: student/blelloch.cu, stub:blelloch
    source: Path                # relative to cwd (student files) or absolute (stubs)
    obj: Path
    slot: str | None            # None: helper file
    stub: bool = False
    run: Run | None = None
    violations: list[policy.Violation] = field(default_factory=list)   # rules this file breaks
    harness_error: str | None = None    # the policy scan itself failed (nm missing or broken)

    @property
    def ok(self) -> bool:
        return self.run is not None and self.run.ok



@dataclass
class Budget:
    """The seconds all compiles of one submission may take together (None: no limit)."""

    seconds: float | None
    deadline: float | None = None

    def start(self) -> None:
        if self.seconds is not None and self.deadline is None:
            self.deadline = time.monotonic() + self.seconds

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


def _budget_text(budget: Budget) -> str:
    return (f"the submission's compile budget ({budget.seconds:g} s for all its files together) was spent: "
            "make the build lighter (less template recursion, fewer files)")


def compile_unit(recipe: Recipe, unit: Unit, include_dir: Path, cwd: Path, timeout: float,
                  budget: Budget | None = None) -> Unit:
    unit.obj.parent.mkdir(parents=True, exist_ok=True)
    outputs: list[str] = []
    seconds = 0.0
    source = unit.source if unit.source.is_absolute() else cwd / unit.source
    if not unit.stub:
        # a library header is a policy violation, not a compile error (g++ may not compile it emulated)
        unit.violations = policy.include_violations(source, include_dir, cwd)
        if unit.violations:
            unit.run = Run(0, "", 0.0)
            return unit
    left = budget.left() if budget is not None and not unit.stub else None
    by_budget = left is not None and left < timeout
    if left is not None and left <= 0:
        unit.run = Run(None, f"{unit.display}: not compiled: {_budget_text(budget)}\n", 0.0)
        return unit
    limit = min(timeout, left) if by_budget else timeout
    tree: list[str] = []
    # student/ named from the working folder (the submission's): nvcc cannot take an -I path holding a
    # quote, and compiler messages then name headers student/x.cuh, not by the grading folder's path
    include_arg = (Path(os.path.relpath(include_dir, cwd))
                   if include_dir.is_absolute() and include_dir.is_relative_to(cwd) else include_dir)
    for cmd in recipe.compile_steps(unit.source, unit.obj, include_arg):
        r = build_tools.run_tool(cmd, cwd, limit, recipe.confine, [include_dir, source.parent], [unit.obj.parent])
        if r.returncode in KILLED:
            # killed from outside (the machine's out-of-memory killer under a batch's load), not by the
            # compiler's verdict: once more before the file is called broken
            seconds += r.seconds
            r = build_tools.run_tool(cmd, cwd, limit, recipe.confine, [include_dir, source.parent], [unit.obj.parent])
        seconds += r.seconds
        lines, shown = policy.split_include_tree(r.output)
        tree += lines
        outputs.append(shown)
        if r.returncode is None:
            why = _budget_text(budget) if by_budget else f"compiler timed out after {timeout:g} s"
            unit.run = Run(None, "".join(outputs) + f"{unit.display}: {why}\n", seconds)
            return unit
        if not r.ok:
            unit.run = Run(r.returncode, "".join(outputs), seconds)
            if not unit.stub and recipe.allowlists:
                # a forbidden header is a violation even where the compile then failed (the emulation
                # backend has no CUB or driver API: the header is missing there)
                found = include_rules(recipe, unit.source, unit.obj, include_dir, cwd, tree)
                found += [v for v in policy.missing_header_violations(r.output, recipe.backend)
                          if v.rule not in {f.rule for f in found}]
                if found:
                    unit.violations = found
                    unit.run = Run(0, "".join(outputs), seconds)
            return unit
    unit.run = Run(0, "".join(outputs), seconds)
    if not unit.stub:
        try:
            unit.violations = (include_rules(recipe, unit.source, unit.obj, include_dir, cwd, tree)
                               if recipe.allowlists else [])
            unit.violations += scan_object(recipe, unit.obj, cwd, timeout)
        except ToolchainError as exc:
            unit.harness_error = str(exc)
    return unit


def compile_all(recipe: Recipe, units: list[Unit], include_dir: Path, cwd: Path, jobs: int,
                timeout: float, budget: Budget | None = None) -> None:
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(lambda u: compile_unit(recipe, u, include_dir, cwd, timeout, budget), units))


# --- the policy's scans of a compiled file --------------------------------------------------------

_LINE_DIRECTIVE = re.compile(r'^#line 1 "((?:[^"\\\n]|\\.)*)"', re.MULTILINE)


def _copy_display(copy: Path) -> str | None:
    """The name (student/x.cuh) that the rewriter's copy of a header gives its original in its first
    #line directive, or None (read without following a link, its first 4 KiB only)."""
    head = read_head(copy, 4096)
    if head is None:
        return None
    m = _LINE_DIRECTIVE.search(head)
    if m is None:
        return None
    return re.sub(r"\\([0-7]{3}|.)", lambda e: chr(int(e.group(1), 8)) if len(e.group(1)) == 3
                  else "\n" if e.group(1) == "n" else e.group(1), m.group(1))


def include_rules(recipe: Recipe, source: Path, obj: Path, include_dir: Path, cwd: Path,
                  tree: list[str]) -> list[policy.Violation]:
    """The include rules on the compiler's include tree, with the student's files and lines as the chain."""
    source = (source if source.is_absolute() else cwd / source).resolve()
    student = include_dir.resolve()
    copies = obj.parent.resolve()

    def site_of(path: str) -> policy.IncludeSite | None:
        target = source if path == "" else Path(path)
        if path and copies in Path(path).parents:
            # the rewriter's copy of a student header (NAME.<stem>.N.SUFFIX next to the object): its
            # first #line names the original from the submission
            display = _copy_display(Path(path))
            if display is None or not display.startswith("student/"):
                return None
            target = student / display[len("student/"):]
        try:
            rel = target.resolve().relative_to(student)
            text = target.read_text(errors="replace")
        except (OSError, ValueError):
            return None
        return policy.IncludeSite(f"student/{rel.as_posix()}", text)

    roots = recipe.include_roots(include_dir.resolve(), copies)
    return policy.include_tree_violations(tree, roots, recipe.backend, site_of, cwd.resolve())


def scan_object(recipe: Recipe, obj: Path, cwd: Path, timeout: float) -> list[policy.Violation]:
    """The symbol rules an object breaks (policy.py), read with `nm` in the sandbox. An object that is
    not ELF (the tests' fake compilers write text) has no symbol table to read."""
    if not policy.is_elf(obj):
        return []
    listings = []
    for demangle in ([], ["-C"]):
        cmd = [recipe.nm, *demangle, "-p", str(obj)]
        r = build_tools.run_tool(cmd, cwd, timeout, recipe.confine, [obj.parent], [])
        if r.returncode not in (0, None):
            # nm fails on a valid object only for want of resources (a heavily loaded machine), and then
            # silently: once more before the object is called unreadable (not after a timeout: that
            # would only spend the submission's time again)
            r = build_tools.run_tool(cmd, cwd, timeout, recipe.confine, [obj.parent], [])
        if not r.ok:
            status = f"timed out after {timeout:g} s" if r.returncode is None else f"exit status {r.returncode}, twice"
            raise ToolchainError(f"nm could not read {obj.name} ({status}): {r.output.strip()[:300]}")
        listings.append(r.output)
    symbols = policy.parse_nm(*listings)
    found = policy.symbol_violations(symbols, recipe.backend)
    if not recipe.allowlists:
        return found
    found += policy.allowlist_violations(symbols, recipe.backend)
    # start-up code (readelf) and system-call instructions (objdump), also read in the sandbox
    outputs = []
    for cmd in ([recipe.readelf, "-SW", str(obj)], [recipe.readelf, "-rW", str(obj)], [recipe.readelf, "-sW", str(obj)],
                [recipe.objdump, "-dr", "--no-show-raw-insn", str(obj)]):
        r = build_tools.run_tool(cmd, cwd, timeout, recipe.confine, [obj.parent], [])
        if not r.ok:
            status = f"timed out after {timeout:g} s" if r.returncode is None else f"exit status {r.returncode}"
            raise ToolchainError(f"{Path(cmd[0]).name} could not read {obj.name} ({status}): {r.output.strip()[:300]}")
        outputs.append(r.output)
    names = {s.mangled.split("@", 1)[0]: s.demangled for s in symbols}
    found += policy.startup_violations(policy.Elf.parse(*outputs), recipe.backend, names)
    found += policy.instruction_violations(outputs[3])
    return found


# --- what the files say of each slot, and the stubs --------------------------------------------------

@dataclass
class SlotVerdicts:
    """What round 1 says of each slot: the rule it breaks, else whether it failed to compile."""
    violations: dict[str, str]          # slot -> evidence (its own, else a helper's)
    helper_violation: str | None        # a helper's broken rule (a helper is linked with every slot)
    helpers_failed: bool                # a helper did not compile: every slot fails
    failed: list[str]                   # slots that did not compile (and broke no rule), in slot order

    @classmethod
    def of(cls, units: list[Unit]) -> "SlotVerdicts":
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


# slot -> (function name, parameters between the pointers' size and the stream)
SLOT_FUNCTIONS = {
    "hillis_steele": ("hillis_steele_inclusive", ""),
    "blelloch": ("blelloch_exclusive", ""),
    "hierarchical": ("hierarchical_scan", "ScanKind, "),
    "single_pass": ("single_pass_inclusive", ""),
}

STUB_TEMPLATE = """\
// Generated by ScanGrade: {reason}
// The {slot} slot reports "not implemented", exactly like the starter file student/{file}.
#include "scangrade/student_api.h"

namespace scangrade::student {{

void {fn}(const std::int32_t*, std::int32_t*, std::size_t, {extra}cudaStream_t) {{ not_implemented("{fn}"); }}
void {fn}(const float*, float*, std::size_t, {extra}cudaStream_t) {{ not_implemented("{fn}"); }}

}}  // namespace scangrade::student
"""


def stub_source(slot: str, reason: str) -> str:
    fn, extra = SLOT_FUNCTIONS[slot]
    return STUB_TEMPLATE.format(reason=reason, slot=slot, file=SLOT_FILES[slot], fn=fn, extra=extra)


def stub_unit(slot: str, reason: str, out: Path) -> Unit:
    src = out / "stubs" / SLOT_FILES[slot]
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(stub_source(slot, reason))
    return Unit(f"stub:{slot}", src, out / "obj" / "stubs" / f"{slot}.o", slot, stub=True)

