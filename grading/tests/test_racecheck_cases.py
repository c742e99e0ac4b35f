"""Which public cases run compute-sanitizer racecheck on the GPU (testcases/generate.py's SANITIZE).

The emulation backend reports a race on every case up to 65536 elements whose thread orders disagree;
on the GPU a race usually gives the right values and only racecheck shows it. So that both backends can
show a slot's race, racecheck runs on every shape where one shows: within one warp, one past a warp, a
partial block, and for the multi-block slots past one block and past one tile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PUBLIC = Path(__file__).resolve().parents[2] / "testcases" / "public.json"
SLOTS = ["hillis_steele", "blelloch", "hierarchical", "single_pass"]


def racecheck_sizes(slot: str) -> list[int]:
    cases = json.loads(PUBLIC.read_text())["cases"]
    return sorted(c["n"] for c in cases if c["slot"] == slot and "racecheck" in c.get("sanitize", []))


@pytest.mark.parametrize("slot", SLOTS)
def test_racecheck_covers_each_shape(slot):
    sizes = racecheck_sizes(slot)
    assert any(n < 32 for n in sizes), (slot, sizes, "within one warp")
    assert any(32 < n < 64 for n in sizes), (slot, sizes, "one past a warp")
    assert any(n > 32 and n % 1024 not in (0, 1) and n % 32 != 0 for n in sizes), (slot, sizes, "a partial block")
    if slot in ("hierarchical", "single_pass"):
        assert any(1024 < n <= 2048 for n in sizes), (slot, sizes, "one past a 1024-element block")
        assert any(n > 2048 and n % 2048 != 0 for n in sizes), (slot, sizes, "several tiles, the last one partial")
    assert all(n <= 65536 for n in sizes), "the cases the emulation backend also runs under several orders"
