"""Reading a results.json (grading/results.schema.json) and the small views of it that every reader
shares: load_results (with schema validation when jsonschema is installed), a case's title and
visibility, cases per slot, points as text, and printable().

Every string of results.json (messages, compile logs, student output, names: any text the student's
code or files produced) goes through printable() before an export, a page or a gradebook uses it, so
each file is valid whatever the text held: a control character other than tab and line break (C0,
DEL, C1) is shown as text (`\x1b`), a carriage return becomes a line break, and a lone surrogate
(undecodable output) or U+FFFE/U+FFFF becomes U+FFFD. XML 1.0 cannot carry those characters even
escaped.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .vocab import SLOTS

SCHEMA = Path(__file__).resolve().parent.parent / "results.schema.json"


class ResultsError(Exception):
    """results.json is missing, unreadable or not a ScanGrade results document."""


def load_results(path: Path, validate: bool = True) -> dict:
    """Read results.json; validate it against the schema when jsonschema is installed."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise ResultsError(f"{path} is not a ScanGrade results.json (schema_version 1)")
    if validate:
        try:
            import jsonschema
        except ImportError:
            return doc
        errors = sorted(jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).iter_errors(doc),
                        key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(map(str, errors[0].absolute_path)) or "(top level)"
            raise ResultsError(f"{path} does not follow results.schema.json at {where}: {errors[0].message}")
    return doc


# what XML 1.0 cannot carry (C0 but tab and line breaks, surrogates, U+FFFE, U+FFFF), with DEL and the
# C1 controls a terminal would act on
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _shown(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code <= 0x9F else "\ufffd"


def printable(text: str) -> str:
    """text that every export format can carry and every reader shows as it is (module docstring)."""
    return _UNPRINTABLE.sub(_shown, text.replace("\r\n", "\n").replace("\r", "\n"))


def printable_doc(doc):
    """A copy of a results document (or any JSON value) with printable() applied to every string."""
    if isinstance(doc, str):
        return printable(doc)
    if isinstance(doc, dict):
        return {printable(k) if isinstance(k, str) else k: printable_doc(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [printable_doc(v) for v in doc]
    return doc


def fmt_points(x: float) -> str:
    return f"{x:g}" if float(x) != int(x) else str(int(x))


def case_title(case: dict) -> str:
    title = f"{case['slot']} · {case['dtype']} · n={case['n']} · {case['values']}"
    if case["slot"] == "hierarchical":
        title += f" · {case['kind']}"
    return title


def is_hidden(case: dict) -> bool:
    return case["visibility"] != "visible"


def slot_cases(results: dict) -> dict[str, list[dict]]:
    """Cases per slot, in slot order, each slot's cases in the judge's order."""
    grouped: dict[str, list[dict]] = {s: [] for s in SLOTS}
    for case in results["cases"]:
        grouped.setdefault(case["slot"], []).append(case)
    return grouped


def slot_number(slot: str) -> int:
    return SLOTS.index(slot) + 1 if slot in SLOTS else len(SLOTS) + 1


def graded(results: dict) -> bool:
    return results["outcome"] == "graded" and results["build"]["status"] != "layout_error"


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters trimmed]"


def add_results_arguments(parser: argparse.ArgumentParser) -> None:
    """The results.json argument and --no-validate, for the tools that read one (exporters, report)."""
    parser.add_argument("results", type=Path, help="results.json written by the judge")
    parser.add_argument("--no-validate", action="store_true", help="skip the schema check of results.json")


def results_from_args(args: argparse.Namespace) -> dict | None:
    """The results.json add_results_arguments() named, or None after saying why it is unusable."""
    try:
        return load_results(args.results, validate=not args.no_validate)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
