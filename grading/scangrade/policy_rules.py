"""What the build-time policy's rules say: the denylist's reasons, the Violation a broken rule gives,
and the allowlists of grading/policy_rules.json, compiled (Rules, read once by rules()).

The scans that apply them: policy.py (symbols), policy_includes.py (included files), policy_elf.py
(start-up code and instructions); policy.py's docstring tells the whole policy.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

RULE_LIBRARY = "CUB and Thrust (and other library scans) are not allowed in this assignment"
RULE_HARNESS = ("student code may define names only in scangrade::student; the other scangrade:: names "
                "belong to the harness")
RULE_HARNESS_USE = ("student code may not call the reference solution or the harness: scangrade:: names outside "
                    "scangrade::student are not part of a submission")
RULE_RUNTIME = "student code may not define CUDA runtime, driver or CUPTI entry points"
RULE_ALLOCATOR = ("student code may not define allocator functions (malloc, free, operator new/delete, mmap, "
                  "dlsym, ...)")
RULE_MAIN = "student code may not define main: the harness owns the program"
RULE_INSTRUMENTATION = ("student code may not define the compiler instrumentation's functions (__tsan_*, __ubsan_*, "
                        "__asan_*, ...): the grader's emulated build calls its own, some of them before main")

SYMBOL_SHOWN = 160   # characters of a demangled symbol quoted in the evidence
SYMBOLS_SHOWN = 3    # symbols named per rule and verb


@dataclass(frozen=True)
class Violation:
    rule: str
    evidence: str       # what and where, ending with the rule



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
    defined_refused: bool                 # 'defined.refuse': refuse C-linkage and reserved-namespace names
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
                   bool(dfn.get("refuse", False)), frozenset(dfn["reserved_namespaces"]),
                   _rules(dfn["c_linkage_allowed"]), dfn["why_c_linkage"],
                   dfn["why_reserved"], _rules(st["allowed_entries"]), _rules(st["initializer_may_use"]), st["why"],
                   _rules(ins["forbidden"]), float(bud["compile_budget_s"]), int(bud["max_helper_files"]))


@functools.lru_cache(maxsize=None)
def rules() -> Rules:
    return Rules.load()
