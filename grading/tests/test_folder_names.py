"""A submission folder may have any name (a quote, a backslash, a space, $, ', a line break, non-ASCII):
it grades like a plain one, and every diagnostic names the student's files from the submission
(student/x.cuh:3), never by the grading folder's path.

The cheap tests run the rewriter (harness/emulation/rewrite.py) and the host compiler on a copy of a
gallery entry; the end-to-end ones grade it (emulated) and compile it with nvcc (no GPU needed)."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import GRADING, REAL_BUILD, REAL_TOOLCHAIN, REPO
from scangrade import build
from scangrade.build import Recipe, normalize_log, read_toolchain
from scangrade.submission import load_submission

GALLERY = GRADING / "gallery" / "correct_brent_kung"       # four slots and a shared header
REWRITE = REPO / "harness" / "emulation" / "rewrite.py"
EMU_FLAGS = ["-std=c++17", "-I", str(REPO / "harness" / "emulation" / "include"), "-I", str(REPO / "harness" / "include"),
             "-DSCANGRADE_EMULATED"]
NAMES = ['quote"d', "back\\slash", "with space", "dollar$HOME", "it's", "line\nbreak", "ünïcødé", "tick`id`",
         "all of \"them\\ $x 'y\n ü"]
CXX = shutil.which("c++") or shutil.which("g++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no host C++ compiler")
toolchain = json.loads(REAL_TOOLCHAIN.read_text()) if REAL_TOOLCHAIN.is_file() else {}


def copy_entry(parent: Path, name: str) -> Path:
    root = parent / name
    shutil.copytree(GALLERY, root)
    return root


def rewrite(root: Path, src: str, out: Path) -> subprocess.CompletedProcess:
    """As the grader runs it: from the submission's folder, the .cu named student/x.cu."""
    return subprocess.run([sys.executable, str(REWRITE), src, str(out)], cwd=root, capture_output=True, text=True,
                          timeout=120)


@needs_cxx
@pytest.mark.parametrize("name", NAMES, ids=[ascii(n) for n in NAMES])
def test_rewritten_code_compiles_in_a_folder_of_any_name(tmp_path, name):
    root = copy_entry(tmp_path, name)
    out = tmp_path / "out" / "blelloch.cpp"
    r = rewrite(root, "student/blelloch.cu", out)
    assert r.returncode == 0, r.stderr
    written = {p.name: p.read_text() for p in out.parent.iterdir()}
    assert "brent_kung.blelloch.1.cuh" in written                 # the header's copy, named after OUT
    assert '#line 1 "student/brent_kung.cuh"' in written["brent_kung.blelloch.1.cuh"]
    assert '#include "brent_kung.blelloch.1.cuh"' in written["blelloch.cpp"]
    for text in written.values():
        assert str(root) not in text and name not in text            # no path of the folder anywhere
    c = subprocess.run([CXX, *EMU_FLAGS, "-I", "student", "-fsyntax-only", str(out)], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, c.stderr


def test_line_directive_quoting_round_trips():
    # a script, not a package: run by its path (runpy registers it while it runs, as its dataclasses need)
    rw = SimpleNamespace(**runpy.run_path(str(REWRITE), run_name="rewrite"))
    assert rw.quote('a"b\\c\nd\x01') == '"a\\"b\\\\c\\nd\\001"'
    assert rw.include_name("x.blelloch.1.cuh") == '"x.blelloch.1.cuh"'
    with pytest.raises(rw.RewriteError):
        rw.include_name('/tmp/quote"d/x.cuh')                        # an #include cannot carry it


@needs_cxx
def test_diagnostics_and_file_macro_name_the_submission(tmp_path):
    """A header's compile error and __FILE__ (what the emulator's race and crash messages print) name
    student/x.cuh, in a folder whose name holds a quote and a line break."""
    root = tmp_path / 'odd "name\nhere'
    (root / "student" / "sub").mkdir(parents=True)
    (root / "student" / "blelloch.cu").write_text('#include "helpers.cuh"\n#include "sub/deep.cuh"\n'
                                                  'const char* here() { return where(); }\n')
    (root / "student" / "helpers.cuh").write_text('#pragma once\ninline const char* where() { return __FILE__; }\n')
    (root / "student" / "sub" / "deep.cuh").write_text('#pragma once\n#include "../helpers.cuh"\n'
                                                       'int broken() { return undeclared_name; }\n')
    out = tmp_path / "out" / "blelloch.cpp"
    assert rewrite(root, "student/blelloch.cu", out).returncode == 0
    pre = subprocess.run([CXX, *EMU_FLAGS, "-I", "student", "-E", str(out)], cwd=root, capture_output=True,
                         text=True, timeout=300)
    assert 'return "student/helpers.cuh";' in pre.stdout
    c = subprocess.run([CXX, *EMU_FLAGS, "-I", "student", "-c", str(out), "-o", str(tmp_path / "o.o")], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert c.returncode != 0
    log = normalize_log(c.stdout + c.stderr, root)
    assert "student/sub/deep.cuh:3:" in log and "undeclared_name" in log
    assert str(root) not in log and str(tmp_path) not in log


def test_normalize_log_names_paths_from_the_submission(tmp_path):
    root = tmp_path / "sub"
    text = (f"{root}/student/x.cuh:3:5: error: boom\nIn file included from {root}/student/blelloch.cu:2:\n"
            f"{root}/student/y.cuh(7): error: nvcc style\n")
    assert normalize_log(text, root) == ("student/x.cuh:3:5: error: boom\nIn file included from "
                                         "student/blelloch.cu:2:\nstudent/y.cuh:7: error: nvcc style\n")
    assert normalize_log("a.cu(3): error\n") == "a.cu:3: error\n"


needs_emulate = pytest.mark.skipif("emulate" not in toolchain, reason=f"no emulation build at {REAL_BUILD}")


@needs_emulate
@pytest.mark.parametrize("name", ['all of "them\\ $x \'y\n ü'], ids=["quote-backslash-dollar-newline"])
def test_grades_like_a_plain_folder_emulated(tmp_path, name):
    root = copy_entry(tmp_path / "in", name)
    out = tmp_path / "grading-results" / name       # the default output folder holds the name too
    run = subprocess.run([sys.executable, str(GRADING / "grade.py"), str(root), "--backend", "emulate",
                          "--build-dir", str(REAL_BUILD), "--sandbox", "auto",
                          "--formats", "junit", "--max-n", "1025", "--quiet"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["build"]["status"] == "ok" and not doc["build"]["failed_slots"], doc["build"]["log"]
    assert doc["cases"] and all(c["status"] == "pass" for c in doc["cases"]), \
        [(c["id"], c["status"], c["message"]) for c in doc["cases"] if c["status"] != "pass"]
    assert doc["submission"]["name"] == name
    assert ET.parse(out / "junit.xml").getroot().get("failures") == "0"


# every character that broke nvcc in one name: a quote (the PTX's .file line), $ and ` (nvcc's shell),
# a backslash and a line break; the other names are covered by the rewriter tests above
NVCC_NAMES = ["all of \"them\\ $x `id` 'y\n ü"]


@pytest.mark.skipif(not toolchain.get("nvcc") or not Path(toolchain.get("nvcc", "")).is_file(),
                    reason="no nvcc in the build's toolchain")
def test_nvcc_compiles_a_folder_of_any_name(tmp_path):
    """The GPU backend's compile (nvcc runs without a GPU) of every slot, in folders with those names."""
    recipe = Recipe.from_toolchain(read_toolchain(REAL_BUILD), "gpu", sandbox="off")
    for i, name in enumerate(NVCC_NAMES):
        root = copy_entry(tmp_path, name)
        with load_submission(root) as sub:
            units = [build.Unit(f"student/{p.name}", Path("student") / p.name,
                                tmp_path / f"obj{i}" / f"{p.stem}.o", slot) for slot, p in sub.slot_files.items()]
            build.compile_all(recipe, units, sub.student_dir, sub.root, 2, build.COMPILE_TIMEOUT_S)
        for u in units:
            assert u.ok, (name, u.display, normalize_log(u.run.output if u.run else "", root))


@needs_emulate
@pytest.mark.parametrize("backend", ["emulate", "gpu"])
def test_compile_log_names_headers_from_the_submission(tmp_path, backend):
    """build.json's log: an error in a student header reads student/x.cuh:N on both backends."""
    if backend == "gpu" and not Path(toolchain.get("nvcc", "")).is_file():
        pytest.skip("no nvcc")
    root = tmp_path / "some folder"
    (root / "student").mkdir(parents=True)
    (root / "student" / "blelloch.cu").write_text('#include "bad.cuh"\n')
    (root / "student" / "bad.cuh").write_text("#pragma once\nint broken() { return undeclared_name; }\n")
    recipe = Recipe.from_toolchain(read_toolchain(REAL_BUILD), backend, sandbox="off")
    with load_submission(root) as sub:
        result = build.build(sub, recipe, tmp_path / "out", jobs=2)
    assert result.failed_slots == ["blelloch"]
    assert "student/bad.cuh:2" in result.log and "undeclared_name" in result.log, result.log
    assert str(root) not in result.log and str(tmp_path) not in result.log, result.log
