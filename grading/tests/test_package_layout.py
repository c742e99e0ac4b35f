"""The grader package's imports go one way: no cycle, and the results readers (results.py,
feedback_text.py) sit below the exporters and the feedback page."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "scangrade"


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def package_imports() -> dict[str, set[str]]:
    """Each module of scangrade -> the scangrade modules it imports (anywhere in it, functions too)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    deps.add(full if full in modules else base)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in modules and d != name and d != "scangrade"}
    return graph


def test_no_import_cycle():
    graph = package_imports()
    assert "scangrade.batch_slurm" in graph and graph["scangrade.feedback"], graph   # the walk sees the modules
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            assert state.get(dep) != 1, "import cycle: " + " -> ".join([*path, node, dep])
            if dep not in state:
                visit(dep, [*path, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_results_and_feedback_text_below_the_exporters():
    graph = package_imports()
    assert graph["scangrade.exporters"] >= {"scangrade.results", "scangrade.feedback_text"}
    assert graph["scangrade.feedback"] >= {"scangrade.results", "scangrade.feedback_text"}
    assert "scangrade.exporters" not in graph["scangrade.feedback"]
    for low in ("scangrade.results", "scangrade.feedback_text", "scangrade.files"):
        assert not graph[low] & {"scangrade.exporters", "scangrade.feedback", "scangrade.grade"}, (low, graph[low])


def test_the_walk_sees_a_cycle(tmp_path, monkeypatch):
    """The cycle test can fail: a package whose two modules import each other is caught."""
    pkg = tmp_path / "scangrade"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert package_imports() == {"scangrade": set(), "scangrade.a": {"scangrade.b"}, "scangrade.b": {"scangrade.a"}}
