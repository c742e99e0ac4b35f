#!/usr/bin/env python3
"""Rewrite a CUDA source file so that the host compiler can build it against the ScanGrade emulator.

The student's .cu file is not modified; the rewritten copy (an ordinary C++17 file) is written to
OUT. These things change, everything else is copied verbatim:

  * kernel<<<grid, block[, smem[, stream]]>>>(args...)   becomes a call of the emulator's launcher
    with a generic lambda that calls kernel(args...), so kernel templates deduce their arguments;
    launches written inside #define bodies are rewritten there (see "Kernel launches" below);
  * extern __shared__ T name[];                            becomes a pointer to the launch's dynamic
    shared memory, next to an (unused) extern array sg_emu_extern_shared_name of type T, so that two
    declarations of one name with different types conflict, as they do in nvcc;
  * __shared__ T name[N]...;  (static shared memory)       becomes a reference to storage that the
    threads of a block share, fresh for every block, one per declaration site and type;
  * the body of every __global__ function defined at namespace scope starts with a registration of
    the kernel's address, so that cudaLaunchKernel((void*)kernel, ...) finds the kernel's parameter
    types (template kernels register each instantiation), and a call that names the kernel and its
    file:line in the emulator's messages (the first thread of each launch records it);
  * a shift in a __device__/__global__ body or a function-like macro's body gets a mark after its
    operator, `a << __sg_shift << b` (the same operator: the same parse), so that a count out of
    range gives the GPU's value (scangrade/emu_shift.h; see rewrite_shifts).

Local headers included in quotes (found next to the including file, or in INPUT's folder) are copied
next to OUT as NAME.OUT-STEM.N.SUFFIX, rewritten where they need it, and the #include is pointed at the
copy by its bare name: no #include ever spells the folders above the student's files (a submission
folder may be named with a quote, a backslash or a line break, which an #include cannot carry), and
every header is named in #line as INPUT's display name names its folder (student/x.cu includes
student/x.cuh), never by an absolute path. The output starts with an #include of the emulator's
cuda_runtime.h (nvcc includes it implicitly) and #line directives keep compiler messages and
__FILE__/__LINE__ pointing at the student's file:line. Groups under a literal `#if 0` (or the `#else` of
an `#if 1`) are left alone.

Kernel launches: the rule nvcc's front end applies, measured on nvcc 13, is implemented on tokens
(comments are whitespace; a backslash-newline joins lines):
  * the launch opens with `<<<`, or `<<` followed on the SAME line by `<` (`k << <g, b >> > (x)`,
    Visual Studio's formatting); `<<` then `<` on the next line, `< <<` and `< < <` are not launches
    (nvcc rejects them, and so does the host compiler); `operator<<<T>` is not a launch;
  * the configuration ends at the first `>>>`, or `>>` followed by `>` (any whitespace, comments or
    line breaks between), outside (), [] and {}; `>` and `>>` elsewhere are operators or close
    template arguments (`k<<<W<W<1>>::v, n >> 1>>>` works; `> >>`, `> > >` and `>>>>` do not close);
    it holds 1 to 4 arguments, the block defaulting to 1 as in nvcc;
  * the kernel is the postfix expression before the launch: a name (qualified, with template
    arguments), a call, a subscript, a member access, or a parenthesized expression: `ns::k<T, 4>`,
    `table[i]`, `(flag ? k1 : k2)`, `get()`, `s.kp`, `(*kp)`; an expression that is not a plain name
    is evaluated once per launch, as nvcc does;
  * `(args)` follows, with any whitespace or line breaks between; launches among the arguments are
    rewritten too.
A launch in a #define body is rewritten in place (its line breaks stay backslash-continued); a body
that ends with `>>>` (`#define L k<<<g, b>>>`, used as `L(x)`) becomes a launch that takes its
arguments where the macro is used; a launch that is incomplete otherwise (`#define OPEN <<<`) is left as
it is, so the host compiler rejects it where the macro is used. A launch in an argument of a
function-like macro defined in the file or in a local header is an error when its commas, outside
parentheses, would split that argument (nvcc's preprocessor splits it too and reports the count).

Exit status: 0 on success, 1 when the input cannot be parsed (with a file:line: error: message on
stderr), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import bisect
import os
import posixpath
import re
import sys
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = "::scangrade::emu::detail::launch"
PENDING_LAUNCH = "::scangrade::emu::detail::pending_launch"
EXTERN_SHARED_PREFIX = "sg_emu_extern_shared_"
CONFIG = "::scangrade::emu::detail::launch_config"
BLOCK_SHARED = "::scangrade::emu::detail::block_shared"
DYNAMIC_SHARED = "::scangrade::emu::detail::dynamic_shared"
KERNEL_REGISTERED = "::scangrade::emu::detail::kernel_registered"
KERNEL_ENTERED = "::scangrade::emu::detail::kernel_entered"
SHIFT_SITE = "__sg_shift"  # scangrade/emu_shift.h: the shift_site of the place where it is used
# tokens after a count that make it part of a longer operand (they bind tighter than a shift)
BINDS_TIGHTER = {"+", "-", "*", "/", "%", "(", "[", ".", "->", "::"}
INT_LITERAL_RE = re.compile(r"(0[xX][0-9a-fA-F']+|0[bB][01']+|[0-9']+)[uUlLzZ]*")

# identifiers that never name a kernel or a callee: keywords that end or start a statement or a type
NOT_A_NAME = {
    "return", "else", "do", "case", "default", "throw", "co_await", "co_return", "co_yield", "if",
    "while", "for", "switch", "catch", "sizeof", "alignof", "typeid", "noexcept", "new", "delete",
    "goto", "typedef", "using", "static", "extern", "const", "volatile", "auto", "void", "int",
    "unsigned", "signed", "float", "double", "char", "bool", "short", "long", "constexpr", "inline",
    "operator", "static_assert", "and", "or", "not", "xor", "bitand", "bitor", "compl", "not_eq",
    "and_eq", "or_eq", "xor_eq", "template", "typename", "class", "struct", "union", "enum",
}


class RewriteError(Exception):
    """The input has a construct the rewriter cannot handle; carries the 1-based line."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


@dataclass
class Token:
    kind: str  # ident, number, string, char, punct, pp, comment, ws, nl
    start: int
    end: int
    text: str


IDENT_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
NUMBER_RE = re.compile(r"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z]|[0-9A-Za-z_.])*")
RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
INCLUDE_RE = re.compile(r'#\s*include\s*"([^"]+)"')
PRAGMA_UNROLL_RE = re.compile(r"#\s*pragma\s+unroll\b")
DIRECTIVE_RE = re.compile(r"#\s*([A-Za-z_]+)")
DEFINE_RE = re.compile(r"#\s*define\s+([A-Za-z_$][A-Za-z0-9_$]*)")
UNDEF_RE = re.compile(r"#\s*undef\s+([A-Za-z_$][A-Za-z0-9_$]*)")
IF_CONSTANT_RE = re.compile(r"#\s*(?:el)?if\s+(0|1|false|true)\s*(?://.*|/\*.*)?$", re.S)
LINE_SPLICE_RE = re.compile(r"\\\r?\n")
STRING_PREFIXES = ("u8", "u", "U", "L")


class Source:
    """The input text, its tokens and a line index. `directive_body`: the text is the body of a
    #define (it starts mid-line, and a `#` in it is an operator, not a directive)."""

    def __init__(self, text: str, directive_body: bool = False):
        self.text = text
        self.newlines = [i for i, c in enumerate(text) if c == "\n"]
        self.directive_body = directive_body
        self.tokens = self._tokenize()

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.newlines, offset - 1) + 1

    def _quoted(self, i: int, quote: str) -> int | None:
        """End offset of the string or char literal whose opening quote is at i (None: unterminated,
        which only the compiler may call an error: it can sit in a group the preprocessor skips)."""
        text, n = self.text, len(self.text)
        j = i + 1
        while j < n and text[j] != quote:
            if text[j] == "\\":
                j += 1
            elif text[j] == "\n":
                return None
            j += 1
        return j + 1 if j < n else None

    def _directive_end(self, i: int) -> int:
        """End offset of the directive starting at i: its last line's newline (not included)."""
        text, n = self.text, len(self.text)
        j = i
        while True:
            k = text.find("\n", j)
            if k < 0:
                return n
            if text[k - 1] == "\\" or (text[k - 1] == "\r" and text[k - 2] == "\\"):
                j = k + 1
                continue
            return k

    def _tokenize(self) -> list[Token]:
        text, n = self.text, len(self.text)
        tokens: list[Token] = []
        i = 0
        line_start = not self.directive_body

        def add(kind: str, start: int, end: int) -> None:
            tokens.append(Token(kind, start, end, text[start:end]))

        while i < n:
            c = text[i]
            if c == "\n":
                add("nl", i, i + 1)
                i += 1
                line_start = not self.directive_body
                continue
            splice = LINE_SPLICE_RE.match(text, i) if c == "\\" else None
            if c in " \t\r\f\v" or splice:
                j = splice.end() if splice else i + 1
                add("ws", i, j)
                i = j
                continue
            if text.startswith("//", i):
                j = text.find("\n", i)
                j = n if j < 0 else j
                add("comment", i, j)
                i = j
                continue
            if text.startswith("/*", i):
                j = text.find("*/", i + 2)
                if j < 0:
                    raise RewriteError(self.line_of(i), "unterminated /* comment")
                add("comment", i, j + 2)
                i = j + 2
                continue
            if c == "#" and line_start:
                j = self._directive_end(i)
                add("pp", i, j)
                i = j
                continue
            line_start = False
            m = IDENT_RE.match(text, i)
            if m:
                word = m.group()
                j = m.end()
                if word in RAW_PREFIXES and text.startswith('"', j):
                    close = text.find("(", j)
                    delim = text[j + 1:close]
                    end = text.find(")" + delim + '"', close)
                    if close < 0 or end < 0:
                        raise RewriteError(self.line_of(i), "unterminated raw string literal")
                    add("string", i, end + len(delim) + 2)
                    i = end + len(delim) + 2
                    continue
                if word in STRING_PREFIXES and j < n and text[j] in "\"'":
                    end = self._quoted(j, text[j])
                    if end is not None:
                        add("string" if text[j] == '"' else "char", i, end)
                        i = end
                        continue
                add("ident", i, j)
                i = j
                continue
            m = NUMBER_RE.match(text, i)
            if m:
                add("number", i, m.end())
                i = m.end()
                continue
            if c in "\"'":
                end = self._quoted(i, c)
                if end is not None:
                    add("string" if c == '"' else "char", i, end)
                    i = end
                    continue
            if text.startswith("::", i) or text.startswith("->", i):
                add("punct", i, i + 2)
                i += 2
                continue
            add("punct", i, i + 1)
            i += 1
        return tokens


def live_tokens(tokens: list[Token]) -> list[Token]:
    """The significant tokens (code and directives) outside the groups that a literal `#if 0` (or an
    `#else` after `#if 1`, and so on) makes the preprocessor skip."""
    out: list[Token] = []
    stack: list[list[bool]] = []  # per open conditional: [this group is skipped, a group was taken for sure]
    for t in tokens:
        if t.kind in ("ws", "nl", "comment"):
            continue
        skipping = any(dead for dead, _ in stack)
        if t.kind == "pp":
            m = DIRECTIVE_RE.match(t.text)
            name = m.group(1) if m else ""
            constant = IF_CONSTANT_RE.match(t.text)
            value = None if constant is None else constant.group(1) in ("1", "true")
            if name in ("if", "ifdef", "ifndef"):
                stack.append([False, False] if name != "if" or value is None else [not value, value])
            elif name in ("elif", "elifdef", "elifndef", "else") and stack:
                top = stack[-1]
                if top[1]:
                    top[0] = True
                elif name == "elif" and value is not None:
                    top[0], top[1] = not value, value
                else:
                    top[0] = False
            elif name == "endif" and stack:
                stack.pop()
            # a conditional directive stays as a statement boundary unless it is itself skipped
            if skipping and any(dead for dead, _ in stack):
                continue
            out.append(t)
            continue
        if not skipping:
            out.append(t)
    return out


@dataclass
class Edit:
    start: int
    end: int
    replacement: str


@dataclass
class Macro:
    """A function-like macro: how many named parameters, and whether it takes `...`."""

    params: int
    variadic: bool


def parse_define(text: str) -> tuple[str, Macro | None, int] | None:
    """(name, Macro for a function-like macro else None, offset of the body) of a #define line."""
    m = DEFINE_RE.match(text)
    if not m:
        return None
    name, pos = m.group(1), m.end()
    if not text.startswith("(", pos):
        return name, None, pos
    close = text.find(")", pos)
    if close < 0:
        return None
    params = [p.strip() for p in LINE_SPLICE_RE.sub(" ", text[pos + 1:close]).split(",")]
    params = [p for p in params if p]
    variadic = bool(params) and params[-1].endswith("...")
    return name, Macro(len(params) - (1 if variadic else 0), variadic), close + 1


OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}


class Rewriter:
    """Rewrites one file (or, with `in_macro`, one #define body: launches only)."""

    def __init__(self, source: Source, display_name: str, include_hook=None,
                 macros: dict[str, Macro] | None = None, in_macro: bool = False, macro_shifts: bool = False):
        self.src = source
        self.macro_shifts = macro_shifts  # in_macro: the body's shifts are device code's too
        self.display = display_name
        self.include_hook = include_hook  # quoted include name -> replacement path or None
        self.macros = {} if macros is None else macros  # function-like macros seen so far
        self.in_macro = in_macro
        # significant tokens: code and preprocessor lines (which act as statement boundaries)
        self.sig = live_tokens(source.tokens)
        self.edits: list[Edit] = []
        self.line_inserts: dict[int, list[str]] = {}  # line number -> directives inserted before it
        self.counter = 0
        self.file_scope_externs: set[str] = set()  # names #defined for a file-scope extern __shared__

    # ---- helpers --------------------------------------------------------------------------------

    def line(self, k: int) -> int:
        return self.src.line_of(self.sig[max(0, min(k, len(self.sig) - 1))].start)

    def error(self, k: int, message: str) -> RewriteError:
        return RewriteError(self.line(k), message)

    def is_punct(self, k: int, text: str) -> bool:
        return 0 <= k < len(self.sig) and self.sig[k].kind == "punct" and self.sig[k].text == text

    def is_name(self, k: int) -> bool:
        """True when token k is an identifier that can name a kernel or a callee."""
        return 0 <= k < len(self.sig) and self.sig[k].kind == "ident" and self.sig[k].text not in NOT_A_NAME

    def gap(self, a: int, b: int) -> str:
        """The text between tokens a and b, line splices removed (the preprocessor's view)."""
        return LINE_SPLICE_RE.sub("", self.src.text[self.sig[a].end:self.sig[b].start])

    def joined(self, a: int, b: int) -> bool:
        """True when tokens a and b (= a + 1) are written without anything between them."""
        return 0 <= a and b < len(self.sig) and self.gap(a, b) == ""

    def match_forward(self, k: int) -> int:
        """Index of the bracket closing the one at k."""
        stack = []
        for j in range(k, len(self.sig)):
            t = self.sig[j]
            if t.kind != "punct":
                continue
            if t.text in OPENERS:
                stack.append(OPENERS[t.text])
            elif t.text in CLOSERS:
                if not stack or stack.pop() != t.text:
                    raise self.error(j, f"unbalanced '{t.text}'")
                if not stack:
                    return j
        raise self.error(k, f"'{self.sig[k].text}' is never closed")

    def group_open(self, k: int) -> int:
        """Index of the bracket opening the group that the ')', ']' or '}' at k closes."""
        stack = []
        for j in range(k, -1, -1):
            t = self.sig[j]
            if t.kind == "pp":
                break
            if t.kind != "punct":
                continue
            if t.text in CLOSERS:
                stack.append(CLOSERS[t.text])
            elif t.text in OPENERS:
                if not stack or stack.pop() != t.text:
                    break
                if not stack:
                    return j
        raise self.error(k, f"cannot match '{self.sig[k].text}' before the kernel launch")

    def template_open(self, k: int) -> int:
        """Index of the '<' opening the template argument list that the '>' at k closes. A '<' with
        no name before it is a less-than inside the list (`k<int, 1 < 2>`); `<<`, `<=`, `>=` are
        operators."""
        depth = 0
        j = k
        while j >= 0:
            t = self.sig[j]
            if t.kind == "pp" or (t.kind == "punct" and t.text in (";", "{", "(", "[")):
                break
            if t.kind == "punct" and t.text in CLOSERS:
                j = self.group_open(j) - 1
                continue
            followed_by_eq = self.is_punct(j + 1, "=") and self.joined(j, j + 1)
            if self.is_punct(j, ">") and not followed_by_eq:
                depth += 1
            elif self.is_punct(j, "<") and not followed_by_eq:
                shift = ((self.is_punct(j + 1, "<") and self.joined(j, j + 1))
                         or (self.is_punct(j - 1, "<") and self.joined(j - 1, j)))
                if not shift:
                    depth -= 1
                    if depth == 0:
                        if self.is_name(j - 1) or (j > 0 and self.sig[j - 1].text == "operator"):
                            return j
                        depth = 1
            j -= 1
        raise self.error(k, "cannot match '>' before the kernel launch")

    def flat(self, a: int, b: int) -> str:
        """Tokens a .. b on one line: comments and line breaks become one space."""
        parts = [self.sig[a].text]
        for j in range(a + 1, b + 1):
            parts.append(("" if self.joined(j - 1, j) else " ") + self.sig[j].text)
        return "".join(parts)

    def text_between(self, a: int, b: int) -> str:
        return self.src.text[a:b]

    def newlines(self, a: int, b: int) -> str:
        """As many line breaks as the text between offsets a and b has (backslash-continued inside a
        #define), so that every later line keeps its number."""
        return ("\\\n" if self.in_macro else "\n") * self.src.text.count("\n", a, b)

    # ---- kernel launches ------------------------------------------------------------------------

    def launch_open(self, k: int) -> int | None:
        """When a launch opens at token k (`<<<`, or `<<` and `<` on the same line), the index of
        its third '<'."""
        if not (self.is_punct(k, "<") and self.is_punct(k + 1, "<") and self.joined(k, k + 1)):
            return None
        if self.is_punct(k - 1, "<") and self.joined(k - 1, k):
            return None  # inside a longer run of '<'
        if k > 0 and self.sig[k - 1].kind == "ident" and self.sig[k - 1].text == "operator":
            return None  # operator<<<T> names a specialization of operator<<
        if not self.is_punct(k + 2, "<") or "\n" in self.gap(k + 1, k + 2):
            return None
        return k + 2

    def launch_close(self, j: int) -> tuple[int, int]:
        """Scans the configuration that starts at token j; returns the index of the closing
        `>>>`'s first '>' and the index after it."""
        start = j
        depth = 0
        while True:
            if j >= len(self.sig) or self.sig[j].kind == "pp":
                raise self.error(start - 1, "kernel launch: '<<<' is never closed by '>>>'")
            t = self.sig[j]
            if t.kind == "punct":
                if t.text in OPENERS:
                    depth += 1
                elif t.text in CLOSERS:
                    depth -= 1
                    if depth < 0:
                        raise self.error(j, f"kernel launch: unbalanced '{t.text}' in the launch configuration")
                elif t.text == ";" and depth == 0:
                    raise self.error(start - 1, "kernel launch: '<<<' is never closed by '>>>'")
                elif t.text == ">" and depth == 0:
                    run = 1
                    while self.is_punct(j + run, ">") and self.joined(j + run - 1, j + run):
                        run += 1
                    if run >= 3:
                        return j, j + 3
                    lone_next = (self.is_punct(j + 2, ">")
                                 and not (self.is_punct(j + 3, ">") and self.joined(j + 2, j + 3))
                                 and not (self.is_punct(j + 3, "=") and self.joined(j + 2, j + 3)))
                    if run == 2 and lone_next:
                        return j, j + 3
                    j += run
                    continue
            j += 1

    def ends_postfix(self, k: int) -> bool:
        """True when token k can end a postfix expression that a call or subscript extends."""
        return self.is_name(k) or self.is_punct(k, ")") or self.is_punct(k, "]") or self.is_punct(k, ">")

    def is_call(self, k: int) -> bool:
        """True when the ')' at k closes the argument list of a call (not a cast or a condition)."""
        opener = self.group_open(k)
        return self.is_name(opener - 1) or self.is_punct(opener - 1, "]") or self.is_punct(opener - 1, ">")

    def lambda_start(self, k: int) -> int | None:
        """When the '}' at k ends a lambda expression, the index of its '['."""
        j = self.group_open(k) - 1
        while j >= 0 and (self.sig[j].kind == "ident" or self.is_punct(j, "->") or self.is_punct(j, "*")
                          or self.is_punct(j, "&") or self.is_punct(j, "::")):
            j -= 1  # mutable, constexpr, noexcept, a simple trailing return type
        if self.is_punct(j, ")"):
            j = self.group_open(j) - 1
        if self.is_punct(j, "]"):
            return self.group_open(j)
        return None

    def kernel_start(self, k: int) -> tuple[int, bool]:
        """The first token of the postfix expression that ends at token k (the kernel before a
        launch), and whether it is a plain name (kernel templates then deduce their arguments)."""
        if k < 0:
            raise self.error(0, "'<<<' without a kernel before it")
        simple = True
        while True:
            t = self.sig[k]
            if self.is_name(k):
                start = k
            elif self.is_punct(k, ">"):
                start = self.template_open(k) - 1
            elif self.is_punct(k, "]"):
                simple = False
                opener = self.group_open(k)
                if not self.ends_postfix(opener - 1):
                    raise self.error(k, "cannot parse the kernel expression before '<<<'")
                k = opener - 1
                continue
            elif self.is_punct(k, ")"):
                simple = False
                opener = self.group_open(k)
                prev = opener - 1
                if self.is_punct(prev, "}") and self.lambda_start(prev) is not None:
                    k = prev  # an immediately invoked lambda
                    continue
                if self.ends_postfix(prev) and not (self.is_punct(prev, ")") and not self.is_call(prev)):
                    k = prev  # a call: f(x), table[i](x), t<int>(x), f(a)(b)
                    continue
                start = opener  # a parenthesized expression (after a cast or a condition)
            elif self.is_punct(k, "}"):
                simple = False
                start = self.lambda_start(k)
                if start is None:
                    raise self.error(k, "cannot find the kernel before '<<<'")
            else:
                raise self.error(k, "cannot find the kernel before '<<<'")
            # qualification, member access and (in a macro) token pasting continue to the left
            prev = start - 1
            if prev >= 0 and self.sig[prev].kind == "ident" and self.sig[prev].text == "template":
                start, prev = prev, prev - 1
            if self.is_punct(prev, "::"):
                if self.is_name(prev - 1) or self.is_punct(prev - 1, ">"):
                    k = prev - 1
                    continue
                return prev, simple  # ::kernel
            if self.is_punct(prev, ".") or self.is_punct(prev, "->"):
                if not self.ends_postfix(prev - 1):
                    raise self.error(prev, "cannot parse the kernel expression before '<<<'")
                simple = False
                k = prev - 1
                continue
            if (self.in_macro and self.is_punct(prev, "#") and self.is_punct(prev - 1, "#")
                    and self.joined(prev - 1, prev) and prev >= 2):
                k = prev - 2  # name ## suffix
                continue
            return start, simple

    def plain_name_in_parentheses(self, first: int, last: int) -> bool:
        """True for `(name)`: tokens first .. last are one parenthesized (qualified, template) name."""
        if not (self.is_punct(first, "(") and self.is_punct(last, ")") and self.match_forward(first) == last):
            return False
        angle = 0
        for j in range(first + 1, last):
            t = self.sig[j]
            if self.is_punct(j, "<"):
                angle += 1
            elif self.is_punct(j, ">"):
                angle -= 1
            elif angle == 0 and not (self.is_name(j) or t.text in ("::", "template")):
                return False
        return angle == 0 and last > first + 1

    def check_macro_argument(self, first: int, close: int, open_brackets: list[int]) -> None:
        """A launch inside the parentheses of a known function-like macro must not give the
        preprocessor more arguments than it would see after the rewrite: nvcc reports those."""
        parens = [o for o in open_brackets if self.is_punct(o, "(")]
        if not parens or parens[-1] == 0:
            return
        opener = parens[-1]
        name = self.sig[opener - 1]
        macro = self.macros.get(name.text) if name.kind == "ident" else None
        if macro is None:
            return

        def top_level_commas(a: int, b: int) -> int:
            depth = commas = 0
            for j in range(a, b):
                if self.is_punct(j, "("):
                    depth += 1
                elif self.is_punct(j, ")"):
                    depth -= 1
                elif depth == 0 and self.is_punct(j, ","):
                    commas += 1
            return commas

        if top_level_commas(first, close + 1) == 0:
            return
        if macro.variadic and top_level_commas(opener + 1, first) >= macro.params:
            return  # the launch is in __VA_ARGS__, whose commas come back together
        raise self.error(first, f"this kernel launch is an argument of macro '{name.text}', and its commas "
                                f"outside parentheses split it into several macro arguments (nvcc's "
                                f"preprocessor does the same and reports the count): put the launch in "
                                f"parentheses, {name.text}((...<<<...>>>(...)))")

    def rewrite_launch(self, k: int, third: int, open_brackets: list[int]) -> int:
        """Rewrites the launch whose '<<<' starts at token k: the kernel and `<<<` become the
        launcher's head, `>>>(` the end of the configuration. The configuration and the arguments
        stay where they are (a launch among the arguments is rewritten in its turn); returns the
        index of the configuration's first token."""
        first, simple = self.kernel_start(k - 1)
        cfg_end, after = self.launch_close(third + 1)
        if cfg_end == third + 1:
            raise self.error(k, "kernel launch: the configuration <<<grid, block[, smem[, stream]]>>> is empty")
        paren = after
        sig = self.sig
        if self.in_macro and paren == len(sig):
            # `#define L k<<<g, b>>>` used as `L(x)`: the arguments come where the macro is used
            self.pending_launch(first, k, third, cfg_end, simple)
            return third + 1
        if not self.is_punct(paren, "("):
            raise self.error(min(paren, len(sig) - 1),
                             "kernel launch: expected '(' and the kernel arguments after '>>>'")
        close = self.match_forward(paren)
        if not self.in_macro:
            self.check_macro_argument(first, close, open_brackets)
        if any(e.end > sig[first].start for e in self.edits):
            raise self.error(k, "kernel launch: a kernel launch inside the kernel expression is not supported")

        head = (f"{LAUNCHER}(__FILE__, __LINE__, {self.kernel_call(first, k, simple)}, "
                + self.newlines(sig[first].start, sig[third].end) + f"{CONFIG}(")
        tail = ")" + self.newlines(sig[cfg_end].start, sig[paren].end) + (", " if close > paren + 1 else "")
        self.edits.append(Edit(sig[first].start, sig[third].end, head))
        self.edits.append(Edit(sig[cfg_end].start, sig[paren].end, tail))
        return third + 1

    def kernel_call(self, first: int, k: int, simple: bool) -> str:
        """The generic lambda that calls the kernel expression (tokens first .. k-1) in each thread."""
        kernel = self.flat(first, k - 1)
        if simple or self.plain_name_in_parentheses(first, k - 1):
            return f"[&](auto&&... sg_emu_args_) {{ {kernel}(sg_emu_args_...); }}"
        # evaluated once, when the launch is (nvcc's order: not once per thread)
        return f"[sg_emu_kernel_ = ({kernel})](auto&&... sg_emu_args_) {{ sg_emu_kernel_(sg_emu_args_...); }}"

    def pending_launch(self, first: int, k: int, third: int, cfg_end: int, simple: bool) -> None:
        """A #define body that ends with `>>>`: a launch still waiting for its `(arguments)`."""
        sig = self.sig
        head = (f"{PENDING_LAUNCH}(__FILE__, __LINE__, {self.kernel_call(first, k, simple)}, "
                + self.newlines(sig[first].start, sig[third].end) + f"{CONFIG}(")
        tail = "))" + self.newlines(sig[cfg_end].start, sig[-1].end)
        self.edits.append(Edit(sig[first].start, sig[third].end, head))
        self.edits.append(Edit(sig[cfg_end].start, sig[-1].end, tail))

    # ---- kernel registration (cudaLaunchKernel with a void* kernel) --------------------------------

    def split_top_level(self, a: int, b: int, angles: bool) -> list[list[int]]:
        """Token indexes a .. b-1 split at commas outside brackets (and template angle brackets)."""
        parts: list[list[int]] = [[]]
        depth = angle = 0
        for j in range(a, b):
            t = self.sig[j]
            if t.kind == "punct":
                if t.text in OPENERS:
                    depth += 1
                elif t.text in CLOSERS:
                    depth -= 1
                elif angles and depth == 0 and t.text == "<":
                    angle += 1
                elif angles and depth == 0 and t.text == ">":
                    angle -= 1
                elif depth == 0 and angle == 0 and t.text == ",":
                    parts.append([])
                    continue
            parts[-1].append(j)
        return [p for p in parts if p]

    def without_default(self, part: list[int]) -> list[int]:
        """A parameter's tokens before its default argument (`= ...` outside brackets)."""
        depth = 0
        for n, j in enumerate(part):
            if self.sig[j].kind == "punct":
                if self.sig[j].text in OPENERS:
                    depth += 1
                elif self.sig[j].text in CLOSERS:
                    depth -= 1
                elif depth == 0 and self.sig[j].text == "=":
                    return part[:n]
        return part

    def template_argument_names(self, lt: int, gt: int) -> str | None:
        """`T, N, Ts...` for the template parameter list between '<' lt and '>' gt (None when a
        parameter has no name)."""
        names = []
        for part in self.split_top_level(lt + 1, gt, angles=True):
            part = self.without_default(part)
            last = part[-1]
            if (self.sig[last].kind != "ident" or self.sig[last].text in ("class", "typename")
                    or self.is_punct(last - 1, "::")):
                return None  # unnamed (`class`, `std::enable_if_t<...>* = nullptr`)
            pack = any(self.is_punct(j, ".") for j in part)
            names.append(self.sig[last].text + ("..." if pack else ""))
        return ", ".join(names)

    def register_kernel(self, k: int) -> None:
        """Makes the definition of the __global__ function at token k register its address with
        the emulator (the first statement of its body), so that cudaLaunchKernel((void*)kernel, ...)
        can unpack void** arguments into its parameter types. Anything unusual is left alone."""
        try:
            self._register_kernel(k)
        except RewriteError:
            pass  # not a definition this understands: the kernel still runs with <<<...>>>

    def _register_kernel(self, k: int) -> None:
        start = k
        while start > 0 and self.sig[start - 1].kind != "pp" and self.sig[start - 1].text not in (";", "{", "}"):
            start -= 1
        if not self.at_file_scope(start):
            return
        template_args = None
        if self.sig[start].text == "template":
            lt = start + 1
            if not self.is_punct(lt, "<"):
                return
            depth, gt = 0, lt
            while gt < k:
                if self.is_punct(gt, "(") or self.is_punct(gt, "["):
                    gt = self.match_forward(gt)
                elif self.is_punct(gt, "<"):
                    depth += 1
                elif self.is_punct(gt, ">"):
                    depth -= 1
                    if depth == 0:
                        break
                gt += 1
            if gt >= k:
                return
            template_args = self.template_argument_names(lt, gt) if gt > lt + 1 else ""
            if template_args is None:
                return
        # the parameter list: the first '(' after the name, past __launch_bounds__(...) and attributes
        j = k + 1
        while j < len(self.sig):
            t = self.sig[j]
            if t.kind == "ident" and t.text in ("__launch_bounds__", "__attribute__", "alignas", "__align__") \
                    and self.is_punct(j + 1, "("):
                j = self.match_forward(j + 1) + 1
                continue
            if self.is_punct(j, "[") and self.is_punct(j + 1, "["):
                j = self.match_forward(j) + 1
                continue
            if self.is_punct(j, "(") or t.kind == "pp" or t.text in (";", "{", "}", "="):
                break
            j += 1
        if not self.is_punct(j, "("):
            return
        paren = j
        name = paren - 1
        explicit = None
        if self.is_punct(name, ">"):  # an explicit specialization: kernel<float, 4>(...)
            lt = self.template_open(name)
            explicit = self.flat(lt, name)
            name = lt - 1
        if not self.is_name(name) or self.is_punct(name - 1, "::"):
            return
        close = self.match_forward(paren)
        body = close + 1
        if not self.is_punct(body, "{") or any(self.sig[j].kind == "pp" for j in range(paren, close)):
            return
        kernel = self.sig[name].text
        params = []
        for part in self.split_top_level(paren + 1, close, angles=True):
            part = self.without_default(part)
            if any(self.sig[j].text == kernel for j in part):
                return  # a parameter named like the kernel would hide it inside the body
            params.append(self.flat(part[0], part[-1]))
        if explicit is not None:
            self_ref = kernel + explicit
        elif template_args:
            self_ref = f"{kernel}<{template_args}>"
        elif template_args == "":
            return  # template <> without arguments: nothing to name
        else:
            self_ref = kernel
        registration = (f" (void)&{KERNEL_REGISTERED}<static_cast<void (*)({', '.join(params)})>(&{self_ref})>;"
                        f" {KERNEL_ENTERED}(\"{kernel}\", __FILE__, __LINE__);")
        self.edits.append(Edit(self.sig[body].start, self.sig[body].end, "{" + registration))


    # ---- __shared__ declarations ----------------------------------------------------------------

    def at_file_scope(self, k: int) -> bool:
        """True when token k is outside every function and class body."""
        stack: list[bool] = []  # True: namespace-like brace
        head_start = 0
        for j in range(k):
            t = self.sig[j]
            if t.kind == "pp" or self.is_punct(j, ";"):
                head_start = j + 1
            elif self.is_punct(j, "{"):
                head = [x.text for x in self.sig[head_start:j] if x.kind != "pp"]
                namespace_like = "namespace" in head or (len(head) >= 2 and head[0] == "extern"
                                                         and head[1].startswith('"'))
                stack.append(namespace_like)
                head_start = j + 1
            elif self.is_punct(j, "}"):
                if stack:
                    stack.pop()
                head_start = j + 1
        return all(stack)

    def rewrite_shared(self, k: int) -> int:
        """Rewrites the declaration containing the __shared__ at token k; returns the index after it."""
        start = k
        while start > 0:
            p = self.sig[start - 1]
            if p.kind == "pp" or (p.kind == "punct" and p.text in (";", "{", "}", ":")):
                break
            start -= 1
        end = k
        depth = 0
        while True:
            if end >= len(self.sig) or self.sig[end].kind == "pp":
                raise self.error(k, "__shared__ declaration without a terminating ';'")
            t = self.sig[end]
            if t.kind == "punct":
                if t.text in OPENERS:
                    depth += 1
                elif t.text in CLOSERS:
                    depth -= 1
                elif t.text == ";" and depth == 0:
                    break
            end += 1
        file_scope = self.at_file_scope(start)
        words = [t.text for t in self.sig[start:end] if t.kind == "ident"]
        is_extern = "extern" in words
        dropped = {"__shared__", "extern", "static"}

        # split into declarators at top-level commas; the name is the last identifier before '[' or '='
        parts: list[list[int]] = [[]]
        depth = angle = 0
        for j in range(start, end):
            t = self.sig[j]
            if t.kind == "ident" and t.text in dropped:
                continue
            if t.kind == "punct":
                if t.text in OPENERS:
                    depth += 1
                elif t.text in CLOSERS:
                    depth -= 1
                elif depth == 0 and t.text == "<":
                    angle += 1
                elif depth == 0 and t.text == ">":
                    angle -= 1
                elif depth == 0 and angle == 0 and t.text == ",":
                    parts.append([])
                    continue
            parts[-1].append(j)
        names: list[tuple[str, int]] = []  # (name, token index)
        for part in parts:
            name_index = None
            depth = 0
            for j in part:
                t = self.sig[j]
                if t.kind == "punct" and t.text in ("[", "="):
                    if depth == 0:
                        break
                if t.kind == "punct" and t.text in OPENERS:
                    depth += 1
                elif t.kind == "punct" and t.text in CLOSERS:
                    depth -= 1
                elif t.kind == "ident" and depth == 0:
                    name_index = j
            if name_index is None:
                raise self.error(k, "cannot find the variable name in this __shared__ declaration")
            names.append((self.sig[name_index].text, name_index))

        span_start, span_end = self.sig[start].start, self.sig[end].end
        original = self.text_between(span_start, span_end)
        newlines = original.count("\n")
        line_after = self.src.line_of(span_end) + 1

        if is_extern:
            if len(names) != 1:
                raise self.error(k, "extern __shared__ declares one array per declaration")
            name, name_index = names[0]
            # element type: the tokens before the name, without alignment specifiers
            type_tokens = []
            j = start
            while j < name_index:
                t = self.sig[j]
                if t.kind == "ident" and t.text in ("__align__", "alignas") and self.is_punct(j + 1, "("):
                    j = self.match_forward(j + 1) + 1
                    continue
                if not (t.kind == "ident" and t.text in dropped):
                    type_tokens.append(t.text)
                j += 1
            elem = " ".join(type_tokens)
            if not elem:
                raise self.error(k, "cannot find the element type of this extern __shared__ array")
            # nvcc: every extern __shared__ array of one name in a namespace is one entity, so all its
            # declarations (in every function and every template instantiation) must have one element
            # type ("declaration is incompatible with previous"); an extern array of that type under a
            # reserved name, declared (never used) where the student's was, makes the host compiler
            # reject what nvcc rejects ("conflicting declaration"), at the student's line
            entity = f"[[maybe_unused]] extern {elem} {EXTERN_SHARED_PREFIX}{name}[];"
            if file_scope:
                replacement = entity
                self.file_scope_externs.add(name)
                self.line_inserts.setdefault(line_after, []).append(
                    f"#define {name} ({DYNAMIC_SHARED}<{elem}>())")
            elif name in self.file_scope_externs:
                replacement = entity  # a redeclaration: the #define above already names the memory
            else:
                replacement = f"{entity} {elem}* {name} = {DYNAMIC_SHARED}<{elem}>();"
            self.edits.append(Edit(span_start, span_end, replacement + "\n" * newlines))
            return end + 1

        self.counter += 1
        struct = f"sg_emu_shared_{self.counter}_"
        # the declaration itself, verbatim without __shared__/static, becomes the struct's members
        pieces = []
        pos = span_start
        for j in range(start, end):
            t = self.sig[j]
            if t.kind == "ident" and t.text in dropped:
                pieces.append(self.text_between(pos, t.start))
                pos = t.end
        pieces.append(self.text_between(pos, span_end))
        members = "".join(pieces).strip()
        if file_scope:
            replacement = f"namespace {{ struct {struct} {{ {members} }}; }}"
            for name, _ in names:
                self.line_inserts.setdefault(line_after, []).append(
                    f"#define {name} ({BLOCK_SHARED}<{struct}>().{name})")
        else:
            storage = f"sg_emu_storage_{self.counter}_"
            replacement = f"struct {struct} {{ {members} }}; auto& {storage} = {BLOCK_SHARED}<{struct}>();"
            replacement += "".join(f" auto& {name} = {storage}.{name};" for name, _ in names)
        replacement = replacement.replace("\n", " ") + "\n" * newlines
        self.edits.append(Edit(span_start, span_end, replacement))
        return end + 1

    # ---- driver ---------------------------------------------------------------------------------

    def directive(self, k: int) -> None:
        """A preprocessor line: #pragma unroll, a quoted #include, a #define (launches in its body)."""
        t = self.sig[k]
        if PRAGMA_UNROLL_RE.match(t.text):
            # nvcc's loop hint; g++ would warn about an unknown pragma in the student's code
            self.edits.append(Edit(t.start, t.end, "// " + t.text.replace("\\\n", "\n// ")))
            return
        m = INCLUDE_RE.match(t.text)
        if m and self.include_hook is not None:
            target = self.include_hook(m.group(1))
            if target is not None:
                self.edits.append(Edit(t.start, t.end, f"#include {include_name(target)}"))
            return
        m = UNDEF_RE.match(t.text)
        if m:
            self.macros.pop(m.group(1), None)
            return
        define = parse_define(t.text)
        if define is None:
            return
        name, macro, body_start = define
        if macro is None:
            self.macros.pop(name, None)
        else:
            self.macros[name] = macro
        body = t.text[body_start:]
        if "<" not in body and ">>" not in body:
            return
        inner = Rewriter(Source(body, directive_body=True), self.display, in_macro=True,
                         macro_shifts=macro is not None)
        rewritten = inner.run_body()
        if rewritten != body:
            self.edits.append(Edit(t.start + body_start, t.end, rewritten))

    def scan(self) -> None:
        """Finds what to rewrite; records the edits."""
        open_brackets: list[int] = []  # indexes of the '(' '[' '{' not closed yet
        k = 0
        while k < len(self.sig):
            t = self.sig[k]
            if t.kind == "pp":
                if not self.in_macro:
                    self.directive(k)
                k += 1
                continue
            third = self.launch_open(k)
            if third is not None:
                try:
                    k = self.rewrite_launch(k, third, open_brackets)
                except RewriteError:
                    if not self.in_macro:
                        raise
                    k = third + 1  # incomplete in the macro body: the compiler sees it where it is used
                continue
            if self.in_macro:
                k += 1
                continue
            if t.kind == "ident" and t.text == "__shared__":
                k = self.rewrite_shared(k)
                continue
            if t.kind == "ident" and t.text == "__global__":
                self.register_kernel(k)
            if t.kind == "punct" and t.text in OPENERS:
                open_brackets.append(k)
            elif t.kind == "punct" and t.text in CLOSERS and open_brackets:
                open_brackets.pop()
            k += 1
        self.rewrite_shifts()

    # ---- shifts ---------------------------------------------------------------------------------

    def device_bodies(self) -> list[tuple[int, int]]:
        """(first, last) token indexes of the bodies of the __device__ and __global__ functions (and
        lambdas); the whole text for the body of a function-like macro, which device code may use."""
        if self.in_macro:
            return [(0, len(self.sig) - 1)] if self.macro_shifts else []
        bodies = []
        for k, t in enumerate(self.sig):
            if t.kind != "ident" or t.text not in ("__device__", "__global__"):
                continue
            if bodies and bodies[-1][0] < k < bodies[-1][1]:
                continue  # inside a body already found
            j = k + 1
            try:
                while j < len(self.sig) and self.sig[j].kind != "pp":
                    if self.is_punct(j, "(") or self.is_punct(j, "["):
                        j = self.match_forward(j) + 1
                        continue
                    if self.is_punct(j, "{"):
                        bodies.append((j, self.match_forward(j)))
                        break
                    if self.sig[j].kind == "punct" and self.sig[j].text in (";", "=", "}", ")", "]"):
                        break
                    j += 1
            except RewriteError:
                continue  # not a body this understands: its shifts stay as they are
        return bodies

    def small_literal_count(self, r: int) -> bool:
        """True when the count at token r is a lone integer literal below 32 (never out of range)."""
        if not (0 <= r < len(self.sig)) or self.sig[r].kind != "number":
            return False
        m = INT_LITERAL_RE.fullmatch(self.sig[r].text)
        if m is None or (r + 1 < len(self.sig) and self.sig[r + 1].text in BINDS_TIGHTER):
            return False
        digits = m.group(1).replace("'", "")
        try:
            value = int(digits, 0) if not (len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()) \
                else int(digits, 8)
        except ValueError:
            return False
        return value < 32

    def shift_at(self, j: int) -> tuple[int, str] | None:
        """When a shift operator (`<<`, `>>`) starts at token j: (index of its last token, the
        operator). Launches, `operator<<`, runs of three, template closers and the compound
        assignments `<<=`, `>>=` are not (their left operand may be a bit-field, which no operator
        function can take by reference: the CPU's value, recorded, as in host code)."""
        for c in "<>":
            if not (self.is_punct(j, c) and self.is_punct(j + 1, c) and self.joined(j, j + 1)):
                continue
            if (self.is_punct(j - 1, c) and self.joined(j - 1, j)) or (self.is_punct(j + 2, c) and self.joined(j + 1, j + 2)):
                return None  # <<< or >>>
            if j > 0 and self.sig[j - 1].kind == "ident" and self.sig[j - 1].text == "operator":
                return None
            if c == "<" and self.launch_open(j) is not None:
                return None
            if c == ">":
                try:
                    self.template_open(j)
                    return None  # it may close template arguments: left alone
                except RewriteError:
                    pass
            if self.is_punct(j + 2, "=") and self.joined(j + 1, j + 2):
                return None
            return j + 1, c * 2
        return None

    def rewrite_shifts(self) -> None:
        """Every shift in device code becomes the same operator with a shift_site after it
        (scangrade/emu_shift.h): `a << b` is `a << SITE << b`, which the grammar parses as the original (same operator, precedence and associativity), and whose
        value for a count out of range is the GPU's. A lone literal count below 32 is left alone, and
        so is a shift inside another edit (a launch's configuration, a __shared__ declaration)."""
        taken = [(e.start, e.end) for e in self.edits]
        for first, last in self.device_bodies():
            j = first
            while j <= last:
                found = self.shift_at(j)
                if found is None:
                    j += 1
                    continue
                end, op = found
                at = self.sig[end].end
                if not self.small_literal_count(end + 1) and not any(a <= at <= b for a, b in taken):
                    self.edits.append(Edit(at, at, f" {SHIFT_SITE} {op}"))
                j = end + 1

    def apply_edits(self, text: str) -> str:
        # back to front; an edit never overlaps another
        for e in sorted(self.edits, key=lambda e: e.start, reverse=True):
            text = text[:e.start] + e.replacement + text[e.end:]
        return text

    def run_body(self) -> str:
        """The rewritten #define body (in_macro)."""
        self.scan()
        return self.apply_edits(self.src.text)

    def run(self) -> str:
        self.scan()
        text = self.src.text
        if not text.endswith("\n"):
            text += "\n"
        text = self.apply_edits(text)
        # then insert directives at line starts (also back to front)
        if self.line_inserts:
            lines = text.split("\n")
            for line in sorted(self.line_inserts, reverse=True):
                directives = self.line_inserts[line] + [f"#line {line} {quote(self.display)}"]
                lines[line - 1:line - 1] = directives
            text = "\n".join(lines)
        return text


def quote(path: str) -> str:
    """`path` as the string literal of a #line directive (escape sequences are read there: any name,
    even one with a quote, a backslash or a line break, comes back as it was)."""
    out = []
    for ch in path:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def include_name(path: str) -> str:
    """`path` as the header name of `#include "..."`. No escape sequence is read there (a backslash is
    itself) and a quote or a line break cannot appear: such a path is refused (RewriteError), so the
    rewriter never names a header by a path that holds one (see Translation)."""
    if '"' in path or "\n" in path or "\r" in path:
        raise RewriteError(1, f"cannot #include a file whose path holds a quote or a line break: {path!r}")
    return f'"{path}"'


def collect_macros(path: Path, macros: dict[str, Macro], seen: set[Path]) -> None:
    """Adds the function-like macros that `path` and the local headers it includes in quotes define
    (a header that cannot be read or tokenized is skipped: the compiler will say what is wrong)."""
    if path in seen:
        return
    seen.add(path)
    try:
        tokens = live_tokens(Source(path.read_text(encoding="utf-8")).tokens)
    except (OSError, UnicodeDecodeError, RewriteError):
        return
    for t in tokens:
        if t.kind != "pp":
            continue
        m = INCLUDE_RE.match(t.text)
        if m:
            header = (path.parent / m.group(1)).resolve()
            if header.is_file():
                collect_macros(header, macros, seen)
            continue
        m = UNDEF_RE.match(t.text)
        if m:
            macros.pop(m.group(1), None)
            continue
        define = parse_define(t.text)
        if define is not None:
            name, macro, _ = define
            if macro is None:
                macros.pop(name, None)
            else:
                macros[name] = macro


class Translation:
    """Rewrites a .cu file and, recursively, the local headers it includes in quotes: each is copied
    next to OUT (rewritten where it has a launch, a __shared__ declaration or a kernel definition)
    with a #line that names it from the submission, and the #include is pointed at the copy."""

    def __init__(self, runtime_header: str, out_dir: Path, prefix: str = ""):
        self.runtime_header = runtime_header
        self.out_dir = out_dir
        self.prefix = f"{prefix}." if prefix else ""   # copies of one OUT's headers: x.<prefix>N.cuh
        self.root: Path | None = None         # the first file's folder (the compiler searches it: -I)
        self.root_display = ""                # that folder as the first file's display name names it
        self.outputs: dict[Path, Path] = {}  # rewritten header -> its copy
        self.inputs: list[Path] = []          # every file read (for the depfile)
        self.files: dict[Path, str] = {}      # copy -> text to write
        self.macros: dict[str, Macro] = {}    # function-like macros defined so far
        self.macro_files: set[Path] = set()   # files whose macros are in self.macros

    def display_of(self, header: Path) -> str:
        """A header's name in #line and messages: its path from the first file's folder, joined to the
        folder part of that file's display name (student/x.cu -> student/x.cuh, student/sub/y.cuh)."""
        assert self.root is not None
        return posixpath.normpath(posixpath.join(self.root_display,
                                                 Path(os.path.relpath(header, self.root)).as_posix()))

    def translate(self, path: Path, display: str) -> str:
        path = path.resolve()
        if self.root is None:
            self.root, self.root_display = path.parent, posixpath.dirname(display)
        self.inputs.append(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = e.reason if isinstance(e, UnicodeDecodeError) else e.strerror
            raise RewriteError(1, f"cannot read {display}: {why}") from e

        def include_hook(name: str) -> str | None:
            # where the compiler looks for a quoted name: the including file's folder, then the first
            # file's folder (-I / -iquote)
            candidates = [path.parent / name] + ([self.root / name] if self.root is not None else [])
            header = next((c.resolve() for c in candidates if c.is_file()), None)
            if header is None:
                return None
            collect_macros(header, self.macros, self.macro_files)
            if header not in self.outputs:
                # every local header is copied, rewritten where it needs it: its #line names it from
                # the submission (student/x.cuh) in messages and __FILE__, and no #include spells the
                # folders above it
                copy = self.out_dir / f"{header.stem}.{self.prefix}{len(self.outputs) + 1}{header.suffix}"
                self.outputs[header] = copy
                try:
                    self.files[copy] = self.translate(header, self.display_of(header))
                except HeaderError:
                    raise
                except RewriteError as e:
                    raise HeaderError(header, e, self.display_of(header)) from e
            return self.outputs[header].name    # next to the file that includes it: found first

        body = Rewriter(Source(text), display, include_hook, self.macros).run()
        return f"#include {include_name(self.runtime_header)}\n#line 1 {quote(display)}\n{body}"


class HeaderError(RewriteError):
    """A RewriteError inside an included header (reported with the header's name)."""

    def __init__(self, header: Path, error: RewriteError, display: str = ""):
        super().__init__(error.line, str(error))
        self.header = header
        self.display = display or str(header)   # as messages name it (student/x.cuh)


def rewrite(text: str, display_name: str, runtime_header: str) -> str:
    """The rewritten translation unit for `text`, without include handling (raises RewriteError)."""
    body = Rewriter(Source(text), display_name).run()
    return f"#include {include_name(runtime_header)}\n#line 1 {quote(display_name)}\n{body}"


def write_if_changed(path: Path, text: str) -> None:
    """Writes only when the content changes, so an unchanged rewrite does not force a recompile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    default_header = Path(__file__).resolve().parent / "include" / "cuda_runtime.h"
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: rewrite.py student/scan.cu build/scan.emu.cpp",
    )
    parser.add_argument("input", type=Path, help="the student's .cu file (read, never modified)")
    parser.add_argument("output", type=Path, help="the C++ file to write (its directory is created)")
    parser.add_argument("--display-name", help="file name for #line and diagnostics (default: INPUT as given)")
    parser.add_argument("--runtime-header", type=Path, default=default_header,
                        help="the emulator's cuda_runtime.h to #include first (default: %(default)s)")
    parser.add_argument("--depfile", type=Path,
                        help="write a Makefile-style dependency file listing INPUT and its local headers")
    args = parser.parse_args(argv)

    display = args.display_name or str(args.input)
    # header copies carry OUT's name: the rewrites of several files into one folder never share one
    translation = Translation(str(args.runtime_header.resolve()), args.output.resolve().parent, args.output.stem)
    try:
        result = translation.translate(args.input, display)
    except HeaderError as e:
        print(f"{e.display}:{e.line}: error: {e}", file=sys.stderr)
        return 1
    except RewriteError as e:
        print(f"{display}:{e.line}: error: {e}", file=sys.stderr)
        return 1
    for copy, text in translation.files.items():
        write_if_changed(copy, text)
    write_if_changed(args.output, result)
    if args.depfile:
        deps = " ".join(str(p).replace(" ", "\\ ") for p in dict.fromkeys(translation.inputs))
        write_if_changed(args.depfile, f"{args.output}: {deps}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
