#!/usr/bin/env python3
"""The reference scans against the hardware: a table and a plot of GB/s against n (needs a GPU).

    python3 tools/bench_reference.py [--build-dir build-gpu] [--out DIR] [--n 2^20,2^24,...]
                                     [--dtype int32,float32] [--rounds R] [--parts]

Runs BUILD/scangrade_bench_reference, which times a device-to-device copy, CUB's inclusive scan,
the reference single-pass scan and the reference hierarchical scan with the grader's own method
(fresh input, poisoned output, L2 flushed before every call, CUDA events, the median). GB/s counts
the bytes a scan must move at least: n read + n written. A single-pass scan moves just that, so its
ceiling is the copy (1.0x); the textbook hierarchical scan moves 4n elements (ceiling 0.5x the
copy). Writes DIR/bench-reference.json and DIR/bench-reference.png (matplotlib, when installed) and
prints the table last, with the targets: single-pass >= 0.92x the copy at 2^26 and 2^28 and >= 1.1x
CUB; hierarchical >= 0.95 of its 0.5x ceiling. Exit status 0 when the runs worked (missing a target
is reported, not an error). With --rounds R the whole measurement runs R times, one after the
other, and the table gives the median of each time and of each round's ratios: a single run on a
shared GPU varies by about +-0.02x the copy.

--parts prints instead what one single-pass call is made of, each part timed alone the same way:
the empty interval between the events, the workspace's cudaMallocAsync + cudaFreeAsync, its clear
(the clear kernel), clear + kernel on a kept workspace, the kernel alone, the whole call, and the
copy; "hidden" rows hold the stream until the call is enqueued, so they leave the host's enqueueing
out (the grader's timing keeps it in: its stream is idle when the start event is recorded).
Writes DIR/bench-reference-parts.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SP_COPY, SP_CUB, HIER_OF_CEILING = 0.92, 1.1, 0.95


def parse_n(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        out.append(2 ** int(part[2:]) if part.startswith("2^") else int(part))
    return out


def gbps(bytes_moved: int, ms: float) -> float:
    return bytes_moved / (ms * 1e-3) / 1e9


def ratios(r: dict) -> tuple[float, float, float]:
    """Single-pass x copy, single-pass x CUB, hierarchical x copy: a row's own, or its rounds' medians."""
    if "ratios" in r:
        return r["ratios"]["single_pass_x_copy"], r["ratios"]["single_pass_x_cub"], r["ratios"]["hierarchical_x_copy"]
    return r["copy_ms"] / r["single_pass_ms"], r["cub_ms"] / r["single_pass_ms"], r["copy_ms"] / r["hierarchical_ms"]


def combine(rounds: list[list[dict]]) -> list[dict]:
    """One row per (n, dtype): the median of each time over the rounds, and of each round's ratios."""
    out = []
    for same in zip(*rounds):
        row = dict(same[0])
        for key in row:
            if key.endswith("_ms"):
                row[key] = statistics.median(r[key] for r in same)
        if len(same) > 1 and "single_pass_ms" in row:
            each = [ratios(r) for r in same]
            row["ratios"] = {name: statistics.median(x[i] for x in each)
                             for i, name in enumerate(("single_pass_x_copy", "single_pass_x_cub", "hierarchical_x_copy"))}
            row["rounds"] = len(same)
        out.append(row)
    return out


def table(rows: list[dict]) -> list[str]:
    head = (f"{'n':>6} {'dtype':<7} {'copy GB/s':>9} {'CUB GB/s':>8} {'single-pass':>11} {'GB/s':>6} {'x copy':>6} "
            f"{'x CUB':>6} {'hierarchical':>12} {'x copy':>6} {'of 0.5x':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        n = r["n"]
        exp = n.bit_length() - 1
        label = f"2^{exp}" if n == 1 << exp else str(n)
        sp_copy, sp_cub, hier_copy = ratios(r)
        lines.append(f"{label:>6} {r['dtype']:<7} {gbps(r['bytes_moved'], r['copy_ms']):>9.0f} "
                     f"{gbps(r['bytes_moved'], r['cub_ms']):>8.0f} {r['single_pass_ms']:>8.3f} ms "
                     f"{gbps(r['bytes_moved'], r['single_pass_ms']):>6.0f} {sp_copy:>6.2f} "
                     f"{sp_cub:>6.2f} {r['hierarchical_ms']:>9.3f} ms {hier_copy:>6.2f} "
                     f"{hier_copy / 0.5:>7.2f}")
    return lines


def targets(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        if r["n"] not in (1 << 26, 1 << 28):
            continue
        sp_copy, sp_cub, hier_copy = ratios(r)
        hier = hier_copy / 0.5
        ok = sp_copy >= SP_COPY and sp_cub >= SP_CUB and hier >= HIER_OF_CEILING
        out.append(f"2^{r['n'].bit_length() - 1} {r['dtype']}: single-pass {sp_copy:.2f}x copy (>= {SP_COPY}), "
                   f"{sp_cub:.2f}x CUB (>= {SP_CUB}); hierarchical {hier:.2f} of its ceiling (>= {HIER_OF_CEILING}): "
                   + ("met" if ok else "MISSED"))
    return out


PARTS = (("empty_ms", "events"), ("alloc_ms", "alloc"), ("clear_ms", "clear"), ("clear_kernel_ms", "clr+kern"),
         ("kernel_ms", "kernel"), ("kernel_hidden_ms", "kern hid"), ("call_ms", "call"), ("call_hidden_ms", "call hid"),
         ("copy_ms", "copy"), ("copy_hidden_ms", "copy hid"))


def parts_table(rows: list[dict]) -> list[str]:
    head = f"{'n':>6} {'dtype':<7} " + " ".join(f"{label:>8}" for _, label in PARTS) + \
        f" {'call/copy':>9} {'hid/hid':>7}"
    lines = ["ms per call (median); call/copy: the grader's ratio; hid/hid: the same without the host's enqueueing",
             head, "-" * len(head)]
    for r in rows:
        n = r["n"]
        exp = n.bit_length() - 1
        label = f"2^{exp}" if n == 1 << exp else str(n)
        lines.append(f"{label:>6} {r['dtype']:<7} " + " ".join(f"{r[key]:>8.4f}" for key, _ in PARTS) +
                     f" {r['copy_ms'] / r['call_ms']:>9.3f} {r['copy_hidden_ms'] / r['call_hidden_ms']:>7.3f}")
    return lines


def plot(rows: list[dict], device: str, path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    series = (("copy_ms", "copy", "black"), ("cub_ms", "CUB", "tab:gray"), ("single_pass_ms", "single-pass", "tab:blue"),
              ("hierarchical_ms", "hierarchical", "tab:orange"))
    for dtype, style in (("int32", "-"), ("float32", "--")):
        mine = sorted((r for r in rows if r["dtype"] == dtype), key=lambda r: r["n"])
        if not mine:
            continue
        for key, label, color in series:
            ax.plot([r["n"] for r in mine], [gbps(r["bytes_moved"], r[key]) for r in mine], style, color=color,
                    marker="o", label=f"{label} ({dtype})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (elements)")
    ax.set_ylabel("GB/s (n read + n written)")
    ax.set_title(f"reference scans on {device}\n(the grader's timing: fresh input, L2 flushed, median per call)",
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=REPO / "build-gpu")
    parser.add_argument("--out", type=Path, default=None, help="where the JSON and the plot go (default: BUILD/bench-reference)")
    parser.add_argument("--n", default="2^20,2^22,2^24,2^26,2^28")
    parser.add_argument("--dtype", default="int32,float32")
    parser.add_argument("--rounds", type=int, default=1, help="run the measurement R times; the table gives medians")
    parser.add_argument("--parts", action="store_true", help="what a single-pass call is made of, part by part")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    exe = args.build_dir / "scangrade_bench_reference"
    if not exe.is_file():
        print(f"bench_reference: {exe} not found (build the project on a machine with CUDA)", file=sys.stderr)
        return 2
    out = args.out or args.build_dir / "bench-reference"
    out.mkdir(parents=True, exist_ok=True)
    ns = ",".join(str(n) for n in parse_n(args.n))
    rounds, device = [], "?"
    for _ in range(args.rounds):
        proc = subprocess.run([str(exe), "--n", ns, "--dtype", args.dtype] + (["--parts"] if args.parts else []),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        device = lines[0].get("device", "?") if lines else "?"
        rounds.append([r for r in lines if "n" in r])
    rows = combine(rounds)
    if args.parts:
        (out / "bench-reference-parts.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1) + "\n")
        print(f"one single-pass call, part by part, on {device}")
        print("\n".join(parts_table(rows)))
        return 0
    (out / "bench-reference.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1) + "\n")
    plotted = plot(rows, device, out / "bench-reference.png")
    print(f"reference scans on {device} (the grader's timing method; GB/s counts n read + n written"
          + (f"; medians of {args.rounds} rounds)" if args.rounds > 1 else ")"))
    print("\n".join(table(rows)))
    for line in targets(rows):
        print(line)
    print(f"details: {out / 'bench-reference.json'}" + (f", plot: {out / 'bench-reference.png'}" if plotted else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
