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

Then the allowlists of grading/policy_rules.json (data, a reason on every rule; anything no rule allows
is a violation), on both backends:

* included files: the compiler's own include tree (g++ -H; nvcc hands -H to the host compiler for its
  host and device preprocessing), after macros: what a student file includes itself must be a student/
  file, the contract header, a CUDA runtime/device header or the C++ standard library; what an allowed
  system header includes is allowed; a forbidden header (CUB, Thrust, cuda.h, CUPTI, dlfcn.h, <thread>,
  unistd.h, sys/*, ...) is reported with its chain (file:line);
* undefined symbols (nm `U`): only what a scan slot needs (device memory, streams, events, launches and
  nvcc's registration calls, errors, device queries, the C++ runtime and library, the C library's string,
  printing and math functions; emulated, the launcher/shared-memory/barrier/warp names of the emulator);
* defined symbols: no C-linkage definition, nothing strong in a reserved namespace (std, cuda, scangrade...);
* start-up code (readelf): nothing in .init_array/.ctors/.fini_array... but nvcc's registration and the
  compiler's own static initializers (guards, <iostream>, the emulator's kernel records);
* instructions (objdump): no syscall/sysenter/int $0x80 in the host code.

Each finding is a Violation whose `evidence` names the file or symbol and the rule; the judge shows it
as "student/<slot>.cu breaks a rule of the assignment: <evidence>".
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

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
    """Every denylist rule the symbols break, one Violation per rule (its clearest symbol as the evidence)."""
    return _evidence(_denylist_hits(symbols, backend))


def _denylist_hits(symbols: list[Symbol], backend: str) -> dict[str, list[tuple[str, Symbol]]]:
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
    return found


def _evidence(found: dict[str, list[tuple[str, Symbol]]]) -> list[Violation]:
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


# --- the allowlists (grading/policy_rules.json) ---------------------------------------------------------

RULES_FILE = Path(__file__).resolve().parent.parent / "policy_rules.json"


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern
    why: str
    where: str = ""
    backend: str = ""

    def applies(self, backend: str) -> bool:
        return not self.backend or self.backend == backend

    def matches(self, text: str, backend: str, where: str = "") -> bool:
        return (self.applies(backend) and (not self.where or self.where == where)
                and self.pattern.fullmatch(text) is not None)


def _rules(rows: list[dict]) -> tuple[Rule, ...]:
    return tuple(Rule(re.compile(r["pattern"]), r["why"], r.get("where", ""), r.get("backend", "")) for r in rows)


@dataclass(frozen=True)
class Rules:
    """grading/policy_rules.json, compiled: what a submission may include, call, define and run before main."""

    include_direct: tuple[Rule, ...]
    include_known: tuple[Rule, ...]
    include_otherwise: str
    undefined_allow: tuple[Rule, ...]
    undefined_known: tuple[Rule, ...]
    undefined_otherwise: str
    reserved_namespaces: frozenset[str]
    c_linkage_allowed: tuple[Rule, ...]
    why_c_linkage: str
    why_reserved: str
    startup_entries: tuple[Rule, ...]
    initializer_may_use: tuple[Rule, ...]
    why_startup: str
    instructions: tuple[Rule, ...]
    compile_budget_s: float
    max_helper_files: int

    @classmethod
    def load(cls, path: Path = RULES_FILE) -> "Rules":
        doc = json.loads(Path(path).read_text())
        inc, und, dfn, st, ins, bud = (doc[k] for k in ("includes", "undefined", "defined", "startup",
                                                         "instructions", "budget"))
        return cls(_rules(inc["direct"]), _rules(inc["known"]), inc["otherwise"],
                   _rules(und["allow"]), _rules(und["known"]), und["otherwise"],
                   frozenset(dfn["reserved_namespaces"]), _rules(dfn["c_linkage_allowed"]), dfn["why_c_linkage"],
                   dfn["why_reserved"], _rules(st["allowed_entries"]), _rules(st["initializer_may_use"]), st["why"],
                   _rules(ins["forbidden"]), float(bud["compile_budget_s"]), int(bud["max_helper_files"]))


@functools.lru_cache(maxsize=None)
def rules() -> Rules:
    return Rules.load()


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
    """None when the submission may include this header itself, else the reason it may not."""
    r = rules()
    if where != "student":
        for rule in r.include_known:
            if rule.matches(rel, backend):
                return rule.why
    if any(rule.matches(rel, backend, where) for rule in r.include_direct):
        return None
    return r.include_otherwise


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


# -- symbols -------------------------------------------------------------------------------------------

_SPECIAL = re.compile(r"^(typeinfo name for|typeinfo for|vtable for|VTT for|construction vtable for|"
                      r"guard variable for|TLS init function for|TLS wrapper function for|reference temporary #\d+ for)"
                      r" ")


def symbol_key(demangled: str) -> str:
    """A symbol's name without its parameters and return type: `std::runtime_error::runtime_error`,
    `operator new`, `typeinfo for std::runtime_error`; a C name unchanged."""
    text = demangled.split("@", 1)[0].strip()
    special = _SPECIAL.match(text)
    if special:
        return special.group(1) + " " + symbol_key(text[special.end():])
    depth, start = 0, 0
    out_end = len(text)
    i = 0
    while i < len(text):
        c = text[i]
        if c in "<[":
            depth += 1
        elif c in ">]":
            depth -= 1
        elif c == "(" and depth == 0:
            if text.startswith("operator", start) and text[start:i].strip() in ("operator", "operator()"):
                i += 1
                continue
            if text[start:i].endswith("operator"):
                i += 1
                continue
            out_end = i
            break
        elif c == " " and depth == 0:
            if not text[start:i].endswith("operator") and not text[i + 1:].startswith(("new", "delete", "const")):
                start = i + 1
        i += 1
    key = text[start:out_end].strip()
    if text.startswith("operator ", start) or key.startswith("operator"):
        key = re.sub(r"^(operator (?:new|delete)(?:\[\])?).*$", r"\1", key)
    return key


def _reason(key: str, backend: str, known: tuple[Rule, ...], allow: tuple[Rule, ...],
            otherwise: str) -> str | None:
    for rule in known:
        if rule.matches(key, backend):
            return rule.why
    if any(rule.matches(key, backend) for rule in allow):
        return None
    return otherwise


def _namespace(symbol: Symbol) -> str:
    parts, _ = name_path(symbol.mangled)
    if symbol.mangled.startswith(("_ZNSt", "_ZSt", "_ZNKSt", "_ZTISt", "_ZTSSt", "_ZTVSt")):
        return "std"
    return parts[0] if parts else ""


def allowlist_violations(symbols: list[Symbol], backend: str) -> list[Violation]:
    """The 'undefined' and 'defined' rules of policy_rules.json, for the symbols the denylist rules
    (symbol_violations) did not already name."""
    denied = {s.mangled for hits in _denylist_hits(symbols, backend).values() for _, s in hits}
    r = rules()
    found: dict[str, list[tuple[str, Symbol]]] = {}
    for s in symbols:
        if s.mangled in denied:
            continue
        if s.kind == "U":
            parts, _ = name_path(s.mangled)
            if len(parts) > 1 and parts[0] == "scangrade" and (
                    parts[1] == "student" or parts[1] in CONTRACT_INLINE):
                continue    # another student file's function, or the contract's inline names
            why = _reason(symbol_key(s.demangled), backend, r.undefined_known, r.undefined_allow,
                          r.undefined_otherwise)
            if why is not None:
                found.setdefault(why, []).append(("calls", s))
            continue
        if not (s.defined and s.external):
            continue
        if not s.mangled.startswith("_Z"):
            if not any(rule.matches(s.mangled, backend) for rule in r.c_linkage_allowed):
                found.setdefault(r.why_c_linkage, []).append(("defines", s))
            continue
        if s.weak:
            continue    # template and inline instantiations (the compiler's)
        parts, _ = name_path(s.mangled)
        if len(parts) > 1 and parts[0] == "scangrade" and parts[1] == "student":
            continue
        if _namespace(s) in r.reserved_namespaces:
            found.setdefault(r.why_reserved, []).append(("defines", s))
    return _evidence(found)


# -- start-up code and instructions (readelf, objdump) --------------------------------------------------

_SECTION = re.compile(r"^\s*\[\s*(?P<index>\d+)\]\s+(?P<name>\S+)\s+(?P<type>\S+)")
_RELA_HEAD = re.compile(r"^Relocation section '(?P<name>[^']+)'")
_RELA = re.compile(r"^(?P<offset>[0-9a-f]+)\s+[0-9a-f]+\s+(?P<type>\S+)\s+(?:[0-9a-f]+\s+(?P<sym>\S+)\s*(?P<addend>[+-]\s*[0-9a-f]+)?)?")
_SYM = re.compile(r"^\s*\d+:\s+(?P<value>[0-9a-f]+)\s+(?P<size>\d+|0x[0-9a-f]+)\s+(?P<type>\S+)\s+(?P<bind>\S+)\s+"
                  r"\S+\s+(?P<ndx>\S+)\s*(?P<name>\S*)")
STARTUP_SECTIONS = (".init_array", ".preinit_array", ".ctors", ".fini_array", ".dtors", ".init", ".fini")


def _startup_section(name: str) -> bool:
    return any(name == s or name.startswith(s + ".") for s in STARTUP_SECTIONS)


@dataclass
class Elf:
    """What readelf -SW -rW -sW says about an object: sections, relocations, symbols."""

    sections: dict[int, str]
    relocations: dict[str, list[tuple[int, str, int]]]      # section -> (offset, symbol, addend)
    symbols: list[tuple[int, int, str, str, str]]           # (value, size, type, section name, name)
    local_calls: dict[str, set[str]] = field(default_factory=dict)   # function -> functions it calls or
    #                                     jumps to inside the object (no relocation: objdump -d names them)

    @classmethod
    def parse(cls, sections_out: str, relocs_out: str, symbols_out: str, disassembly: str = "") -> "Elf":
        sections = {}
        for line in sections_out.splitlines():
            m = _SECTION.match(line)
            if m:
                sections[int(m["index"])] = m["name"]
        relocations: dict[str, list[tuple[int, str, int]]] = {}
        current = None
        for line in relocs_out.splitlines():
            head = _RELA_HEAD.match(line)
            if head:
                current = head["name"]
                relocations[current] = []
                continue
            m = _RELA.match(line.strip())
            if m and current is not None:
                addend = int(m["addend"].replace(" ", ""), 16) if m["addend"] else 0
                relocations[current].append((int(m["offset"], 16), m["sym"] or "", addend))
        symbols = []
        for line in symbols_out.splitlines():
            m = _SYM.match(line)
            if m and m["ndx"].isdigit():
                size = int(m["size"], 0)
                symbols.append((int(m["value"], 16), size, m["type"], sections.get(int(m["ndx"]), ""), m["name"]))
        local_calls: dict[str, set[str]] = {}
        function = ""
        for line in disassembly.splitlines():
            f = _DISASM_FUNC.match(line)
            if f:
                function = f["name"]
                continue
            c = _LOCAL_CALL.search(line)
            if c and function and c["target"] != function:
                local_calls.setdefault(function, set()).add(c["target"])
        return cls(sections, relocations, symbols, local_calls)

    def function_at(self, section: str, offset: int) -> str:
        best = ""
        for value, size, kind, sec, name in self.symbols:
            if sec == section and kind == "FUNC" and value <= offset < value + max(size, 1):
                return name
            if sec == section and kind == "FUNC" and value == offset:
                best = name
        return best

    def target(self, symbol: str, addend: int) -> tuple[str, int]:
        """A relocation's target as (section, offset) when it names a section, else (symbol, 0)."""
        if symbol in self.sections.values():
            return symbol, addend
        return symbol, 0

    def references_of(self, function: str) -> list[str]:
        """Every symbol a function's relocations name (what it calls, reads or takes the address of) and
        the functions of the object it calls directly, data excepted."""
        data = {name for _, _, kind, _, name in self.symbols if kind in ("OBJECT", "TLS", "SECTION")}
        for value, size, kind, sec, name in self.symbols:
            if name == function and kind == "FUNC":
                out = []
                for off, sym, add in self.relocations.get(".rela" + sec, []):
                    if value <= off < value + size:
                        if sym in self.sections.values() and sym.startswith(".text"):
                            out.append(self.function_at(sym, add + 4) or f"{sym}+{add:#x}")
                        elif sym and sym not in data and not sym.startswith((".bss", ".data", ".rodata", ".tbss",
                                                                             ".tdata", ".LC")):
                            out.append(sym)
                return out + sorted(self.local_calls.get(function, ()))
        return []

    def reached_from(self, function: str) -> list[str]:
        """references_of, through the compiler's own helpers of a static initializer (the -O0
        __static_initialization_and_destruction_0, a function's .cold part)."""
        seen, todo, out = {function}, [function], []
        while todo:
            for ref in self.references_of(todo.pop()):
                helper = ref.startswith("_Z41__static_initialization_and_destruction_0") or ref.startswith(function + ".")
                if helper and ref not in seen:
                    seen.add(ref)
                    todo.append(ref)
                elif not helper:
                    out.append(ref)
        return out


def startup_violations(elf: Elf, backend: str, names: dict[str, str] | None = None) -> list[Violation]:
    """Code that runs before main or at exit, except the compiler's own (nvcc's registration, static
    guards, <iostream>'s init object, the emulator's kernel records). `names`: mangled -> demangled,
    for the evidence."""
    r = rules()
    names = names or {}

    def shown_name(name: str) -> str:
        return f"`{names.get(name, name)[:SYMBOL_SHOWN]}`"

    bad: list[str] = []
    for section in sorted(set(elf.sections.values())):
        if not _startup_section(section):
            continue
        entries = elf.relocations.get(".rela" + section, [])
        if section in (".init", ".fini") or section.startswith((".ctors", ".dtors", ".preinit_array", ".fini_array")):
            names_in = [elf.function_at(*elf.target(sym, add)) or sym for _, sym, add in entries] or [section]
            bad += [f"{shown_name(n)} (in {section})" for n in names_in]
            continue
        for _, sym, add in entries:
            sec, off = elf.target(sym, add)
            fn = elf.function_at(sec, off) if sec != sym or sym in elf.sections.values() else sym
            fn = fn or f"{sec}+{off:#x}"
            allowed = next((rule for rule in r.startup_entries if rule.matches(fn, backend)), None)
            if allowed is None:
                bad.append(f"{shown_name(fn)} (in {section})")
                continue
            if fn.startswith("_GLOBAL__sub_I_"):
                extra = [ref for ref in elf.reached_from(fn)
                         if not any(rule.matches(ref, backend) for rule in r.initializer_may_use)]
                if extra:
                    uses = list(dict.fromkeys(extra))
                    shown = ", ".join(shown_name(x) for x in uses[:SYMBOLS_SHOWN])
                    more = f" and {len(uses) - SYMBOLS_SHOWN} more" if len(uses) > SYMBOLS_SHOWN else ""
                    bad.append(f"a static initializer (a global object with a constructor) that calls {shown}{more}")
    if not bad:
        return []
    shown = ", ".join(dict.fromkeys(bad[:SYMBOLS_SHOWN]))
    more = f" and {len(bad) - SYMBOLS_SHOWN} more" if len(bad) > SYMBOLS_SHOWN else ""
    return [Violation(r.why_startup, f"it runs code before main: {shown}{more}: {r.why_startup}")]


_DISASM_FUNC = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")
_LOCAL_CALL = re.compile(r"\s(?:call|jmp)q?\s+[0-9a-f]+ <(?P<target>[^>+]+)>\s*$")
_DISASM_INSN = re.compile(r"^\s*(?P<addr>[0-9a-f]+):\s+(?P<insn>.*)$")


def instruction_violations(disassembly: str) -> list[Violation]:
    """System-call instructions in the host code (objdump -d --no-show-raw-insn of the object)."""
    found: dict[str, list[str]] = {}
    function, section = "", ""
    for line in disassembly.splitlines():
        if line.startswith("Disassembly of section "):
            section = line[len("Disassembly of section "):].rstrip(":")
            continue
        f = _DISASM_FUNC.match(line)
        if f:
            function = f["name"]
            continue
        m = _DISASM_INSN.match(line)
        if m is None or m["insn"].startswith("R_"):   # a relocation line of objdump -dr
            continue
        insn = re.sub(r"\s+", " ", m["insn"].split("#", 1)[0]).strip()
        for rule in rules().instructions:
            if rule.pattern.match(insn):
                where = f"`{insn}` in {function or section}"
                if where not in found.setdefault(rule.why, []):
                    found[rule.why].append(where)
    return [Violation(why, f"it contains {', '.join(w[:SYMBOLS_SHOWN])}: {why}") for why, w in found.items()]
