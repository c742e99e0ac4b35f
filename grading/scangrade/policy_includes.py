"""The policy's rules on included files (policy.py's docstring tells the whole policy):

* before compiling, in a student source or a student/ header it includes: an `#include` of `<cub/...>` or
  `<thrust/...>`, or a library scan called by its qualified name (`std::inclusive_scan`, ...)
  (include_violations);
* after compiling, grading/policy_rules.json's "includes" on the compiler's own include tree (-H, after
  macros: split_include_tree, include_tree_violations): a header the submission includes itself is refused
  only when it is a scan library or the harness's own (a course may add an allowlist); and a compile that
  stopped at such a header where the backend does not have it (missing_header_violations).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .policy_rules import RULE_LIBRARY, SYMBOLS_SHOWN, Violation, rules

LIBRARY_HEADERS = ("cub", "thrust")
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".inl", ".inc")

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])\s*([^>"]+?)\s*[>"]')
# a library scan called by its qualified name (the name is the violation; templates are often inlined
# away, so the object's symbols may not show it): std:: / cuda::std:: / cooperative_groups:: (or the usual
# alias cg::) inclusive_scan, exclusive_scan, their transform_ forms, and std::partial_sum
_LIBRARY_CALL = re.compile(r"(?<![\w:])((?:cuda\s*::\s*)?std|cooperative_groups|cg)\s*::\s*"
                           r"((?:transform_)?(?:inclusive|exclusive)_scan|partial_sum)\s*[<(]")


def _strip_comments(text: str) -> str:
    """C/C++ comments blanked out, line breaks kept (so line numbers stay right)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.DOTALL)


def include_violations(source: Path, student_dir: Path, display_root: Path) -> list[Violation]:
    """`#include <cub/...>` / `<thrust/...>`, or a call of a library scan by its qualified name
    (std::inclusive_scan, cuda::std::exclusive_scan, cooperative_groups::inclusive_scan, std::partial_sum),
    in a student source or a student/ header it includes."""
    seen: set[Path] = set()
    found: list[str] = []
    todo = [source]
    while todo:
        path = todo.pop(0)
        try:
            path = path.resolve()
            if path in seen or not path.is_file():
                continue
            seen.add(path)
            text = _strip_comments(path.read_text(errors="replace"))
        except OSError:
            continue
        try:
            where = path.relative_to(display_root.resolve()).as_posix()
        except ValueError:
            where = path.name
        for number, line in enumerate(text.splitlines(), 1):
            for call in _LIBRARY_CALL.finditer(line):
                name = re.sub(r"\s+", "", call.group(1)) + "::" + call.group(2)
                found.append(f"{where}:{number} calls {name}")
            m = _INCLUDE.match(line)
            if m is None:
                continue
            target = m.group(2).strip()
            top = target.replace("\\", "/").split("/", 1)[0]
            if top in LIBRARY_HEADERS and "/" in target.replace("\\", "/"):
                bracket = "<>" if m.group(1) == "<" else '""'
                found.append(f"{where}:{number} includes {bracket[0]}{target}{bracket[1]}")
            elif m.group(1) == '"':
                for base in (path.parent, student_dir):
                    candidate = (base / target)
                    try:
                        inside = candidate.resolve().is_relative_to(student_dir.resolve())
                    except OSError:
                        inside = False
                    if inside and candidate.is_file():
                        todo.append(candidate)
                        break
    return [Violation(RULE_LIBRARY, f"{', '.join(found)}: {RULE_LIBRARY}")] if found else []



# -- included files ------------------------------------------------------------------------------------

_TREE_LINE = re.compile(r"^(\.+|!|x) (\S.*)$")   # "!"/"x": a precompiled header used / found invalid
PRECOMPILED = "precompiled headers are not allowed: submit the header's source"
_GUARDS_NOTE = "Multiple include guards may be useful for:"
_MISSING_HEADER = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?:\d+:)? fatal error: (?P<header>[^\s:]+): "
                             r"No such file or directory", re.MULTILINE)


def split_include_tree(output: str) -> tuple[list[str], str]:
    """The compiler's -H lines (the include tree, one or more passes) and the rest of its output (what the
    log shows), with the "Multiple include guards may be useful for:" list that -H adds removed."""
    tree, rest, in_note = [], [], False
    for line in output.splitlines(keepends=True):
        bare = line.rstrip("\n")
        if _TREE_LINE.match(bare):
            tree.append(bare)
            in_note = False
        elif bare == _GUARDS_NOTE:
            in_note = True
        elif in_note and bare.startswith("/") and " " not in bare:
            continue
        else:
            in_note = False
            rest.append(line)
    return tree, "".join(rest)


@dataclass(frozen=True)
class IncludeRoots:
    """Where the headers a compile may reach live, and what each place is called in policy_rules.json."""

    student: tuple[Path, ...]           # the submission's student/ folder (and the emulator's rewritten copies)
    contract: tuple[Path, ...]          # -I folders of the grader (harness/include)
    emulation: tuple[Path, ...] = ()    # harness/emulation/include (emulate backend)
    cuda: tuple[Path, ...] = ()         # the CUDA toolkit's include folders (cccl first)

    def place(self, header: str) -> tuple[str, str]:
        """(where, the path relative to its include folder) of an absolute header path."""
        path = os.path.normpath(header)
        for where, roots in (("student", self.student), ("emulation", self.emulation), ("contract", self.contract)):
            for root in roots:
                rel = _relative(path, root)
                if rel is not None:
                    return where, rel
        if re.match(r"^/tmp/tmpxft_[^/]+$", path):
            return "nvcc", path.rsplit("/", 1)[1]
        m = re.match(r"^/.*?/include/(?:[^/]+/)?c\+\+/[^/]+/(.+)$", path)
        if m:
            return "c++", m.group(1)
        for root in self.cuda:
            rel = _relative(path, root)
            if rel is not None:
                return "cuda", rel
        m = (re.match(r"^/usr/lib/gcc/[^/]+/[^/]+/include/(.+)$", path)
             or re.match(r"^/usr/include/x86_64-linux-gnu/(.+)$", path)
             or re.match(r"^/usr/(?:local/)?include/(.+)$", path))
        if m:
            return "system", m.group(1)
        return "other", path


def _relative(path: str, root: Path) -> str | None:
    for base in {os.path.normpath(str(root)), os.path.realpath(str(root))}:
        if path.startswith(base.rstrip("/") + "/"):
            return path[len(base.rstrip("/")) + 1:]
    real = os.path.realpath(path)
    for base in {os.path.normpath(str(root)), os.path.realpath(str(root))}:
        if real.startswith(base.rstrip("/") + "/"):
            return real[len(base.rstrip("/")) + 1:]
    return None


def cuda_include_roots(nvcc: str | None) -> tuple[Path, ...]:
    """The toolkit's include folders, from nvcc's path: <cuda>/include/cccl (CUB, Thrust, libcu++) first."""
    if not nvcc:
        return ()
    top = Path(os.path.realpath(nvcc)).parent.parent
    roots = []
    for inc in (top / "targets" / "x86_64-linux" / "include", top / "include"):
        roots += [inc / "cccl", inc]
    return tuple(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))


def header_reason(where: str, rel: str, backend: str) -> str | None:
    """None when the submission may include this header itself, else the reason it may not: a header is
    refused only when it is the forbidden thing (policy_rules.json 'includes' 'known': a scan library,
    the harness's own headers), or when the course keeps an allowlist ('direct') that does not list it."""
    if where == "student":
        return None
    r = rules()
    for rule in r.include_known:
        if rule.matches(rel, backend, where):
            return rule.why
    if r.include_direct and not any(rule.matches(rel, backend, where) for rule in r.include_direct):
        return r.include_otherwise
    return None


@dataclass(frozen=True)
class IncludeSite:
    """How to show where a student file includes a header: the file as the student knows it, its text."""

    shown: str
    text: str


def _include_line(site: IncludeSite | None, header_rel: str) -> str:
    if site is None:
        return ""
    lines = _strip_comments(site.text).splitlines()
    name = header_rel.replace("\\", "/")
    macro = None
    for number, line in enumerate(lines, 1):
        m = _INCLUDE.match(line)
        if m is not None:
            target = m.group(2).strip().replace("\\", "/")
            if name == target or name.endswith("/" + target) or target.endswith("/" + name):
                return f":{number}"
        elif macro is None and re.match(r"^\s*#\s*include\s+[A-Za-z_]", line):
            macro = number
    return f":{macro}" if macro else ""


def include_tree_violations(tree: list[str], roots: IncludeRoots, backend: str,
                            site_of: "Callable[[str], IncludeSite | None]", cwd: Path | None = None) -> list[Violation]:
    """The headers a submission includes itself (its main file's and its own headers' direct includes,
    after macros) that the 'includes' rules do not allow, each with the chain that reached it.
    `site_of(path)` gives the student file at an absolute path (main file or student header) for line
    numbers, or None. Relative paths in the tree are relative to `cwd` (the compiler's working folder)."""
    found: dict[str, list[str]] = {}
    # per pass: a stack of (path, state) with state "student" | "allowed" | "forbidden"; depth 1's parent is
    # the file being compiled (the student's)
    stack: list[tuple[str, str]] = []
    for entry in tree:
        m = _TREE_LINE.match(entry)
        if m.group(1) in ("!", "x"):
            if m.group(1) == "!":
                found.setdefault(PRECOMPILED, []).append(f"it uses the precompiled header {Path(m.group(2)).name}")
            continue
        depth, path = len(m.group(1)), m.group(2)
        path = os.path.normpath(path if path.startswith("/") or cwd is None else os.path.join(str(cwd), path))
        del stack[depth - 1:]
        parent_path, parent_state = stack[-1] if stack else ("", "student")
        if parent_state != "student":
            stack.append((path, parent_state))
            continue
        where, rel = roots.place(path)
        if where == "student":
            stack.append((path, "student"))
            continue
        why = header_reason(where, rel, backend)
        if why is None:
            stack.append((path, "allowed"))
            continue
        stack.append((path, "forbidden"))
        # the chain of student files that led here: the compiled file, then its headers
        chain = [site_of("")] + [site_of(p) for p, _ in stack[:-1]]
        shown_chain = [c.shown if c else (p or "the compiled file")
                       for c, p in zip(chain, [""] + [p for p, _ in stack[:-1]])]
        site = chain[-1]
        shown = shown_chain[-1] or "the file"
        text = f"{shown}{_include_line(site, rel)} includes <{rel}>"
        if len(shown_chain) > 1:
            text += f" (through {' -> '.join(shown_chain[:-1])})"
        found.setdefault(why, [])
        if text not in found[why]:
            found[why].append(text)
    return [Violation(why, f"{', '.join(texts[:SYMBOLS_SHOWN])}"
                           f"{f' and {len(texts) - SYMBOLS_SHOWN} more' if len(texts) > SYMBOLS_SHOWN else ''}: {why}")
            for why, texts in found.items()]


def missing_header_violations(output: str, backend: str) -> list[Violation]:
    """A compile that stopped at a forbidden header the backend does not have (the emulation backend has
    no CUB, Thrust or driver API): the same violation as when it is there."""
    found: dict[str, list[str]] = {}
    for m in _MISSING_HEADER.finditer(output):
        rel = m.group("header")
        for rule in rules().include_known:
            if rule.matches(rel, backend):
                text = f"{m.group('file')}:{m.group('line')} includes <{rel}>"
                if text not in found.setdefault(rule.why, []):
                    found[rule.why].append(text)
                break
    return [Violation(why, f"{', '.join(texts)}: {why}") for why, texts in found.items()]
