"""Build-time policy checks: what a student's sources include and what its objects define and use.

Two scans, both run by build.py on every student .cu (a slot file or a helper):

* before compiling, the source and the student/ headers it includes (transitively): an `#include` of
  `<cub/...>` or `<thrust/...>` (the file and line are the evidence; such a file is not compiled, so
  the verdict is policy_violation even where the emulation backend's g++ cannot compile the header);
* after compiling, the object's symbol table (`nm`; on the GPU backend nvcc's host object holds the
  kernels' host stubs and every host template instantiation, so the same scan works on both):

  - library scans, used or defined: any name in namespace `cub::` (`cub::CUB_300000_SM_900::` too) or
    `thrust::`, CUDPP (`cudpp*`), ModernGPU (`mgpu::`), and `std::inclusive_scan`, `std::exclusive_scan`,
    `std::partial_sum` and their `transform_` forms (host scans; only when not inlined away);
  - uses (an undefined reference, nm `U`) of a `scangrade::` name outside `scangrade::student` and
    CONTRACT_INLINE (on the emulation backend `scangrade::emu` too: the rewritten kernels call the
    emulator): the reference solution (`scangrade::reference::hierarchical_scan`) or other harness code
    called by name (no worker links the reference: without this rule such a file would fail to link,
    with a linker message instead of the rule);
  - definitions, of an external symbol only (internal ones cannot replace anything): a `scangrade::`
    name outside `scangrade::student` (the contract header's own inline names, CONTRACT_INLINE, are
    emitted as weak symbols by every submission and are allowed; on the emulation backend so are the
    emulated runtime's inline templates in `scangrade::emu`), a CUDA runtime/driver/CUPTI entry point
    (`cuda*`, `cu[A-Z]*`, `cupti*`; a template instantiation of the runtime header's inline wrappers
    is not one), an allocator interposer (`malloc`, `free`, `operator new`/`delete`, `mmap`, `dlsym`,
    ...) and `main`.

Each finding is a Violation whose `evidence` names the file or symbol and the rule; the judge shows it
as "student/<slot>.cu breaks a rule of the assignment: <evidence>".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RULE_LIBRARY = "CUB and Thrust (and other library scans) are not allowed in this assignment"
RULE_HARNESS = ("student code may define names only in scangrade::student; the other scangrade:: names "
                "belong to the harness")
RULE_HARNESS_USE = ("student code may not call the reference solution or the harness: scangrade:: names outside "
                    "scangrade::student are not part of a submission")
HARNESS_USE_TEXT = "which belong{s} to the reference solution / harness: {it} not linked into your program"
RULE_RUNTIME = "student code may not define CUDA runtime, driver or CUPTI entry points"
RULE_ALLOCATOR = ("student code may not define allocator functions (malloc, free, operator new/delete, mmap, "
                  "dlsym, ...)")
RULE_MAIN = "student code may not define main: the harness owns the program"

# scangrade:: names the contract header (harness/include/scangrade/student_api.h) defines inline: every
# submission that includes it may emit them as weak symbols (tests keep this list equal to the header's)
CONTRACT_INLINE = frozenset({"ScanKind", "kHillisSteeleMaxN", "kBlellochMaxN", "NotImplemented",
                             "not_implemented"})

LIBRARY_HEADERS = ("cub", "thrust")
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".inl", ".inc")
SYMBOL_SHOWN = 160   # characters of a demangled symbol quoted in the evidence
SYMBOLS_SHOWN = 3    # symbols named per rule and verb

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])\s*([^>"]+?)\s*[>"]')
_LIBRARY_NAME = re.compile(r"(?<![\w:])(?:cub|thrust|mgpu)::"
                           r"|(?<![\w:])std::(?:transform_)?(?:inclusive_scan|exclusive_scan)\b"
                           r"|(?<![\w:])std::partial_sum\b"
                           r"|^cudpp[A-Z]\w*")
_RUNTIME = re.compile(r"^(?:cuda[A-Z_]\w*|cu[A-Z]\w*|cupti\w*)$")
_ALLOCATOR = frozenset({"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
                        "memalign", "valloc", "pvalloc", "malloc_usable_size", "mmap", "mmap64", "munmap",
                        "mremap", "dlsym", "dlvsym", "dlopen", "sbrk", "brk"})
# the replaceable operator new/delete; <new>'s placement forms (new(size, void*), delete(void*, void*)) are
# inline library functions nvcc may emit as weak symbols, and replace nothing
_OPERATOR_NEW_DELETE = re.compile(r"^_Z(?:nw|na|dl|da)(?!mPv$|PvS_$)")
# the start of a mangled name: special-name prefixes, a local entity's Z, a nested name's N and qualifiers
_MANGLED_HEAD = re.compile(r"_Z(?:T[VTISHW]|GV)?Z?(N[rVKRO]*)?")
_NM_LINE = re.compile(r"^[0-9a-fA-F]*\s+(?P<type>[A-Za-z?-])\s(?P<name>.+)$")


@dataclass(frozen=True)
class Violation:
    rule: str
    evidence: str       # what and where, ending with the rule


@dataclass(frozen=True)
class Symbol:
    mangled: str
    demangled: str
    kind: str           # nm's type letter

    @property
    def defined(self) -> bool:
        return self.kind not in ("U", "w", "v")     # lowercase w/v: an undefined weak reference

    @property
    def external(self) -> bool:
        return self.kind.isupper() or self.kind in ("u", "v", "w")   # u: a unique global

    @property
    def weak(self) -> bool:
        return self.kind in ("W", "V", "u")


def parse_nm(mangled_out: str, demangled_out: str) -> list[Symbol]:
    """Pair `nm -p` and `nm -C -p` output (the same symbols in the same order) into Symbols."""
    raw = [m for m in map(_NM_LINE.match, mangled_out.splitlines()) if m]
    nice = [m for m in map(_NM_LINE.match, demangled_out.splitlines()) if m]
    if len(nice) != len(raw):
        nice = raw
    return [Symbol(r["name"], d["name"], r["type"]) for r, d in zip(raw, nice)]


def name_path(mangled: str) -> tuple[list[str], bool]:
    """The leading name components of a mangled symbol and whether template arguments follow them:
    `_ZN9scangrade7student3fooEv` -> (["scangrade", "student", "foo"], False); a C name -> ([name], False)."""
    name = mangled.split("@", 1)[0]
    if not name.startswith("_Z"):
        return [name], False
    head = _MANGLED_HEAD.match(name)
    if head is None:
        return [], False
    i, nested, parts = head.end(), bool(head.group(1)), []
    while True:
        digits = re.match(r"\d+", name[i:])
        if digits is None:
            break
        i += digits.end()
        length = int(digits.group())
        parts.append(name[i:i + length])
        i += length
        if not nested:
            break
    return parts, name[i:i + 1] == "I"


def _shown(symbol: Symbol) -> str:
    text = symbol.demangled
    return text if len(text) <= SYMBOL_SHOWN else text[:SYMBOL_SHOWN] + "..."


def symbol_violations(symbols: list[Symbol], backend: str) -> list[Violation]:
    """Every rule the symbols break, one Violation per rule (its clearest symbol as the evidence)."""
    found: dict[str, list[tuple[str, Symbol]]] = {}

    def hit(rule: str, verb: str, symbol: Symbol) -> None:
        found.setdefault(rule, []).append((verb, symbol))

    for s in symbols:
        if _LIBRARY_NAME.search(s.demangled):
            hit(RULE_LIBRARY, "defines" if s.defined else "calls", s)
            continue
        if s.kind == "U":
            parts, _ = name_path(s.mangled)
            if (len(parts) > 1 and parts[0] == "scangrade" and parts[1] != "student"
                    and parts[1] not in CONTRACT_INLINE and not (backend == "emulate" and parts[1] == "emu")):
                hit(RULE_HARNESS_USE, "uses", s)
            continue
        if not (s.defined and s.external):
            continue
        parts, template = name_path(s.mangled)
        base = parts[0] if parts else ""
        if base == "scangrade" and len(parts) > 1 and parts[1] != "student":
            allowed = s.weak and (parts[1] in CONTRACT_INLINE or backend == "emulate" and parts[1] == "emu")
            if not allowed:
                hit(RULE_HARNESS, "defines", s)
        elif len(parts) == 1 and not template:
            if base == "main":
                hit(RULE_MAIN, "defines", s)
            elif _RUNTIME.match(base):
                hit(RULE_RUNTIME, "defines", s)
            elif base in _ALLOCATOR:
                hit(RULE_ALLOCATOR, "defines", s)
        if _OPERATOR_NEW_DELETE.match(s.mangled):
            hit(RULE_ALLOCATOR, "defines", s)

    violations = []
    for rule, hits in found.items():
        # the shortest names first (a Thrust call instantiates hundreds of long ones), at most SYMBOLS_SHOWN
        hits = sorted(set(hits), key=lambda h: (len(h[1].demangled), h[1].demangled))
        said = []
        for verb in ("defines", "calls", "uses"):
            names = [f"`{_shown(s)}`" for v, s in hits if v == verb][:SYMBOLS_SHOWN]
            if names:
                said.append(f"{verb} {', '.join(names)}")
        more = len(hits) - sum(min(SYMBOLS_SHOWN, sum(1 for v, _ in hits if v == verb))
                               for verb in ("defines", "calls", "uses"))
        tail = f" and {more} more such symbol{'s' if more > 1 else ''}" if more > 0 else ""
        if rule == RULE_HARNESS_USE:
            one = len(hits) == 1
            text = HARNESS_USE_TEXT.format(s="s" if one else "", it="it is" if one else "they are")
            violations.append(Violation(rule, f"it {' and '.join(said)}{tail}, {text}"))
        else:
            violations.append(Violation(rule, f"it {' and '.join(said)}{tail}: {rule}"))
    return violations


def _strip_comments(text: str) -> str:
    """C/C++ comments blanked out, line breaks kept (so line numbers stay right)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.DOTALL)


def include_violations(source: Path, student_dir: Path, display_root: Path) -> list[Violation]:
    """`#include <cub/...>` / `<thrust/...>` in a student source or a student/ header it includes."""
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


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False
