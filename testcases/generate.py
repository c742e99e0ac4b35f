#!/usr/bin/env python3
"""Writes testcases/public.json and testcases/hidden.example.json from the tables below.

The JSON files are the suites (data, read by the harness); this script only keeps them tidy and
consistent. Edit a table, run `python3 testcases/generate.py`, and commit both.
Each size carries the reason it is in the suite (the `why` shown in failure messages).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

# --- sizes and why they matter, per slot --------------------------------------------------------
EDGES = {
    0: "n = 0: nothing to do, the call must still succeed",
    1: "a single element",
    2: "two elements: the first step of the scan",
    3: "three elements: odd and tiny",
    31: "one below a warp (32 threads)",
    32: "exactly one warp",
    33: "one past a warp: a second, partial warp",
}
HILLIS_STEELE = {**EDGES,
    100: "not a power of two, smaller than a block",
    1000: "not a power of two, close to the block size",
    1023: "one below a full 1024-thread block",
    1024: "a full 1024-thread block: the slot's limit",
}
BLELLOCH = {**EDGES,
    1000: "not a power of two: the tree must be padded with the identity",
    1023: "one below 1024",
    1024: "a power of two, half the limit",
    1025: "one past 1024: more elements than threads",
    1500: "not a power of two, between 1024 and 2048",
    2047: "one below the limit: the last thread holds one element",
    2048: "the slot's limit: 1024 threads with two elements each",
}
HIERARCHICAL = {**EDGES,
    1023: "one below a 1024-element block",
    1024: "one 1024-element block",
    1025: "one past a 1024-element block",
    2047: "one below a 2048-element tile",
    2048: "exactly one 2048-element tile: the block sums have one entry",
    2049: "one past a 2048-element tile: a second tile with a single element",
    6143: "3 tiles of 2048 minus one: the last tile is partial",
    6145: "3 tiles of 2048 plus one: a fourth tile with a single element",
    7919: "a prime: no tile size divides it",
    1_000_003: "a prime near a million",
    4_194_303: "2048^2 - 1: the most two levels of 2048-element tiles can hold",
    4_194_304: "2048^2: exactly fills two levels",
    4_194_305: "2048^2 + 1: needs a third level of block sums",
    1 << 24: "2^24: a large input (timed by the grader)",
    1 << 26: "2^26: the largest public input (timed by the grader)",
}
SINGLE_PASS = {**EDGES,
    1023: "one below a 1024-element block",
    1024: "one 1024-element block",
    1025: "one past a 1024-element block",
    2047: "one below a 2048-element tile",
    2048: "exactly one 2048-element tile: nothing to look back at",
    2049: "one past a tile: the second tile must look back at the first",
    6145: "3 tiles of 2048 plus one: a look-back over several tiles",
    7919: "a prime: no tile size divides it",
    1_000_003: "a prime near a million: hundreds of tiles look back",
    4_194_305: "2048^2 + 1: thousands of tiles",
    1 << 24: "2^24: a large input (timed by the grader)",
    1 << 26: "2^26: the largest public input (timed by the grader)",
}
PERF_SIZES = {1 << 24, 1 << 26}
# compute-sanitizer passes (GPU only; each costs seconds): memcheck and synccheck on a few cases of
# every slot; racecheck on each shape where a missing barrier shows (the emulation backend reports a
# race on every case up to 65536 elements, the GPU only where racecheck runs): within one warp (n = 3,
# warp-level hazards), one past a warp, a partial block, a full block, and for the multi-block slots one
# past a block, one past a tile and several tiles with a partial last one. A clean submission pays for
# one racecheck process (the cases share it); a racy one for one process per racy case listed here.
ALL_TOOLS = ["racecheck", "memcheck", "synccheck"]
SANITIZE = {
    ("hillis_steele", "int32", 3): ["racecheck"],
    ("hillis_steele", "int32", 33): ["racecheck"],
    ("hillis_steele", "int32", 100): ["racecheck"],
    ("hillis_steele", "int32", 1024): ALL_TOOLS,
    ("hillis_steele", "float32", 1000): ["racecheck"],
    ("blelloch", "int32", 3): ["racecheck"],
    ("blelloch", "int32", 33): ["racecheck"],
    ("blelloch", "int32", 1000): ["racecheck"],
    ("blelloch", "int32", 1025): ["racecheck"],
    ("blelloch", "int32", 2048): ALL_TOOLS,
    ("hierarchical", "int32", 3): ["racecheck"],
    ("hierarchical", "int32", 33): ["racecheck"],
    ("hierarchical", "int32", 1025): ["racecheck"],
    ("hierarchical", "int32", 2049): ["racecheck"],
    ("hierarchical", "int32", 6145): ALL_TOOLS,
    ("single_pass", "int32", 3): ["racecheck"],
    ("single_pass", "int32", 33): ["racecheck"],
    ("single_pass", "int32", 1025): ["racecheck"],
    ("single_pass", "int32", 2049): ["racecheck"],
    ("single_pass", "int32", 6145): ALL_TOOLS,
}
SPECIAL_VALUES = [("int32", "zeros"), ("int32", "ones"), ("int32", "alternating"), ("int32", "large"),
                  ("float32", "real"), ("float32", "large")]

VALUES_WHY = {
    "random": "",
    "zeros": "all zeros: an output left unwritten is caught by the poison pattern, not hidden by zeros",
    "ones": "all ones: out[i] is simply i+1 (inclusive) or i (exclusive)",
    "alternating": "alternating +1/-1: partial sums stay tiny, a misplaced element shows at once",
    "large": "large magnitudes that keep every prefix sum in range",
    "real": "real-valued floats: checked against the float64 oracle within the tolerance rule",
}


class Builder:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, slot: str, dtype: str, kind: str, n: int, values: str, why: str, **extra) -> None:
        case_id = f"{slot}.{dtype}.n{n}.{values}"
        if slot == "hierarchical":
            case_id += f".{kind}"
        reason = why if values == "random" else f"{VALUES_WHY[values]} (n = {n})"
        row = {"id": case_id, "slot": slot, "dtype": dtype, "kind": kind, "n": n, "values": values,
               "seed": len(self.rows) + 1, "why": reason}
        row.update(extra)
        tools = SANITIZE.get((slot, dtype, n)) if values == "random" else None
        if tools and not any(r["slot"] == slot and r["dtype"] == dtype and r["n"] == n and "sanitize" in r
                             for r in self.rows):
            row["sanitize"] = tools
        self.rows.append(row)

    def slot(self, slot: str, kinds: list[str], sizes: dict[int, str], special_n: int, real_n: int) -> None:
        """Every size with random values (int32 in every kind, float32 alternating between the
        kinds), then the special value patterns at `special_n`, and real floats at `real_n` too."""
        for i, (n, why) in enumerate(sorted(sizes.items())):
            extra = {"perf": True} if n in PERF_SIZES else {}
            for kind in kinds:
                self.add(slot, "int32", kind, n, "random", why, **extra)
            self.add(slot, "float32", kinds[i % len(kinds)], n, "random", why, **extra)
        for dtype, values in SPECIAL_VALUES:
            for kind in kinds:
                self.add(slot, dtype, kind, special_n, values, "")
        self.add(slot, "float32", kinds[-1], real_n, "real", "")


def public_suite() -> dict:
    b = Builder()
    b.slot("hillis_steele", ["inclusive"], HILLIS_STEELE, 1024, 1000)
    b.slot("blelloch", ["exclusive"], BLELLOCH, 2048, 1500)
    b.slot("hierarchical", ["inclusive", "exclusive"], HIERARCHICAL, 100_003, 1 << 20)
    b.slot("single_pass", ["inclusive"], SINGLE_PASS, 100_003, 1 << 20)
    return {"suite": "public", "version": 1,
            "description": "ScanGrade public suite: ships to students; every case says why it is here.",
            "defaults": {"points": 1, "visibility": "visible"}, "cases": b.rows}


def hidden_example() -> dict:
    """The format of an instructor's hidden suite (the real one never ships)."""
    b = Builder()
    b.add("hillis_steele", "int32", "inclusive", 1021, "random", "a prime below the block size")
    b.add("blelloch", "float32", "exclusive", 1999, "real", "")
    b.add("hierarchical", "int32", "exclusive", 3_000_017, "random", "a prime above 2^21")
    b.add("single_pass", "int32", "inclusive", 2_500_001, "alternating", "")
    for row in b.rows:
        row["id"] = "hidden." + row["id"]
        row["visibility"] = "after_due_date"
        row["points"] = 2
    return {"suite": "hidden-example", "version": 1,
            "description": "Example of a hidden suite: the grader mixes the instructor's secret into these seeds.",
            "cases": b.rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is out of date")
    args = parser.parse_args()
    stale = []
    for name, suite in [("public.json", public_suite()), ("hidden.example.json", hidden_example())]:
        text = json.dumps(suite, indent=1) + "\n"
        path = HERE / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print(f"wrote {path} ({len(suite['cases'])} cases)")
    if stale:
        raise SystemExit(f"out of date: {', '.join(stale)}: run python3 testcases/generate.py")


if __name__ == "__main__":
    main()
