"""The tools find the grader's package through tools/grader_package.py, with sys.path left alone: in
the project and in the student handout (both have grading/scangrade next to tools/)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}


def test_no_tool_edits_sys_path():
    offenders = [p.name for p in TOOLS.glob("*.py") if "sys.path.insert" in p.read_text()
                 or "sys.path.append" in p.read_text()]
    assert offenders == []


def test_documented_tools_run_from_the_project():
    for tool in ("bench_fidelity.py", "bench_repro.py", "bench_compile.py", "submit.py", "student_test.py"):
        r = subprocess.run([sys.executable, str(TOOLS / tool), "--help"], capture_output=True, text=True,
                           cwd="/", env=clean_env(), timeout=120)
        assert r.returncode == 0 and "usage:" in r.stdout, (tool, r.stderr)


def probe(tools: Path) -> str:
    code = "import grader_package, scangrade.submission as s; print(s.__file__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tools, env=clean_env(),
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_project_package_is_grading_scangrade():
    assert Path(probe(TOOLS)) == REPO / "grading" / "scangrade" / "submission.py"


def test_handout_layout_takes_its_own_grading_scangrade(tmp_path):
    """The handout ships grading/scangrade (the parts make test and make grade use) beside tools/:
    the tools take that copy, not another project's."""
    root = tmp_path / "handout"
    tools, package = root / "tools", root / "grading" / "scangrade"
    tools.mkdir(parents=True)
    package.mkdir(parents=True)
    for name in ("grader_package.py", "submit.py"):
        shutil.copy(TOOLS / name, tools / name)
    for name in ("__init__.py", "submission.py", "vocab.py"):
        shutil.copy(REPO / "grading" / "scangrade" / name, package / name)
    assert Path(probe(tools)) == package / "submission.py"
    r = subprocess.run([sys.executable, str(tools / "submit.py"), "--help"], capture_output=True, text=True,
                       env=clean_env(), timeout=60)
    assert r.returncode == 0, r.stderr
