"""Shared fixtures: the results.json documents (validated against the schema first), the platform
schemas, and fake tools (compiler, rewriter, judge) for machines without CUDA or a built harness."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

import fixtures   # grading/tests/pytest.ini puts grading/ and grading/tests/ on the path

GRADING = Path(__file__).resolve().parent.parent
REPO = GRADING.parent
TESTS = Path(__file__).resolve().parent

NVCC = Path(os.environ.get("SCANGRADE_NVCC", "/usr/local/cuda/bin/nvcc"))
# the CMake build folder with grading/toolchain.json (tests that need it skip when it is missing)
REAL_BUILD = Path(os.environ.get("SCANGRADE_BUILD_DIR", REPO / "build"))
REAL_TOOLCHAIN = REAL_BUILD / "grading" / "toolchain.json"


def load_schema(name: str) -> dict:
    path = GRADING / "results.schema.json" if name == "results" else GRADING / "schemas" / f"{name}.schema.json"
    return json.loads(path.read_text())


def assert_valid(doc: object, schema_name: str) -> None:
    # imported here: the GPU check runs test_gpu_timing.py on a machine without jsonschema
    import jsonschema
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])


@pytest.fixture(params=sorted(fixtures.DOCUMENTS))
def results_doc(request) -> dict:
    """Every fixture document, checked against results.schema.json before the test uses it."""
    doc = fixtures.document(request.param)
    assert_valid(doc, "results")
    return doc


@pytest.fixture
def doc_named():
    def get(name: str) -> dict:
        doc = fixtures.document(name)
        assert_valid(doc, "results")
        return doc
    return get


def write_script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# A fake compiler driver with nvcc's and g++'s interface (-c SRC -o OBJ, or OBJS... -o OUT to link).
# Markers in the source: SYNTAX_ERROR fails at the marker's line (nvcc style "file(L): error"),
# WARN_HERE prints a warning, SLEEP_FOREVER hangs, LINK_FAIL makes any link that includes it fail.
FAKE_COMPILER = r'''
import sys, time
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("-o") + 1])
if "-c" in args:
    src = args[args.index("-c") + 1]
    text = Path(src).read_text()
    for i, line in enumerate(text.splitlines(), start=1):
        if "SYNTAX_ERROR" in line:
            print(f"{src}({i}): error: expected a \";\"")
            print(f"1 error detected in the compilation of \"{src}\".")
            sys.exit(2)
        if "WARN_HERE" in line:
            print(f"{src}:{i}:5: warning: unused variable 'x' [-Wunused-variable]")
        if "SLEEP_FOREVER" in line:
            time.sleep(600)
    out.write_text("OBJ " + src + "\n" + ("LINK_FAIL\n" if "LINK_FAIL" in text else ""))
    sys.exit(0)
objs = [a for a in args if a.endswith((".o", ".a"))]
bad = [o for o in objs if "LINK_FAIL" in Path(o).read_text()]
if bad:
    print(f"/usr/bin/ld: {bad[0]}: undefined reference to `helper_not_defined()'")
    sys.exit(1)
out.write_text("#!/bin/sh\necho fake worker\n")
out.chmod(0o755)
'''

# Fake binutils for the link's join (Recipe.join_commands): `ld -r -o OUT IN...` writes the inputs
# one after another (a fake object's LINK_FAIL marker survives the join); objcopy changes nothing.
FAKE_BINUTILS = r'''
import sys
from pathlib import Path
args = sys.argv[1:]
if "-r" in args:
    out = Path(args[args.index("-o") + 1])
    ins = [a for a in args[args.index("-o") + 2:] if not a.startswith("-")]
    out.write_text("".join(Path(i).read_text() for i in ins))
'''

# A fake rewrite.py: copies IN.cu to OUT.cpp with a marker line on top.
FAKE_REWRITE = r'''
import sys
from pathlib import Path
src, dst = sys.argv[1], sys.argv[2]
Path(dst).parent.mkdir(parents=True, exist_ok=True)
Path(dst).write_text("// rewritten for the emulator\n" + Path(src).read_text())
'''

# A fake judge: records its argv (and the secret file's content), checks build.json exists, then
# writes the document from $FAKE_RESULTS to --out and exits $FAKE_EXIT (default 1).
FAKE_JUDGE = r'''
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
def opt(name):
    return args[args.index(name) + 1] if name in args else None
record = {"argv": args}
if opt("--secret-file"):
    record["secret"] = Path(opt("--secret-file")).read_text()
build = json.loads(Path(opt("--build-json")).read_text())
record["build"] = build
Path(os.environ["FAKE_RECORD"]).write_text(json.dumps(record))
if os.environ.get("FAKE_RESULTS"):
    doc = json.loads(Path(os.environ["FAKE_RESULTS"]).read_text())
    doc["build"] = build
    doc["submission"] = {"name": opt("--submission-name"), "path": opt("--submission-path")}
    Path(opt("--out")).write_text(json.dumps(doc))
print("fake judge: done", file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_EXIT", "1")))
'''


# A stand-in for scangrade_sandbox: runs the command after "--" as it is (the real launcher has its
# own tests: grading/judge/tests, test_exploits.py)
FAKE_SANDBOX = r'''#!/usr/bin/env python3
import os, sys
args = sys.argv[1:]
cmd = args[args.index("--") + 1:]
os.execv(cmd[0], cmd)
'''


def fake_sandbox(folder: Path) -> Path:
    return write_script(folder / "fake_sandbox", FAKE_SANDBOX)


@pytest.fixture
def fake_tools(tmp_path) -> dict[str, Path]:
    tools = tmp_path / "tools"
    tools.mkdir()
    return {"compiler": write_script(tools / "fakecc", FAKE_COMPILER),
            "sandbox": fake_sandbox(tools),
            "rewrite": write_script(tools / "fake_rewrite.py", FAKE_REWRITE),
            "judge": write_script(tools / "fake_judge", FAKE_JUDGE),
            "main": _main_object(tools),
            "binutils": write_script(tools / "fake_binutils", FAKE_BINUTILS)}


def _main_object(tools: Path) -> Path:
    main = tools / "worker_main.o"
    main.write_text("OBJ worker main\n")
    return main


@pytest.fixture
def fake_build_dir(tmp_path, fake_tools) -> Path:
    """A build folder whose toolchain.json points at the fake compiler, rewriter and judge."""
    build_dir = tmp_path / "build"
    (build_dir / "grading").mkdir(parents=True)
    toolchain = {
        "nvcc": str(fake_tools["compiler"]), "cuda_flags": ["-std=c++17"], "link": [str(fake_tools["main"])],
        "judge": str(fake_tools["judge"]), "reference_worker": str(fake_tools["judge"]), "version": "test",
        "sandbox": str(fake_tools["sandbox"]),
        "ld": str(fake_tools["binutils"]), "objcopy": str(fake_tools["binutils"]),
        "emulate": {"rewrite": str(fake_tools["rewrite"]), "cxx": str(fake_tools["compiler"]),
                    "cxx_flags": ["-std=c++17"], "link": [str(fake_tools["main"])]},
    }
    (build_dir / "grading" / "toolchain.json").write_text(json.dumps(toolchain))
    return build_dir


def make_submission(root: Path, files: dict[str, str]) -> Path:
    """Write files (relative path -> text) under root; return root."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def starter_files(prefix: str = "student/") -> dict[str, str]:
    """The repository's starter slot files (they compile, and report not implemented)."""
    return {f"{prefix}{p.name}": p.read_text() for p in sorted((REPO / "student").glob("*.cu"))}
