"""ScanGrade's vocabulary, in one place: slots, statuses and their precedence, the slot-verdict rule,
archive suffixes, exit codes and limits. Standard library only (the platform entrypoints import it
before anything else can fail).

The C++ side spells the same names in harness/src/names.cpp and the statuses in
grading/results.schema.json; grading/docs/checks.md and grading/docs/grading.md document them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# the four kernel slots, in the contract header's order
SLOTS = ("hillis_steele", "blelloch", "hierarchical", "single_pass")
SLOT_FILES = {slot: f"{slot}.cu" for slot in SLOTS}

# case statuses (results.json cases[].status)
STATUSES = ("pass", "fail", "not_implemented", "crash", "timeout", "compile_error", "policy_violation",
            "out_of_bounds_write", "input_modified", "leak", "race", "memory_error", "internal_error")

# A slot's verdict: `pass` when every case of the slot passed, otherwise the first status present in
# this order (harness faults first, then what stops a slot from running, then wrong results).
VERDICT_ORDER = ("internal_error", "compile_error", "policy_violation", "not_implemented", "timeout", "crash", "race",
                 "memory_error", "out_of_bounds_write", "input_modified", "fail", "leak")

# A gradebook row's flags, in this order: build problems first, then case statuses, then harness faults.
FLAG_ORDER = ("layout_error", "compile_error", "policy_violation", "not_implemented", "crash", "timeout", "race", "memory_error",
              "out_of_bounds_write", "input_modified", "fail", "leak", "internal_error")

# statuses worth their own note line under the grade table (counted over all cases)
NOTED = ("policy_violation", "crash", "timeout", "out_of_bounds_write", "input_modified", "leak", "race", "memory_error",
         "internal_error")

# Archives a submission may be (unpacked by submission.py); the names LMS exports carry.
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
TAR_SUFFIXES = tuple(s for s in ARCHIVE_SUFFIXES if s != ".zip")
# Archive-like names that are refused inside a submission (an archive in student/ is a layout error).
ARCHIVE_LIKE_SUFFIXES = (*ARCHIVE_SUFFIXES, ".gz", ".7z", ".rar")
# operating-system litter in uploads and LMS exports
JUNK_NAMES = frozenset({"__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini"})

# exit codes of grade.py and scangrade_judge (grading/docs/grading.md, "Exit codes")
EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

# limits on a submission (folder, unpacked archive or repository export); each refusal is a layout_error
MAX_FILES = 2000                      # files and folders (archive members, repository entries under student/)
MAX_BYTES = 64 * 1024 * 1024          # bytes of all files together, unpacked
MAX_SOURCE_BYTES = 4 * 1024 * 1024    # bytes of one student/*.cu or *.cuh (the largest honest one is ~100 KB)
MAX_ARCHIVE_BYTES = MAX_BYTES + 16 * 1024 * 1024   # the archive file itself (headers and padding on top)
MAX_NAME_CHARS = 255                  # one file or folder name
MAX_PATH_CHARS = 1024                 # a path inside the submission


def strip_archive_suffix(name: str) -> str:
    """The name without a known archive suffix (kept when nothing would be left)."""
    lower = name.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lower.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def slot_verdict(statuses: Mapping[str, int] | Iterable[str]) -> str:
    """The verdict rule: `pass` when no status but pass is present (counts of 0 do not count),
    else the first present status in VERDICT_ORDER, else (a status this module does not know)
    the first unknown one in name order."""
    if isinstance(statuses, Mapping):
        present = {s for s, n in statuses.items() if n}
    else:
        present = set(statuses)
    present.discard("pass")
    if not present:
        return "pass"
    return next((s for s in VERDICT_ORDER if s in present), min(present))


def slot_verdicts(results: dict) -> dict[str, str]:
    """The verdict of every slot that has cases in a results.json document."""
    statuses: dict[str, set[str]] = {}
    for case in results["cases"]:
        statuses.setdefault(case["slot"], set()).add(case["status"])
    return {slot: slot_verdict(seen) for slot, seen in statuses.items()}


def ordered_flags(seen: Iterable[str]) -> list[str]:
    """Flags in FLAG_ORDER, unknown ones after them in name order."""
    seen = set(seen)
    return [f for f in FLAG_ORDER if f in seen] + sorted(seen - set(FLAG_ORDER))
