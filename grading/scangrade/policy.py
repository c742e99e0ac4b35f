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

Then the rules of grading/policy_rules.json (data, a reason on every rule), on both backends:

* included files: the compiler's own include tree (g++ -H; nvcc hands -H to the host compiler), after
  macros: a header is refused only when it is the forbidden thing (a scan library, the harness's own
  headers), with its chain (file:line); a course may keep an allowlist ('includes.direct');
* undefined symbols (nm `U`): refused by the denylist of capabilities the sandbox exists to deny
  (processes, threads, files, sockets, mappings, dlopen, syscall, the driver API, CUPTI/NVML, graphs,
  IPC, ...); everything else may be called unless a course sets 'undefined.otherwise' (an allowlist);
* defined symbols: not refused by name (the link makes every student symbol but the slots local:
  build_tools.Recipe.join_commands), unless a course sets 'defined.refuse';
* start-up code (readelf): nothing in .init_array/.ctors/.fini_array... but nvcc's registration and the
  compiler's own static initializers (guards, <iostream>, the emulator's kernel records);
* instructions (objdump): no syscall/sysenter/int $0x80 in the host code.

Each finding is a Violation whose `evidence` names the file or symbol and the rule; the judge shows it
as "student/<slot>.cu breaks a rule of the assignment: <evidence>".

This module holds the symbol rules (nm: the denylist and the 'undefined' and 'defined' allowlists); the
included-file rules are in policy_includes.py, the start-up code and instruction rules in policy_elf.py,
and the rules' reasons, Violation and the loaded policy_rules.json in policy_rules.py. Their names are
imported here, so callers use policy.<name> for all of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .policy_elf import STARTUP_SECTIONS, Elf, instruction_violations, is_elf, startup_violations  # noqa: F401
from .policy_includes import (LIBRARY_HEADERS, PRECOMPILED, SOURCE_SUFFIXES, IncludeRoots,  # noqa: F401
                              IncludeSite, cuda_include_roots, header_reason, include_tree_violations,
                              include_violations, missing_header_violations, split_include_tree)
from .policy_rules import (RULE_ALLOCATOR, RULE_HARNESS, RULE_HARNESS_USE, RULE_LIBRARY,  # noqa: F401
                           RULE_INSTRUMENTATION, RULE_MAIN, RULE_RUNTIME, RULES_FILE, SYMBOL_SHOWN, SYMBOLS_SHOWN, Rule, Rules,
                           Violation, rules)

HARNESS_USE_TEXT = "which belong{s} to the reference solution / harness: {it} not linked into your program"

# scangrade:: names the contract header (harness/include/scangrade/student_api.h) defines inline: every
# submission that includes it may emit them as weak symbols (tests keep this list equal to the header's)
CONTRACT_INLINE = frozenset({"ScanKind", "kHillisSteeleMaxN", "kBlellochMaxN", "NotImplemented",
                             "not_implemented"})

_LIBRARY_NAME = re.compile(r"(?<![\w:])(?:cub|thrust|mgpu)::"
                           r"|(?<![\w:])std::(?:transform_)?(?:inclusive_scan|exclusive_scan)\b"
                           r"|(?<![\w:])std::partial_sum\b"
                           r"|^cudpp[A-Z]\w*")
_RUNTIME = re.compile(r"^(?:cuda[A-Z_]\w*|cu[A-Z]\w*|cupti\w*)$")
# the sanitizers' and instrumentation's entry points (GCC's -fsanitize=thread calls __tsan_init from a
# module constructor, before main; the emulator implements them)
_INSTRUMENTATION = re.compile(r"^__(?:tsan|ubsan|asan|msan|lsan|sanitizer)_\w+$")
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
            elif _INSTRUMENTATION.match(base):
                hit(RULE_INSTRUMENTATION, "defines", s)
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
    if not otherwise or any(rule.matches(key, backend) for rule in allow):
        return None     # no allowlist (the default: a name is refused only when calling it is the violation)
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
        if not (s.defined and s.external) or not r.defined_refused:
            continue    # the grader's link makes every student definition but the slots local
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
