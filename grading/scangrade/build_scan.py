"""The policy's scans of one compiled student file (policy.py): the include rules on the compiler's
include tree, with the student's own files and lines as the chain (include_rules), and the symbol,
start-up code and instruction rules on its object, read with nm, readelf and objdump in the sandbox
(scan_object).
"""

from __future__ import annotations

import re
from pathlib import Path

from . import build_tools, policy
from .build_tools import Recipe, ToolchainError
from .files import read_head


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

