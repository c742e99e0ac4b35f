#!/usr/bin/env python3
"""Rewrite a CUDA source file so that the host compiler can build it against the ScanGrade emulator.

The student's .cu file is not modified; the rewritten copy (an ordinary C++17 file) is written to
OUT. Three things change, everything else is copied verbatim:

  * kernel<<<grid, block[, smem[, stream]]>>>(args...)   becomes a call of the emulator's launcher
    with a generic lambda that calls kernel(args...), so kernel templates deduce their arguments;
  * extern __shared__ T name[];                            becomes a pointer to the launch's dynamic
    shared memory;
  * __shared__ T name[N]...;  (static shared memory)       becomes a reference to storage that the
    threads of a block share, fresh for every block, one per declaration site and type.

Local headers included in quotes that contain launches or __shared__ declarations are rewritten
too (next to OUT, with the #include pointed at the copy). The output starts with an #include of the emulator's cuda_runtime.h (nvcc includes it implicitly)
and #line directives keep compiler messages and __FILE__/__LINE__ pointing at the student's
file:line. Launches and __shared__ declarations written inside #define macros are not rewritten
(the compiler then reports them). Exit status: 0 on success, 1 when the input cannot be parsed
(with a file:line: error: message on stderr), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import bisect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = "::scangrade::emu::detail::launch"
CONFIG = "::scangrade::emu::detail::LaunchConfig"
BLOCK_SHARED = "::scangrade::emu::detail::block_shared"
DYNAMIC_SHARED = "::scangrade::emu::detail::dynamic_shared"

# identifiers that can end an expression statement's prefix but never name a kernel
KEYWORDS = {
    "return", "else", "do", "case", "default", "throw", "co_await", "co_return", "co_yield", "if",
    "while", "for", "switch", "sizeof", "new", "delete", "goto", "typedef", "using", "static",
    "extern", "const", "volatile", "auto", "void", "int", "unsigned", "float", "double", "char",
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
STRING_PREFIXES = ("u8", "u", "U", "L")


class Source:
    """The input text, its tokens and a line index."""

    def __init__(self, text: str):
        self.text = text
        self.newlines = [i for i, c in enumerate(text) if c == "\n"]
        self.tokens = self._tokenize()

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.newlines, offset - 1) + 1

    def _quoted(self, i: int, quote: str) -> int:
        """End offset of the string or char literal whose opening quote is at i."""
        text, n = self.text, len(self.text)
        j = i + 1
        while j < n and text[j] != quote:
            if text[j] == "\\":
                j += 1
            elif text[j] == "\n":
                raise RewriteError(self.line_of(i), "unterminated string or character literal")
            j += 1
        if j >= n:
            raise RewriteError(self.line_of(i), "unterminated string or character literal")
        return j + 1

    def _tokenize(self) -> list[Token]:
        text, n = self.text, len(self.text)
        tokens: list[Token] = []
        i = 0
        line_start = True

        def add(kind: str, start: int, end: int) -> None:
            tokens.append(Token(kind, start, end, text[start:end]))

        while i < n:
            c = text[i]
            if c == "\n":
                add("nl", i, i + 1)
                i += 1
                line_start = True
                continue
            if c in " \t\r\f\v" or (c == "\\" and text.startswith("\n", i + 1)):
                j = i + (2 if c == "\\" else 1)
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
                j = i
                while True:
                    k = text.find("\n", j)
                    if k < 0:
                        j = n
                        break
                    if text[k - 1] == "\\":
                        j = k + 1
                        continue
                    j = k
                    break
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
                elif word in STRING_PREFIXES and j < n and text[j] in "\"'":
                    end = self._quoted(j, text[j])
                    add("string" if text[j] == '"' else "char", i, end)
                    i = end
                else:
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


@dataclass
class Edit:
    start: int
    end: int
    replacement: str


OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}


class Rewriter:
    def __init__(self, source: Source, display_name: str, include_hook=None):
        self.src = source
        self.display = display_name
        self.include_hook = include_hook  # quoted include name -> replacement path or None
        # significant tokens: code and preprocessor lines (which act as statement boundaries)
        self.sig = [t for t in source.tokens if t.kind not in ("ws", "nl", "comment")]
        self.edits: list[Edit] = []
        self.line_inserts: dict[int, list[str]] = {}  # line number -> directives inserted before it
        self.counter = 0

    # ---- helpers --------------------------------------------------------------------------------

    def line(self, k: int) -> int:
        return self.src.line_of(self.sig[k].start)

    def error(self, k: int, message: str) -> RewriteError:
        return RewriteError(self.line(min(k, len(self.sig) - 1)), message)

    def is_punct(self, k: int, text: str) -> bool:
        return 0 <= k < len(self.sig) and self.sig[k].kind == "punct" and self.sig[k].text == text

    def adjacent(self, k: int, text: str, count: int) -> bool:
        """True when tokens k .. k+count-1 are `text`, written without spaces between them."""
        for d in range(count):
            if not self.is_punct(k + d, text):
                return False
            if d and self.sig[k + d].start != self.sig[k + d - 1].end:
                return False
        return True

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

    def match_backward(self, k: int, open_text: str, close_text: str) -> int:
        """Index of the `open_text` matching the `close_text` at k (angle brackets skip (...) groups)."""
        depth = 0
        paren = 0
        for j in range(k, -1, -1):
            t = self.sig[j]
            if t.kind == "pp":
                break
            if t.kind != "punct":
                continue
            if open_text == "<" and t.text in (")", "]"):
                paren += 1
            elif open_text == "<" and t.text in ("(", "["):
                paren -= 1
            elif paren == 0 and t.text == close_text:
                depth += 1
            elif paren == 0 and t.text == open_text:
                depth -= 1
                if depth == 0:
                    return j
            if open_text == "<" and t.text in (";", "{", "}"):
                break
        raise self.error(k, f"cannot match '{close_text}' before the kernel launch")

    def text_between(self, a: int, b: int) -> str:
        return self.src.text[a:b]

    # ---- kernel launches ------------------------------------------------------------------------

    def kernel_start(self, k: int) -> int:
        """Index of the first token of the kernel expression that ends at token k."""
        while True:
            t = self.sig[k]
            if t.kind == "ident" and t.text not in KEYWORDS:
                start = k
            elif self.is_punct(k, ">"):
                lt = self.match_backward(k, "<", ">")
                if lt == 0 or self.sig[lt - 1].kind != "ident":
                    raise self.error(k, "cannot find the kernel name before '<<<'")
                start = lt - 1
            elif self.is_punct(k, ")") or self.is_punct(k, "]"):
                opener = "(" if t.text == ")" else "["
                start = self.match_backward(k, opener, t.text)
                # a call or subscript continues to the left: f(x), arr[i]
                prev = start - 1
                if prev >= 0 and ((self.sig[prev].kind == "ident" and self.sig[prev].text not in KEYWORDS)
                                  or self.sig[prev].text in (")", "]", ">")):
                    k = prev
                    continue
                if t.text == "]":
                    raise self.error(k, "cannot parse the kernel expression before '<<<'")
            else:
                raise self.error(k, "cannot find the kernel name before '<<<'")
            # qualifiers and member access continue to the left
            prev = start - 1
            if prev >= 0 and self.sig[prev].kind == "ident" and self.sig[prev].text == "template":
                start, prev = prev, prev - 1
            if prev >= 0 and self.sig[prev].kind == "punct" and self.sig[prev].text in ("::", ".", "->"):
                before = prev - 1
                if before >= 0 and (self.sig[before].kind == "ident" and self.sig[before].text not in KEYWORDS
                                    or self.sig[before].text in (">", ")", "]")):
                    k = before
                    continue
                if self.sig[prev].text == "::":
                    return prev  # ::kernel
                raise self.error(prev, "cannot parse the kernel expression before '<<<'")
            return start

    def rewrite_launch(self, k: int) -> int:
        """Rewrites the launch whose '<<<' starts at token k; returns the index after it."""
        if k == 0:
            raise self.error(k, "'<<<' without a kernel before it")
        first = self.kernel_start(k - 1)
        # configuration: up to '>>>' at bracket depth 0
        j = k + 3
        depth = 0
        while True:
            if j >= len(self.sig):
                raise self.error(k, "kernel launch: '<<<' is never closed by '>>>'")
            t = self.sig[j]
            if t.kind == "pp":
                raise self.error(k, "kernel launch: '<<<' is never closed by '>>>'")
            if t.kind == "punct":
                if t.text in OPENERS:
                    depth += 1
                elif t.text in CLOSERS:
                    depth -= 1
                    if depth < 0:
                        raise self.error(j, f"kernel launch: unbalanced '{t.text}' in the launch configuration")
                elif t.text == ";" and depth == 0:
                    raise self.error(k, "kernel launch: '<<<' is never closed by '>>>'")
                elif depth == 0 and self.adjacent(j, ">", 3):
                    break
            j += 1
        close_cfg = j
        config = self.text_between(self.sig[k + 2].end, self.sig[close_cfg].start)
        if not config.strip():
            raise self.error(k, "kernel launch: the configuration <<<grid, block[, smem[, stream]]>>> is empty")
        paren = close_cfg + 3
        if not self.is_punct(paren, "("):
            raise self.error(close_cfg, "kernel launch: expected '(' and the kernel arguments after '>>>'")
        close = self.match_forward(paren)
        args = self.text_between(self.sig[paren].end, self.sig[close].start)
        kernel = self.text_between(self.sig[first].start, self.sig[k - 1].end)

        span_start, span_end = self.sig[first].start, self.sig[close].end
        flat_kernel = " ".join(kernel.split())
        gap1 = self.text_between(self.sig[k - 1].end, self.sig[k].start)  # kernel .. '<<<'
        gap2 = self.text_between(self.sig[close_cfg + 2].end, self.sig[paren].start)  # '>>>' .. '('
        newlines_before_config = kernel.count("\n") + gap1.count("\n")
        replacement = (
            f"{LAUNCHER}(__FILE__, __LINE__, [&](auto&&... sg_emu_args_) {{ {flat_kernel}(sg_emu_args_...); }}, "
            + "\n" * newlines_before_config
            + f"{CONFIG}({config})"
            + "\n" * gap2.count("\n")
            + (f", {args}" if args.strip() else "")
            + ")"
        )
        self.edits.append(Edit(span_start, span_end, replacement))
        return close + 1

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
            if file_scope:
                replacement = ""
                self.line_inserts.setdefault(line_after, []).append(
                    f"#define {name} ({DYNAMIC_SHARED}<{elem}>())")
            else:
                replacement = f"{elem}* {name} = {DYNAMIC_SHARED}<{elem}>();"
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

    def needs_rewrite(self) -> bool:
        """True when the text has a launch or a __shared__ declaration."""
        return any(t.kind == "ident" and t.text == "__shared__" for t in self.sig) or any(
            self.is_punct(k, "<") and self.adjacent(k, "<", 3) for k in range(len(self.sig)))

    def run(self) -> str:
        k = 0
        while k < len(self.sig):
            t = self.sig[k]
            if t.kind == "pp" and PRAGMA_UNROLL_RE.match(t.text):
                # nvcc's loop hint; g++ would warn about an unknown pragma in the student's code
                self.edits.append(Edit(t.start, t.end, "// " + t.text.replace("\\\n", "\n// ")))
                k += 1
            elif t.kind == "pp" and self.include_hook is not None:
                m = INCLUDE_RE.match(t.text)
                if m:
                    target = self.include_hook(m.group(1))
                    if target is not None:
                        self.edits.append(Edit(t.start, t.end, f"#include {quote(target)}"))
                k += 1
            elif t.kind == "punct" and t.text == "<" and self.adjacent(k, "<", 3):
                k = self.rewrite_launch(k)
            elif t.kind == "ident" and t.text == "__shared__":
                k = self.rewrite_shared(k)
            else:
                k += 1
        text = self.src.text
        if not text.endswith("\n"):
            text += "\n"
        # apply edits back to front, then insert directives at line starts (also back to front)
        for e in sorted(self.edits, key=lambda e: e.start, reverse=True):
            text = text[:e.start] + e.replacement + text[e.end:]
        if self.line_inserts:
            lines = text.split("\n")
            for line in sorted(self.line_inserts, reverse=True):
                directives = self.line_inserts[line] + [f"#line {line} {quote(self.display)}"]
                lines[line - 1:line - 1] = directives
            text = "\n".join(lines)
        return text


def quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Translation:
    """Rewrites a .cu file and, recursively, the local headers it includes in quotes that need it
    (those with a launch or a __shared__ declaration): each such header is rewritten next to OUT
    and the #include is pointed at the copy. Headers that need nothing are included as they are."""

    def __init__(self, runtime_header: str, out_dir: Path):
        self.runtime_header = runtime_header
        self.out_dir = out_dir
        self.outputs: dict[Path, Path] = {}  # rewritten header -> its copy
        self.inputs: list[Path] = []          # every file read (for the depfile)
        self.files: dict[Path, str] = {}      # copy -> text to write

    def translate(self, path: Path, display: str) -> str:
        path = path.resolve()
        self.inputs.append(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise RewriteError(1, f"cannot read {path}: {e}") from e

        def include_hook(name: str) -> str | None:
            header = (path.parent / name).resolve()
            if not header.is_file():
                return None
            if header in self.outputs:
                return str(self.outputs[header])
            try:
                needs = Rewriter(Source(header.read_text(encoding="utf-8")), str(header)).needs_rewrite()
            except (OSError, UnicodeDecodeError) as e:
                raise HeaderError(header, RewriteError(1, f"cannot read: {e}")) from e
            except HeaderError:
                raise
            except RewriteError as e:
                raise HeaderError(header, e) from e
            if not needs:
                # included as it is, by absolute path: the rewritten file lives elsewhere
                self.inputs.append(header)
                self.outputs[header] = header
                return str(header)
            copy = self.out_dir / f"{header.stem}.{len(self.outputs) + 1}{header.suffix}"
            self.outputs[header] = copy
            try:
                self.files[copy] = self.translate(header, str(header))
            except HeaderError:
                raise
            except RewriteError as e:
                raise HeaderError(header, e) from e
            return str(copy)

        body = Rewriter(Source(text), display, include_hook).run()
        return f"#include {quote(self.runtime_header)}\n#line 1 {quote(display)}\n{body}"


class HeaderError(RewriteError):
    """A RewriteError inside an included header (reported with the header's name)."""

    def __init__(self, header: Path, error: RewriteError):
        super().__init__(error.line, str(error))
        self.header = header


def rewrite(text: str, display_name: str, runtime_header: str) -> str:
    """The rewritten translation unit for `text`, without include handling (raises RewriteError)."""
    body = Rewriter(Source(text), display_name).run()
    return f"#include {quote(runtime_header)}\n#line 1 {quote(display_name)}\n{body}"


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
    translation = Translation(str(args.runtime_header.resolve()), args.output.resolve().parent)
    try:
        result = translation.translate(args.input, display)
    except HeaderError as e:
        print(f"{e.header}:{e.line}: error: {e}", file=sys.stderr)
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
