"""Every relative link in the repository's Markdown resolves: the file (or folder) it names exists, and
its `#anchor`, if any, is a heading of the target as GitHub makes heading anchors. The README is the
door and the documents under grading/docs/ are the house (issue 38, item 7): a moved section must not
leave a link behind. Build folders and fetched dependencies are not the project's Markdown."""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIP_DIRS = {"build", ".deps", ".realcode", ".git", ".pytest_cache", "node_modules", "grading-results"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); a target may be followed by a title in quotes
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")   # http:, https:, mailto:, ...


def markdown_files() -> list[Path]:
    files = []
    for path in REPO.rglob("*.md"):
        rel = path.relative_to(REPO)
        if not set(rel.parts[:-1]) & SKIP_DIRS and not rel.parts[0].startswith("build"):
            files.append(path)
    return sorted(files)


def shipped_elsewhere() -> dict[Path, Path]:
    """Templates that ship under another path (tools/handout.py's GENERATED, from tools/handout/: the
    handout's README is tools/handout/README.student.md): their links are written from where they ship."""
    tree = ast.parse((REPO / "tools" / "handout.py").read_text(encoding="utf-8"))
    generated = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                     if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "GENERATED")
    return {(REPO / "tools" / "handout" / template).resolve(): (REPO / shipped).parent
            for shipped, template in generated.items() if template.endswith(".md")}


def outside_fences(text: str):
    """(line number, line) for the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            marker = m.group(2)
            if fence is None:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    for number, line in outside_fences(text):
        yield number, INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links and emphasis reduced to their words, code
    spans to their content) lower-cased, every character but letters, digits, spaces, '-' and '_'
    dropped, spaces made '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    kept = "".join(ch for ch in text
                   if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for _, line in outside_fences(path.read_text(encoding="utf-8")):
        h = HEADING.match(line)
        if h:
            base = slug(h.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            result.add(base if n == 0 else f"{base}-{n}")
    return result


def broken_links(path: Path, base: Path) -> list[str]:
    problems = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in LINK.finditer(line):
            target = m.group(1)
            if EXTERNAL.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            where = f"{path.relative_to(REPO)}:{number}: {target}"
            dest = (base / file_part).resolve() if file_part else path
            if not dest.exists():
                problems.append(f"{where}: no such file")
                continue
            if anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where}: no heading with the anchor #{anchor} in {dest.relative_to(REPO)}")
    return problems


def test_slug_follows_github():
    assert slug("The assignment's rules: what is judged, and on what evidence") == \
        "the-assignments-rules-what-is-judged-and-on-what-evidence"
    assert slug("For students: `make test`") == "for-students-make-test"
    assert slug("The model answers (reference/) and how fast they are") == \
        "the-model-answers-reference-and-how-fast-they-are"
    assert slug("Exit codes (grade.py and scangrade_judge)") == "exit-codes-gradepy-and-scangrade_judge"
    assert slug("Suite files (`testcases/`)") == "suite-files-testcases"


def test_markdown_files_are_found():
    files = {p.relative_to(REPO).as_posix() for p in markdown_files()}
    assert "README.md" in files and "grading/docs/index.md" in files
    assert not [f for f in files if f.startswith(("build", ".deps/", ".realcode/"))]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(path):
    base = shipped_elsewhere().get(path.resolve(), path.parent)
    assert broken_links(path, base) == []


def test_readme_links_every_document():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for doc in sorted((REPO / "grading" / "docs").glob("*.md")):
        if doc.name != "README.md":
            assert f"grading/docs/{doc.name}" in readme, f"README.md does not link grading/docs/{doc.name}"
    index = (REPO / "grading" / "docs" / "index.md").read_text(encoding="utf-8")
    for doc in sorted((REPO / "grading" / "docs").glob("*.md")):
        if doc.name != "index.md":
            assert f"({doc.name})" in index, f"grading/docs/index.md does not list {doc.name}"
