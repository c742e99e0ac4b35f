#!/usr/bin/env python3
"""Fidelity benchmark: does the CPU emulation backend give the GPU's verdict, case by case?

Courses that grade on Gradescope or PrairieLearn have no GPU: the emulated verdict is the grade.
This compares the gallery graded on the GPU with the gallery graded emulated:

    python3 tools/bench_fidelity.py GPU EMULATED [--min-agreement 0.99] [--json report.json]

GPU and EMULATED are each either a gallery results folder (grading/gallery.py --out DIR: one
DIR/<entry>/results.json per entry) or a snapshot of one (grading/fidelity/gpu_statuses.json,
grading/fidelity/emulated_statuses.json: entry -> case id -> status, and entry -> slot -> verdict).
For every entry on both sides it compares each case graded on both backends (emulated grading stops
at the judge's emulation cap, so larger cases are counted as "one side only", never compared) and
each slot's verdict as each backend gave it. Every disagreement is listed with its explanation from
grading/fidelity/explanations.json or, when the entry's expected.json documents the difference as an
`emulation_verdicts` override, that note; one with neither is flagged UNEXPLAINED. The per-entry
table and the totals come last.

Explanations (--explanations FILE, JSON): {"explanations": [{"entry": glob, "slot": glob,
"cases": glob, "gpu": status, "emulated": status, "why": text, "gpu_nondeterministic": bool}]}.
An explanation covers a case disagreement when entry, slot (the case's slot), cases (its id) and the
two statuses (where given) match; it covers a slot-verdict disagreement when entry, slot and the two
verdicts match and it names no `cases` pattern. Globs are fnmatch patterns; absent means any.

Two agreements are printed: the raw case-status agreement (agreeing / compared) and the explained
agreement ((agreeing + explained disagreements) / compared). Exit status: 0; 1 when the explained
agreement (with --raw: the raw one) is below --min-agreement, or when an unexplained disagreement
changes a slot's verdict (a case disagreement in a slot whose verdicts differ, or a slot-verdict
disagreement); 2 on unreadable input. The gallery deliberately holds entries that the backends grade
differently (documented in their expected.json), so by default documented differences do not count
against the threshold: it bounds the unexplained ones. No case compared on both sides (a snapshot
holding slot verdicts only) leaves the agreement undefined: then only the verdicts are checked.

--write-snapshot FILE records the GPU side as a snapshot (tools/gpu-check.sh refreshes
grading/fidelity/gpu_statuses.json that way); --write-emulated-snapshot FILE does the same for the
emulated side.
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
import grader_package  # noqa: E402,F401  (the grader's own package)
from scangrade.vocab import SLOTS, slot_verdict  # noqa: E402

FIDELITY = REPO / "grading" / "fidelity"
GALLERY = REPO / "grading" / "gallery"
SNAPSHOT_FORMAT = "scangrade-fidelity-statuses/1"


@dataclass
class Side:
    """One backend's gallery: each entry's case statuses (may be empty) and slot verdicts."""
    backend: str
    source: str
    statuses: dict[str, dict[str, str]] = field(default_factory=dict)
    verdicts: dict[str, dict[str, str]] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)


@dataclass
class Explanation:
    why: str
    entry: str = "*"
    slot: str = "*"
    cases: str | None = None
    gpu: str | None = None
    emulated: str | None = None
    gpu_nondeterministic: bool = False
    source: str = "explanations.json"

    def covers(self, entry: str, slot: str, gpu: str, emulated: str, case_id: str | None) -> bool:
        if case_id is None and self.cases is not None:
            return False
        return (fnmatch.fnmatchcase(entry, self.entry) and fnmatch.fnmatchcase(slot, self.slot)
                and (case_id is None or fnmatch.fnmatchcase(case_id, self.cases or "*"))
                and self.gpu in (None, gpu) and self.emulated in (None, emulated))


@dataclass
class Disagreement:
    entry: str
    slot: str
    case_id: str | None          # None: the slot's verdict
    gpu: str
    emulated: str
    changes_verdict: bool
    explanation: Explanation | None = None


@dataclass
class EntryRow:
    entry: str
    compared: int = 0
    agreeing: int = 0
    one_side_only: int = 0
    slots_compared: int = 0
    slots_agreeing: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)


def case_key(case: dict) -> str:
    """A case's key: its id, prefixed with its suite when that is not the public one."""
    suite = case.get("suite", "public")
    return case["id"] if suite in ("public", None) else f"{suite}:{case['id']}"


def case_slot(case_id: str) -> str:
    return case_id.split(":", 1)[-1].split(".", 1)[0]


def verdicts_of(statuses: dict[str, str]) -> dict[str, str]:
    by_slot: dict[str, set[str]] = {}
    for case_id, status in statuses.items():
        by_slot.setdefault(case_slot(case_id), set()).add(status)
    return {slot: slot_verdict(seen) for slot, seen in by_slot.items()}


def load_side(path: Path, backend: str, entries: set[str] | None) -> Side:
    """A results folder (DIR/<entry>/results.json) or a snapshot file."""
    if path.is_dir():
        side = Side(backend, str(path))
        for results in sorted(path.glob("*/results.json")):
            name = results.parent.name
            if entries is not None and name not in entries:
                continue
            doc = json.loads(results.read_text())
            got = doc.get("backend")
            if got and got != backend:
                raise ValueError(f"{results}: graded on the {got} backend, given as the {backend} side")
            statuses = {case_key(c): c["status"] for c in doc["cases"]}
            side.statuses[name] = statuses
            side.verdicts[name] = verdicts_of(statuses)
            side.meta.setdefault("max_n", {})[name] = doc.get("max_n")
        if not side.statuses:
            raise ValueError(f"{path}: no <entry>/results.json inside")
        return side
    doc = json.loads(path.read_text())
    if doc.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(f"{path}: not a fidelity snapshot (format {doc.get('format')!r}, want {SNAPSHOT_FORMAT})")
    if doc.get("backend") != backend:
        raise ValueError(f"{path}: a snapshot of the {doc.get('backend')} backend, given as the {backend} side")
    side = Side(backend, str(path), meta={k: v for k, v in doc.items() if k not in ("statuses", "slot_verdicts")})
    names = set(doc.get("statuses", {})) | set(doc.get("slot_verdicts", {}))
    for name in sorted(names):
        if entries is not None and name not in entries:
            continue
        statuses = doc.get("statuses", {}).get(name, {})
        side.statuses[name] = dict(statuses)
        side.verdicts[name] = dict(doc.get("slot_verdicts", {}).get(name) or verdicts_of(statuses))
    return side


def snapshot(side: Side, note: str = "") -> dict:
    doc = {"format": SNAPSHOT_FORMAT, "backend": side.backend,
           "recorded_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "source": side.source}
    if note:
        doc["note"] = note
    if side.meta.get("max_n"):
        doc["max_n"] = side.meta["max_n"]
    doc["statuses"] = side.statuses
    doc["slot_verdicts"] = side.verdicts
    return doc


def dump_snapshot(doc: dict) -> str:
    """JSON with one line per entry (a diff of two snapshots shows the entries that changed)."""
    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        value = doc[key]
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            rows = [f"  {json.dumps(name)}: {json.dumps(value[name])}" for name in sorted(value)]
            lines.append(f" {json.dumps(key)}: {{\n" + ",\n".join(rows) + f"\n }}{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{comma}")
    return "\n".join(lines) + "\n}\n"


def load_explanations(path: Path, gallery: Path) -> list[Explanation]:
    """explanations.json, then each gallery entry's documented emulation_verdicts override."""
    found = []
    if path.is_file():
        for row in json.loads(path.read_text()).get("explanations", []):
            found.append(Explanation(**row))
    for expected in sorted(gallery.glob("*/expected.json")):
        spec = json.loads(expected.read_text())
        for slot, emulated in spec.get("emulation_verdicts", {}).items():
            note = spec.get("emulation_note") or "documented in expected.json (emulation_verdicts)"
            found.append(Explanation(f"expected.json: {note}", expected.parent.name, slot, None,
                                     spec["verdicts"].get(slot), emulated, False,
                                     f"{expected.parent.name}/expected.json"))
            # the slot's cases that differ for the same reason
            found.append(Explanation(f"expected.json: {note}", expected.parent.name, slot, "*", None, None, False,
                                     f"{expected.parent.name}/expected.json"))
    return found


def compare(gpu: Side, emu: Side, explanations: list[Explanation]) -> tuple[list[EntryRow], list[str], list[str]]:
    """Rows for the entries on both sides, and the entries on one side only."""
    rows = []
    for name in sorted(set(gpu.verdicts) & set(emu.verdicts)):
        row = EntryRow(name)
        g_cases, e_cases = gpu.statuses.get(name, {}), emu.statuses.get(name, {})
        g_verdicts, e_verdicts = gpu.verdicts[name], emu.verdicts[name]
        differing_slots = {s for s in set(g_verdicts) & set(e_verdicts) if g_verdicts[s] != e_verdicts[s]}
        if g_cases and e_cases:
            row.one_side_only = len(set(g_cases) ^ set(e_cases))
            for case_id in [c for c in e_cases if c in g_cases]:
                row.compared += 1
                a, b = g_cases[case_id], e_cases[case_id]
                if a == b:
                    row.agreeing += 1
                    continue
                slot = case_slot(case_id)
                row.disagreements.append(Disagreement(name, slot, case_id, a, b, slot in differing_slots,
                                                      explain(explanations, name, slot, a, b, case_id)))
        for slot in [s for s in SLOTS if s in g_verdicts and s in e_verdicts]:
            row.slots_compared += 1
            if slot not in differing_slots:
                row.slots_agreeing += 1
                continue
            a, b = g_verdicts[slot], e_verdicts[slot]
            row.disagreements.append(Disagreement(name, slot, None, a, b, True,
                                                  explain(explanations, name, slot, a, b, None)))
        rows.append(row)
    return rows, sorted(set(gpu.verdicts) - set(emu.verdicts)), sorted(set(emu.verdicts) - set(gpu.verdicts))


def explain(explanations: list[Explanation], entry: str, slot: str, gpu: str, emulated: str,
            case_id: str | None) -> Explanation | None:
    return next((e for e in explanations if e.covers(entry, slot, gpu, emulated, case_id)), None)


def print_disagreements(rows: list[EntryRow]) -> None:
    """Disagreements grouped by entry, slot, the two statuses and the explanation."""
    groups: dict[tuple, list[Disagreement]] = {}
    for row in rows:
        for d in row.disagreements:
            key = (d.entry, d.slot, d.case_id is None, d.gpu, d.emulated, id(d.explanation))
            groups.setdefault(key, []).append(d)
    if not groups:
        print("no disagreement")
        return
    print("disagreements (gpu -> emulated):")
    for items in groups.values():
        d = items[0]
        what = (f"slot verdict {d.slot}" if d.case_id is None else
                f"{len(items)} case{'s' if len(items) > 1 else ''} " + ", ".join(
                    x.case_id for x in items[:6]) + (f", ... ({len(items) - 6} more)" if len(items) > 6 else ""))
        tag = ("UNEXPLAINED" if d.explanation is None else
               "explained, GPU nondeterministic" if d.explanation.gpu_nondeterministic else "explained")
        verdict = " (the slot's verdicts differ)" if d.changes_verdict and d.case_id is not None else ""
        print(f"  {tag}: {d.entry}: {what}: {d.gpu} -> {d.emulated}{verdict}")
        if d.explanation is not None:
            why = d.explanation.why
            print(f"      why: {why if len(why) <= 400 else why[:397] + '...'}")


def print_table(rows: list[EntryRow]) -> None:
    header = ("entry", "cases compared", "agreeing", "disagreeing", "unexplained", "one side only",
              "slot verdicts agreeing")
    lines = [header]
    for r in rows:
        unexplained = sum(1 for d in r.disagreements if d.explanation is None and d.case_id is not None)
        lines.append((r.entry, str(r.compared), str(r.agreeing), str(r.compared - r.agreeing), str(unexplained),
                      str(r.one_side_only), f"{r.slots_agreeing}/{r.slots_compared}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for i, line in enumerate(lines):
        print("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


@dataclass
class Totals:
    entries: int
    compared: int
    agreeing: int
    explained: int
    unexplained: int
    agreement: float | None
    explained_agreement: float | None
    slots_compared: int
    slots_agreeing: int
    unexplained_verdict_changes: int
    gpu_only_entries: list[str]
    emulated_only_entries: list[str]


def totals(rows: list[EntryRow], gpu_only: list[str], emu_only: list[str]) -> Totals:
    compared = sum(r.compared for r in rows)
    agreeing = sum(r.agreeing for r in rows)
    cases = [d for r in rows for d in r.disagreements if d.case_id is not None]
    return Totals(len(rows), compared, agreeing, sum(1 for d in cases if d.explanation),
                  sum(1 for d in cases if not d.explanation), agreeing / compared if compared else None,
                  (agreeing + sum(1 for d in cases if d.explanation)) / compared if compared else None,
                  sum(r.slots_compared for r in rows), sum(r.slots_agreeing for r in rows),
                  sum(1 for r in rows for d in r.disagreements if d.changes_verdict and d.explanation is None),
                  gpu_only, emu_only)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gpu", type=Path, help="the GPU side: a gallery results folder or a snapshot")
    parser.add_argument("emulated", type=Path, help="the emulated side: a gallery results folder or a snapshot")
    parser.add_argument("--explanations", type=Path, default=FIDELITY / "explanations.json")
    parser.add_argument("--gallery", type=Path, default=GALLERY,
                        help="where expected.json files document emulation_verdicts (default: grading/gallery)")
    parser.add_argument("--min-agreement", type=float, default=0.99,
                        help="the least explained case-status agreement that passes (default 0.99)")
    parser.add_argument("--raw", action="store_true",
                        help="apply --min-agreement to the raw agreement (explained differences count against it)")
    parser.add_argument("--entries", help="comma-separated entry names to compare (default: all on both sides)")
    parser.add_argument("--write-snapshot", type=Path, metavar="FILE", help="record the GPU side as a snapshot")
    parser.add_argument("--write-emulated-snapshot", type=Path, metavar="FILE",
                        help="record the emulated side as a snapshot")
    parser.add_argument("--note", default="", help="a note stored in the written snapshots (device, commit, ...)")
    parser.add_argument("--json", type=Path, help="also write the comparison here")
    args = parser.parse_args(argv)
    entries = set(args.entries.split(",")) if args.entries else None
    try:
        gpu = load_side(args.gpu, "gpu", entries)
        emu = load_side(args.emulated, "emulate", entries)
        explanations = load_explanations(args.explanations, args.gallery)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"bench_fidelity: {e}", file=sys.stderr)
        return 2
    for path, side in ((args.write_snapshot, gpu), (args.write_emulated_snapshot, emu)):
        if path:
            path.write_text(dump_snapshot(snapshot(side, args.note)))
            print(f"wrote the {side.backend} snapshot of {side.source} to {path} ({len(side.statuses)} entries)")

    rows, gpu_only, emu_only = compare(gpu, emu, explanations)
    t = totals(rows, gpu_only, emu_only)
    print(f"fidelity: GPU {gpu.source} vs emulated {emu.source}")
    print_disagreements(rows)
    for name, where in [(n, "GPU") for n in gpu_only] + [(n, "emulated") for n in emu_only]:
        print(f"  not compared: {name} is only on the {where} side")
    print()
    print_table(rows)
    agreement = "n/a (no case graded on both sides)" if t.agreement is None else (
        f"{100 * t.agreement:.2f}% ({t.agreeing}/{t.compared}); counting the {t.explained} explained "
        f"differences: {100 * t.explained_agreement:.2f}%; unexplained: {t.unexplained}")
    print(f"case-status agreement: {agreement}")
    print(f"slot-verdict agreement: {t.slots_agreeing}/{t.slots_compared} over {t.entries} entries; "
          f"unexplained verdict-changing disagreements: {t.unexplained_verdict_changes}")
    failures = []
    gated = t.agreement if args.raw else t.explained_agreement
    if gated is not None and gated < args.min_agreement:
        failures.append(f"{'raw' if args.raw else 'explained'} case-status agreement {100 * gated:.2f}% "
                        f"< {100 * args.min_agreement:.2f}%")
    if t.unexplained_verdict_changes:
        failures.append(f"{t.unexplained_verdict_changes} unexplained disagreements change a slot's verdict "
                        f"(explain them in {args.explanations} or fix the emulator)")
    print("FIDELITY FAILED: " + "; ".join(failures) if failures else "fidelity ok")
    if args.json:
        args.json.write_text(json.dumps({"totals": asdict(t), "rows": [
            {**{k: v for k, v in asdict(r).items() if k != "disagreements"},
             "disagreements": [{**{k: v for k, v in asdict(d).items() if k != "explanation"},
                                "explanation": d.explanation.why if d.explanation else None,
                                "gpu_nondeterministic": bool(d.explanation and d.explanation.gpu_nondeterministic)}
                               for d in r.disagreements]} for r in rows]}, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
