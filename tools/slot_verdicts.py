#!/usr/bin/env python3
"""Each graded submission's slot verdicts and points, one line per submission, from a batch folder.

    python3 tools/slot_verdicts.py OUT [--compare OTHER_OUT]

OUT is what grading/batch.py wrote (OUT/students/<name>/results.json). A slot's verdict is the
grader's (scangrade.vocab.slot_verdict); `not_implemented` slots are left out of each line. Where a
slot is policy_violation the rule's evidence is shown under it (the first case's, cut at 160
characters), so a calibration run shows at once what the policy charged and why. With --compare, each
slot is printed as OTHER -> OUT where the two differ (e.g. the emulated and the GPU grading of one
class, or the same class before and after a change). Exit 1 when a submission has no results.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import grader_package  # noqa: F401
from scangrade.vocab import SLOTS, slot_verdicts


def load(out: Path) -> dict[str, dict]:
    found = {}
    for folder in sorted((out / "students").iterdir() if (out / "students").is_dir() else []):
        path = folder / "results.json"
        found[folder.name] = json.loads(path.read_text()) if path.is_file() else None
    return found


def cell(results: dict | None, slot: str) -> str:
    if results is None:
        return "no results"
    verdict = slot_verdicts(results)[slot]
    s = results["slots"][slot]
    return f"{verdict} {s['points']:g}/{s['max_points']:g}"


def evidence(results: dict | None, slot: str) -> str:
    for c in (results or {}).get("cases", []):
        if c.get("slot") == slot and c.get("status") == "policy_violation":
            first = c.get("message", "").splitlines()[0] if c.get("message") else ""
            return first[:160]
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a batch.py --out folder")
    parser.add_argument("--compare", type=Path, help="another batch folder of the same submissions")
    args = parser.parse_args(argv)
    now = load(args.out)
    other = load(args.compare) if args.compare else {}
    missing = 0
    for name, results in now.items():
        missing += results is None
        parts = []
        for slot in SLOTS:
            if results is not None and slot_verdicts(results)[slot] == "not_implemented":
                continue
            text = cell(results, slot)
            if args.compare:
                before = cell(other.get(name), slot)
                text = text if before == text else f"{before} -> {text}"
            parts.append(f"{slot} {text}")
        print(f"{name:<24} " + "; ".join(parts))
        for slot in SLOTS:
            why = evidence(results, slot)
            if why:
                print(f"{'':<24}   {slot}: {why}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
