"""Stage 4 of a build: link the grading worker from the objects the compile stage left.

The student's objects (the slots that compiled and broke no rule, and the helper files) are first
joined into one object whose only global symbols are the slots: Recipe.join_commands joins them,
lists the joined object's symbols, weakens the unique ones the student defined and makes every
other symbol local, so nothing of the student's can interpose on the worker, the harness or the
runtime. The grader's stubs (a not-implemented slot each) are linked beside it. Every step runs in
the sandbox through build_tools.run_tool, writing only under the build's obj/ folder.
"""

from __future__ import annotations

from pathlib import Path

from . import build_tools
from .build_tools import Recipe, Run


def link_worker(recipe: Recipe, slot_objects: dict[str, Path], helper_objects: list[Path],
                stub_objects: dict[str, Path], linked: Path, work: Path, root: Path, timeout: float) -> Run:
    """Link `linked` from the slots' objects, the helpers' and the stubs' (each dict in slot order);
    the run of the step that failed, else of the link."""
    objs = list(stub_objects.values())
    student = list(slot_objects.values()) + list(helper_objects)
    if student:
        joined = work / "obj" / "student_joined.o"
        join, symbols, localize = recipe.join_commands(student, joined)

        def step(cmd: list[str]) -> Run:
            return build_tools.run_tool(cmd, root, timeout, recipe.confine, [], [work / "obj"])

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
    return build_tools.run_tool(recipe.link_command(objs, linked), root, timeout, recipe.confine, [], [work / "obj"])
