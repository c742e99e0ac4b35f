"""results.json documents for the tests, built the way the judge builds them (slot and score totals
computed from the cases). conftest.py validates each one against grading/results.schema.json before
any test sees it, so these cannot drift from the schema."""

from __future__ import annotations

import copy

SLOTS = ("hillis_steele", "blelloch", "hierarchical", "single_pass")
KIND = {"hillis_steele": "inclusive", "blelloch": "exclusive", "hierarchical": "inclusive",
        "single_pass": "inclusive"}
METHOD = ("median of 20+ repetitions after 3 warm-ups, L2 flushed and input refreshed before each, "
          "stopped when the median's 95% interval is within 2%")
SECRET = "SECRET-INPUT-42"   # appears only in non-visible cases' messages: must never reach students


# results.json "isolation" as the judge writes it as root with bubblewrap and no cgroup
ISOLATION = {
    "mode": "auto", "sandboxed": True, "tool": "bubblewrap", "tool_version": "0.8.0",
    "namespaces": ["mount", "pid", "net", "ipc", "uts", "cgroup"], "uid_dropped": True, "uid": 65534,
    "limits_via": "rlimit",
    "limits": {"memory_bytes": 8589934592, "pids": 256, "cpus": 2.0, "file_bytes": 1073741824, "cpu_seconds": 1800,
               "open_files": 1024, "tmp_bytes": 536870912},
    "notes": ["no cgroup: no cgroup v2 hierarchy is mounted; limits by rlimits"],
    "summary": "sandbox: bubblewrap 0.8.0 (mount, pid, net, ipc, uts, cgroup namespaces), uid 65534, limits by rlimit "
               "(256 more processes, files up to 1 GiB, 1800 s of CPU; memory not limited)",
}


def timing(n: int, ms: float, ref_ms: float, cub_ms: float) -> dict:
    gbps = 2 * n * 4 / (ms * 1e-3) / 1e9
    return {"median_ms": ms, "min_ms": ms * 0.97, "max_ms": ms * 1.1, "reps": 25, "spread": 0.02,
            "gbps": gbps, "copy_gbps": 3600.0, "fraction_of_copy": gbps / 3600.0, "reference_ms": ref_ms,
            "cub_ms": cub_ms, "ratio_to_reference": ref_ms / ms, "ratio_to_cub": cub_ms / ms, "method": METHOD}


def make_case(slot: str, n: int = 1025, dtype: str = "int32", status: str = "pass", *, values: str = "random",
              kind: str | None = None, visibility: str = "visible", max_points: float = 1,
              message: str | None = None, timing_: dict | None = None, suite: str = "public",
              backend: str = "gpu", seed: int = 1, why: str = "one past 1024") -> dict:
    kind = kind or KIND[slot]
    cid = f"{slot}.{dtype}.n{n}.{values}" + (f".{kind}" if slot == "hierarchical" else "")
    if message is None:
        message = "" if status == "pass" else {
            "fail": f"fail: {cid}: 4097 of {n} elements wrong\n  first wrong: out[2048] expected -531, got -58",
            "not_implemented": f"{slot} is not implemented yet",
            "crash": "crash: an illegal memory access was encountered",
            "timeout": "timeout: the case ran past its deadline of 10 s",
            "compile_error": f"student/{slot}.cu did not compile",
            "internal_error": "internal error: worker protocol error (please report)",
        }.get(status, f"{status}: {cid}")
    return {"id": cid, "suite": suite, "slot": slot, "dtype": dtype, "kind": kind, "n": n, "values": values,
            "seed": seed, "visibility": visibility, "why": why, "status": status, "message": message,
            "points": max_points if status == "pass" else 0, "max_points": max_points, "backend": backend,
            "duration_s": 0.012, "timing": timing_, "sanitizer": None}


def make_results(cases: list[dict], *, backend: str = "gpu", build: dict | None = None,
                 perf: dict[str, tuple[float, float, float | None]] | None = None, outcome: str = "graded",
                 errors: list[str] | None = None, student_output: str = "", name: str = "alice") -> dict:
    """perf: slot -> (perf_points, perf_max_points, perf_ratio)."""
    perf = perf or {}
    seen: dict[str, int] = {}
    for c in cases:    # ids are unique in a suite
        k = seen.get(c["id"], 0)
        seen[c["id"]] = k + 1
        if k:
            c["id"] += f".{k}"
    slots = {}
    for slot in SLOTS:
        mine = [c for c in cases if c["slot"] == slot]
        if not mine and slot not in perf:
            continue
        statuses: dict[str, int] = {}
        for c in mine:
            statuses[c["status"]] = statuses.get(c["status"], 0) + 1
        pp, pmax, ratio = perf.get(slot, (0, 0, None))
        slots[slot] = {"cases": len(mine), "passed": statuses.get("pass", 0),
                       "points": sum(c["points"] for c in mine), "max_points": sum(c["max_points"] for c in mine),
                       "perf_points": pp, "perf_max_points": pmax, "perf_ratio": ratio, "statuses": statuses}
    points = sum(s["points"] for s in slots.values())
    max_points = sum(s["max_points"] for s in slots.values())
    perf_points = sum(s["perf_points"] for s in slots.values())
    perf_max = sum(s["perf_max_points"] for s in slots.values())
    all_pass = all(c["status"] == "pass" for c in cases)
    doc = {
        "schema_version": 1,
        "tool": {"name": "scangrade", "version": "0.1.0"},
        "submission": {"name": name, "path": f"/submissions/{name}.zip"},
        "backend": backend,
        "environment": ({"device": "NVIDIA H200 (sm_90)", "driver": "580.65", "cuda_runtime": "13.0",
                         "host": "gpu-node-1", "compute_sanitizer": "2025.3"} if backend == "gpu" else
                        {"device": "ScanGrade CPU emulator", "driver": None, "cuda_runtime": None,
                         "host": "ci-runner", "compute_sanitizer": None}),
        "suites": [{"name": "public", "path": "testcases/public.json", "sha256": "ab" * 32,
                    "cases": len(cases), "secret_mixed": False}],
        "build": build or {"status": "ok", "log": "", "warnings": 0, "missing_slots": [], "failed_slots": [],
                           "seconds": 4.2},
        "cases": cases,
        "slots": slots,
        "score": {"points": points, "max_points": max_points, "perf_points": perf_points,
                  "perf_max_points": perf_max, "total": points + perf_points, "max_total": max_points + perf_max},
        "sanitizer_pass": ({"ran": True, "reason": "racecheck+memcheck on the small cases", "cases": 4,
                            "cost_s": 12.5} if backend == "gpu" else
                           {"ran": False, "reason": "emulation backend: thread-order comparison instead"}),
        "max_n": None if backend == "gpu" else 4096,
        "phases": {"correctness_s": 1.5, "prepare_s": 0.0, "timing_s": 0.5 if backend == "gpu" else 0.0,
                   "lock_wait_s": 0.0, "sanitizer_s": 12.5 if backend == "gpu" else 0.0},
        "student_output": {"text": student_output, "truncated": False},
        "isolation": ISOLATION,
        "outcome": outcome,
        "exit_code": 3 if outcome == "not_graded" else (0 if all_pass else 1),
        "started_at": "2025-01-01T12:00:00Z",
        "duration_s": 37.5,
    }
    if errors is not None:
        doc["errors"] = errors
    return doc


def all_pass_gpu() -> dict:
    cases = []
    for slot in SLOTS:
        for n in (0, 1, 1024 if slot == "hillis_steele" else 1025):
            for dtype in ("int32", "float32"):
                cases.append(make_case(slot, n, dtype))
    big = {"hierarchical": (1 << 20, 1 << 24), "single_pass": (1 << 20, 1 << 24)}
    for slot, sizes in big.items():
        for n in sizes:
            cases.append(make_case(slot, n, "int32", max_points=0,
                                   timing_=timing(n, 0.05 * n / (1 << 20), 0.06 * n / (1 << 20),
                                                  0.04 * n / (1 << 20)), why="perf case"))
    return make_results(cases, perf={"hierarchical": (4, 5, 1.2), "single_pass": (5, 5, 1.2)})


def emulated() -> dict:
    cases = [make_case("hillis_steele", n, d, backend="emulate") for n in (1, 1024) for d in ("int32", "float32")]
    cases += [make_case("blelloch", n, "int32", backend="emulate") for n in (1, 2048)]
    cases += [make_case("hierarchical", 1 << 16, "int32", "not_implemented", backend="emulate")]
    cases += [make_case("single_pass", 1 << 16, "int32", "not_implemented", backend="emulate")]
    return make_results(cases, backend="emulate", perf={"hierarchical": (0, 5, None), "single_pass": (0, 5, None)})


def mixed() -> dict:
    log = ("== student/blelloch.cu: compile failed (exit 2) ==\n"
           "student/blelloch.cu:11: error: this declaration has no storage class or type specifier\n")
    cases = [make_case("hillis_steele", 1, "int32"),
             make_case("hillis_steele", 1025 - 1, "int32", "fail"),
             make_case("hillis_steele", 512, "float32", "crash"),
             make_case("hillis_steele", 256, "float32", "timeout"),
             make_case("hillis_steele", 128, "int32", "out_of_bounds_write")]
    cases += [make_case("blelloch", n, d, "compile_error", message="blelloch did not compile")
              for n in (1, 2048) for d in ("int32", "float32")]
    cases += [make_case("hierarchical", 6145, "int32"),
              make_case("hierarchical", 6145, "int32", "fail", kind="exclusive", visibility="hidden",
                        suite="hidden", message=f"fail: out[7] expected 3, got 4 ({SECRET})"),
              make_case("hierarchical", 99991, "float32", "pass", visibility="after_due_date", suite="hidden",
                        why=f"secret size {SECRET}"),
              make_case("hierarchical", 4096, "float32", "internal_error"),
              make_case("hierarchical", 1 << 22, "int32", max_points=0,
                        timing_=timing(1 << 22, 0.4, 0.5, 0.3), why="perf case")]
    cases += [make_case("single_pass", n, "int32", "not_implemented") for n in (1, 1 << 20)]
    build = {"status": "compile_error", "log": log, "warnings": 2, "missing_slots": ["single_pass"],
             "failed_slots": ["blelloch"], "seconds": 6.1}
    return make_results(cases, build=build, perf={"hierarchical": (2, 5, 1.25), "single_pass": (0, 5, None)},
                        student_output="debug: tile 3 sum = 17\n")


def layout_error() -> dict:
    msg = "found hillis_steele.cu at the top level: put your files in student/"
    cases = [make_case(s, 1, d, "compile_error", message=msg) for s in SLOTS for d in ("int32", "float32")]
    build = {"status": "layout_error", "log": msg, "warnings": 0, "missing_slots": [], "failed_slots": [],
             "seconds": 0}
    return make_results(cases, build=build)


def not_graded() -> dict:
    cases = [make_case(s, 1, "int32", "internal_error") for s in SLOTS]
    return make_results(cases, outcome="not_graded",
                        errors=["the worker did not answer the handshake (please report)"])


DOCUMENTS = {"all_pass_gpu": all_pass_gpu, "emulated": emulated, "mixed": mixed,
             "layout_error": layout_error, "not_graded": not_graded}


def document(name: str) -> dict:
    return copy.deepcopy(DOCUMENTS[name]())
