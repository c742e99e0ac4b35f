#!/usr/bin/env python3
"""List C++/CUDA functions longer than a limit (default 80 lines).

Usage: tools/long_functions.py [--limit N] [--all] [PATH ...]

Without paths it scans the tracked C++ sources outside tests, the gallery
and the emulation backend. A function is a brace block whose head (the text
since the previous `;`, `{` or `}`) holds a parameter list and is not a
class, struct, union, enum, namespace or extern block; lambdas and nested
blocks count toward the enclosing function. Comments, strings and character
literals are skipped. It is a measuring aid, not a parser.
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

SOURCE_SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".hpp")
EXCLUDED = re.compile(r"(^|/)(tests?/|test_|gallery|emulation)")
CONTAINER = re.compile(r"\b(class|struct|union|enum|namespace)\b|extern\s+\"C\"")


def strip_code(text):
    """Blank comments and literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum()):
                out.append(c)  # digit separator such as 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """Yield (name, first_line, line_count) for each function in path."""
    code = strip_code(Path(path).read_text(errors="replace"))
    code = re.sub(r"(?m)^\s*#.*$", "", code)
    stack, head_start, line = [], 0, 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";{}":
            if c == "{":
                head = code[head_start:i]
                in_function = any(kind == "function" for kind, *_ in stack)
                if not in_function and "(" in head and not CONTAINER.search(head) \
                        and not re.search(r"=\s*$", head):
                    name = re.findall(r"([~\w:<>]+)\s*\(", head)
                    stack.append(("function", name[0] if name else "?",
                                  line - head[head.find("("):].count("\n") * 0))
                else:
                    stack.append(("block", "", line))
            elif c == "}" and stack:
                kind, name, start = stack.pop()
                if kind == "function":
                    yield name, start, line - start + 1
            head_start = i + 1


def default_paths():
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    return [f for f in files if f.endswith(SOURCE_SUFFIXES) and not EXCLUDED.search(f)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    rows = []
    for path in args.paths or default_paths():
        rows += [(length, path, start, name) for name, start, length in functions(path)
                 if length > args.limit]
    for length, path, start, name in sorted(rows, reverse=True):
        print(f"{length:5d}  {path}:{start}  {name}")
    return 1 if rows else 0


if __name__ == "__main__":
    sys.exit(main())
