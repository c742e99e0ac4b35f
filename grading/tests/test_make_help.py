"""`make help`: every target of the Makefile in one screen (80 columns, at most 24 lines), and it
runs nothing (no dependency check, no build)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_target_in_one_screen(tmp_path):
    run = subprocess.run(["make", "-s", "-C", str(REPO), "help", f"BUILD={tmp_path / 'build'}"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines), run.stdout
    phony = re.search(r"^\.PHONY:(.*)$", (REPO / "Makefile").read_text(), re.M).group(1).split()
    listed = {line.split()[0] for line in lines if line.startswith("  ")}
    assert set(phony) - {"configure", "help"} <= listed, sorted(set(phony) - listed)
    assert not (tmp_path / "build").exists(), "make help built or configured something"
