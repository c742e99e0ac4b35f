"""Similar submissions (batch.py --similarity): information for the instructor, never a verdict or a
score change.

Every pair of submissions is compared slot by slot (each slot's .cu file) the way MOSS and JPlag do:

  tokens       comments, whitespace and #include lines dropped; every identifier that is not a C++/CUDA
               keyword or CUDA built-in becomes V, every number N, every string or character literal S;
               operators and punctuation stay (renamed variables and reformatting change nothing)
  fingerprints hashes of every K consecutive tokens, winnowed (the smallest hash of every WINDOW
               consecutive ones, Schleimer et al. 2003): a shared run of K + WINDOW - 1 tokens or more
               is always seen; the order of functions does not matter (fingerprints are a set)
  boilerplate  fingerprints of the handout's own code (the stubs in student/ and the contract header
               harness/include/scangrade/student_api.h) are removed from every submission, and so are
               those found in more than COMMON_FRACTION of the submissions (at least COMMON_MIN of
               them): code everyone shares does not count
  score        shared fingerprints / the smaller file's fingerprints (1.0: one file's code is all in
               the other); pairs with at least MIN_SHARED shared fingerprints and a score >= the
               threshold are listed, highest first, with the matched regions (line ranges of both
               files, merged, and their text side by side)

DIR/similarity.json: {"method": {...}, "threshold", "submissions", "pairs": [{"a", "b", "score",
"shared", "slots": [{"slot", "score", "shared", "fingerprints_a", "fingerprints_b", "regions": [{"a":
[first, last], "b": [first, last]}], "text": [{"a": "...", "b": "..."}]}]}]}, ranked by the best slot
score, then by shared fingerprints. A pair's score is its best slot's.

    PYTHONPATH=grading python3 -m scangrade.similarity SUBMISSION...   ranks the given submissions
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from .results import printable
from .submission import load_submission
from .vocab import MAX_SOURCE_BYTES, SLOTS

K = 12                  # tokens per k-gram
WINDOW = 8              # winnowing window: runs of K + WINDOW - 1 = 19 tokens are always found
COMMON_FRACTION = 0.5
COMMON_MIN = 4
MIN_SHARED = 4
THRESHOLD = 0.5
MAX_PAIRS = 100         # pairs kept in similarity.json
MAX_REGIONS = 8         # regions with their text per slot of a pair
MAX_REGION_LINES = 40

KEYWORDS = frozenset("""
alignas alignof auto bool break case char const constexpr const_cast continue decltype default delete do double
dynamic_cast else enum explicit extern false float for friend goto if inline int long mutable namespace new
noexcept nullptr operator private protected public register reinterpret_cast return short signed sizeof static
static_assert static_cast struct switch template this throw true try typedef typename union unsigned using
virtual void volatile while size_t std int32_t uint32_t int64_t uint64_t
__global__ __device__ __host__ __shared__ __constant__ __restrict__ __forceinline__ __noinline__
threadIdx blockIdx blockDim gridDim warpSize __syncthreads __syncwarp __shfl_up_sync __shfl_down_sync
__shfl_sync __shfl_xor_sync __ballot_sync atomicAdd atomicExch atomicCAS atomicOr atomicMax __threadfence
cudaStream_t cudaMalloc cudaFree cudaMallocAsync cudaFreeAsync cudaMemcpy cudaMemcpyAsync cudaMemset
cudaMemsetAsync cudaGetLastError
""".split())

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<pp>\#[ \t]*include[^\n]*)
  | (?P<str>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)
  | (?P<num>(?:0[xX][0-9a-fA-F']+|\d[\d']*\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|->\*|\.\.\.|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|->|::|[^\s\w])
""", re.VERBOSE | re.DOTALL)


def tokens(text: str) -> list[tuple[str, int]]:
    """(normalised token, line number from 1) for a C++/CUDA source (module docstring)."""
    out = []
    line = 1
    for m in _TOKEN.finditer(text):
        kind, s = m.lastgroup, m.group()
        if kind in ("ws", "comment", "pp"):
            pass
        elif kind == "str":
            out.append(("S", line))
        elif kind == "num":
            out.append(("N", line))
        elif kind == "id":
            out.append((s if s in KEYWORDS else "V", line))
        else:
            out.append((s, line))
        line += s.count("\n")
    return out


def _hash(gram: tuple[str, ...]) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(gram).encode(), digest_size=8).digest(), "big")


def fingerprints(text: str) -> dict[int, list[tuple[int, int]]]:
    """Winnowed k-gram hashes -> the line ranges (first, last) where each occurs."""
    toks = tokens(text)
    if len(toks) < K:
        return {}
    grams = [(_hash(tuple(t for t, _ in toks[i:i + K])), toks[i][1], toks[i + K - 1][1])
             for i in range(len(toks) - K + 1)]
    picked: dict[int, list[tuple[int, int]]] = {}
    last = -1
    for start in range(max(1, len(grams) - WINDOW + 1)):
        window = grams[start:start + WINDOW]
        j = min(range(len(window)), key=lambda i: (window[i][0], -i))   # rightmost minimum
        if start + j != last:
            last = start + j
            h, a, b = grams[last]
            picked.setdefault(h, []).append((a, b))
    return picked


@dataclass
class Source:
    student: str
    slot: str
    text: str
    prints: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


def handout_fingerprints(repo: Path) -> set[int]:
    """Fingerprints of the handout's code: the stubs and the contract header."""
    found: set[int] = set()
    for path in [*(repo / "student").glob("*.cu"), repo / "harness/include/scangrade/student_api.h"]:
        try:
            found |= fingerprints(path.read_text(errors="replace")).keys()
        except OSError:
            continue
    return found


def read_slot_files(path: Path) -> dict[str, str]:
    """slot -> text of the submission's slot file (scangrade.submission's reader and its limits)."""
    with load_submission(path) as sub:
        found = {}
        for slot, f in sub.slot_files.items():
            try:
                with open(f, "rb") as fh:
                    found[slot] = fh.read(MAX_SOURCE_BYTES).decode("utf-8", errors="replace")
            except OSError:
                continue
        return found


def _merge(ranges: list[tuple[int, int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _lines(text: str, r: list[int]) -> str:
    lines = text.splitlines()[r[0] - 1:r[1]]
    if len(lines) > MAX_REGION_LINES:
        lines = lines[:MAX_REGION_LINES] + [f"... ({r[1] - r[0] + 1 - MAX_REGION_LINES} more lines)"]
    return printable("\n".join(lines))


def _regions(x: Source, y: Source, shared: set[int]) -> tuple[list[dict], list[dict]]:
    """Matched regions: shared fingerprints' line ranges merged on x's side, each with the matching
    range on y's side (the span of y's occurrences of the same fingerprints)."""
    pairs = sorted((xr, yr) for h in shared for xr in x.prints[h][:1] for yr in y.prints[h][:1])
    regions: list[dict] = []
    for xr, yr in pairs:
        if regions and xr[0] <= regions[-1]["a"][1] + 1:
            r = regions[-1]
            r["a"][1] = max(r["a"][1], xr[1])
            r["b"] = [min(r["b"][0], yr[0]), max(r["b"][1], yr[1])]
        else:
            regions.append({"a": list(xr), "b": list(yr)})
    regions.sort(key=lambda r: -(r["a"][1] - r["a"][0]))
    regions = regions[:MAX_REGIONS]
    regions.sort(key=lambda r: r["a"][0])
    return regions, [{"a": _lines(x.text, r["a"]), "b": _lines(y.text, r["b"])} for r in regions]


def rank(sources: dict[str, dict[str, str]], boilerplate: set[int], threshold: float = THRESHOLD) -> dict:
    """sources: student -> slot -> text. Returns similarity.json's document (module docstring)."""
    students = sorted(sources)
    by_slot: dict[str, dict[str, Source]] = {s: {} for s in SLOTS}
    for st in students:
        for slot, text in sources[st].items():
            if slot in by_slot:
                src = Source(st, slot, text, fingerprints(text))
                for h in boilerplate & src.prints.keys():
                    del src.prints[h]
                by_slot[slot][st] = src
    common_at = max(COMMON_MIN, int(COMMON_FRACTION * len(students)) + 1)
    pairs: dict[tuple[str, str], list[dict]] = {}
    excluded_common = {}
    for slot, files in by_slot.items():
        index: dict[int, list[str]] = {}
        for st, src in files.items():
            for h in src.prints:
                index.setdefault(h, []).append(st)
        common = {h for h, who in index.items() if len(who) >= common_at}
        excluded_common[slot] = len(common)
        counts: dict[tuple[str, str], int] = {}
        for h, who in index.items():
            if h in common or len(who) < 2:
                continue
            for a, b in combinations(who, 2):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        for (a, b), shared in counts.items():
            fa, fb = (len(files[a].prints.keys() - common), len(files[b].prints.keys() - common))
            score = shared / max(1, min(fa, fb))
            if shared < MIN_SHARED or score < threshold:
                continue
            same = (files[a].prints.keys() & files[b].prints.keys()) - common
            regions, text = _regions(files[a], files[b], same)
            pairs.setdefault((a, b), []).append({"slot": slot, "score": round(score, 4), "shared": shared,
                                                 "fingerprints_a": fa, "fingerprints_b": fb,
                                                 "regions": regions, "text": text})
    ranked = sorted(({"a": a, "b": b, "score": max(s["score"] for s in slots),
                      "shared": sum(s["shared"] for s in slots), "slots": sorted(slots, key=lambda s: -s["score"])}
                     for (a, b), slots in pairs.items()),
                    key=lambda p: (-p["score"], -p["shared"], p["a"], p["b"]))
    return {"method": {"k": K, "window": WINDOW, "common_fraction": COMMON_FRACTION, "common_min": COMMON_MIN,
                       "min_shared": MIN_SHARED, "handout_fingerprints": len(boilerplate),
                       "common_fingerprints": excluded_common},
            "threshold": threshold, "submissions": len(students), "pairs_above_threshold": len(ranked),
            "pairs": ranked[:MAX_PAIRS]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rank pairs of submissions by shared code (information only).")
    parser.add_argument("submissions", type=Path, nargs="+", help="submission folders or archives")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help=f"least score listed (default {THRESHOLD})")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2],
                        help="the ScanGrade tree whose handout code is left out (default: this one)")
    parser.add_argument("--json", type=Path, help="also write the ranking as similarity.json's document here")
    args = parser.parse_args(argv)
    sources = {p.name: read_slot_files(p) for p in args.submissions}
    doc = rank(sources, handout_fingerprints(args.repo), args.threshold)
    for p in doc["pairs"]:
        print(f"{p['score']:.2f}  {p['a']}  {p['b']}  " + ", ".join(f"{s['slot']} {s['score']:.2f}" for s in p["slots"]))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
