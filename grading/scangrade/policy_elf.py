"""The policy's rules on a compiled object's machine code (policy.py's docstring tells the whole policy):
its start-up code, read with readelf (nothing runs before main or at exit but the compiler's own:
startup_violations), and its instructions, read with objdump (no system call: instruction_violations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .policy_rules import SYMBOL_SHOWN, SYMBOLS_SHOWN, Violation, rules


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False



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
            if fn.startswith(("_GLOBAL__sub_I_", "_sub_I_00099_")):
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
