"""Constants the Python grader shares with the C++ judge and harness: each Python value is compared
with the one the C++ source holds, so a change on one side fails here until the other follows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from scangrade import batch_seats

REPO = Path(__file__).resolve().parents[2]


def source(rel: str) -> str:
    return (REPO / rel).read_text()


def function_body(text: str, signature: str) -> str:
    start = text.index(signature)
    return text[start:text.index("\n}\n", start)]


def shift_value(expr: str) -> int:
    """The value of a C++ expression made of integer literals, `<<`, `+`, `*` and std::size_t{} casts."""
    expr = re.sub(r"std::size_t\{(\d+)\}", r"\1", expr)
    expr = re.sub(r"(\d+)(?:\.0)?(?:ull|ul|u|ll)?\b", r"\1", expr)
    assert re.fullmatch(r"[\d\s()<+*]+", expr), expr
    return int(eval(expr))   # noqa: S307 - digits and operators only (checked above)


def test_shm_keep_free_is_the_judges_channel_rule():
    """The batch puts its case cache in /dev/shm only when it leaves what a judge wants free there for
    its channels (channel_base picks /dev/shm when that much is free)."""
    body = function_body(source("grading/judge/channel.cpp"), "std::string channel_base()")
    m = re.search(r"f_frsize\)\s*>=\s*([^)]+\([^)]*\))\)", body)
    assert m, body
    assert shift_value(m.group(1)) == batch_seats.SHM_KEEP_FREE == 8 << 30


def test_case_record_size_is_the_case_cache_layout():
    text = source("grading/judge/case_data.cpp")
    assert re.search(r"static_assert\(sizeof\(Header\) == (\d+)", text).group(1) == str(batch_seats.CASE_HEADER_BYTES)
    assert "h.input_size = f32 ? sizeof(float) : sizeof(std::int32_t);" in text      # 4 bytes either way
    assert "h.expected_size = sizeof(double);" in text                                 # 8 bytes
    assert batch_seats.CASE_ELEMENT_BYTES == 4 + 8
    assert "sizeof(Header) + want.n * (want.input_size + want.expected_size)" in text   # the file's size


def test_emulation_cap_is_the_harness_cap():
    m = re.search(r"kEmulationMaxN = ([^;]+);", source("harness/include/scangrade/emulated_run.h"))
    assert m and shift_value(m.group(1)) == batch_seats.EMULATION_MAX_N == (1 << 22) + 1


def judge_sweeps(name: str) -> bool:
    """The judge's rule (channel.cpp sweep_stale_channels) for which folder names it may sweep,
    written again here and tied to the C++ text below."""
    if not name.startswith("scangrade-"):
        return False
    rest = name[len("scangrade-"):]
    dash = rest.find("-")
    return dash > 0 and rest[:dash].isdigit()


def test_stale_folder_sweeps_keep_to_their_own_folders(tmp_path):
    """The judges sweep scangrade-<pid>-* channel folders, the batch scangrade-cases-<pid>-* case
    caches: neither takes the other's, even when the pid in the name is gone."""
    body = function_body(source("grading/judge/channel.cpp"), "void sweep_stale_channels(")
    assert 'name.rfind("scangrade-", 0) != 0' in body
    assert 'rest.find_first_not_of("0123456789") != dash' in body
    assert "kill(owner, 0) != 0 && errno == ESRCH" in body
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()   # a pid that has ended
    cache = f"{batch_seats.CASE_CACHE_PREFIX}{gone}-abc123"
    channel = f"scangrade-{gone}-XYZ123"
    assert not judge_sweeps(cache) and judge_sweeps(channel)
    for name in (cache, channel):
        (tmp_path / name).mkdir()
    batch_seats.sweep_stale_case_caches(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [channel]   # the batch's own stale cache went


def test_case_data_bytes_counts_the_layout(tmp_path):
    suite = tmp_path / "s.json"
    suite.write_text('{"cases": [{"n": 10}, {"n": 0}]}')
    assert batch_seats.case_data_bytes([suite], None) == 2 * batch_seats.CASE_HEADER_BYTES + 10 * 12
