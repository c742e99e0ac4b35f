"""The student handout (tools/handout.py): what is in the tarball, what never is, identical bytes
across builds, and (slow, one build per scenario) that it builds where students unpack it: the four
slots NOT IMPLEMENTED as shipped, every case passing with a correct submission as student code."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

import handout   # tools/, on the path by pytest.ini

REPO = Path(__file__).resolve().parents[2]

SLOTS = ("hillis_steele", "blelloch", "hierarchical", "single_pass")
EMULATION_MAX_N = 2**22 + 1  # kernel_tests.cpp skips larger cases on the emulation backend

REQUIRED = [
    "Makefile", "README.md", "CMakeLists.txt", "tools/deps.sh", "testcases/public.json",
    *(f"student/{s}.cu" for s in SLOTS),
    "harness/include/scangrade/student_api.h",
    "harness/tests/kernel_tests.cpp", "harness/tests/bind_student.cpp", "harness/tests/default_suite.cpp",
    "harness/src/suite.cpp", "harness/src/emulated_run.cpp",
    "harness/emulation/CMakeLists.txt", "harness/emulation/rewrite.py",
    "harness/emulation/include/cuda_runtime.h", "harness/emulation/src/scheduler.cpp",
    "harness/cmake/runtime_cache.cmake", "harness/cmake/runtime_cache_store.cmake",
    # make grade: the grader's emulated judge, worker, sandbox launcher and Python
    "grading/grade.py", "grading/grader.cmake", "grading/judge/judge_main.cpp", "grading/worker/worker_main.cpp",
    "grading/sandbox/sandbox_main.cpp", "grading/protocol/messages.cpp", "grading/policy_rules.json",
    "grading/scangrade/grade.py", "grading/scangrade/feedback_page.py",
]
# never in the handout: model answers, complete submissions, test kernels and fixtures that solve slots
NEVER = ("reference/", "grading/gallery/", "grading/tests/", "grading/judge/tests/", "grading/worker/tests/",
         "grading/fidelity/", "grading/platforms/", "harness/emulation/tests/")


def build(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "tools" / "handout.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("handout") / "scangrade-handout.tar.gz"
    build(out)
    return out


def members(path: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return {m.name: m for m in tar.getmembers()}


def files_of(path: Path) -> dict[str, bytes]:
    """handout-relative path -> content of every regular file."""
    with tarfile.open(path) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


# --- fast: the file list ----------------------------------------------------------------------

def test_allow_listed_files_present(tarball):
    files = files_of(tarball)
    missing = [p for p in REQUIRED if p not in files]
    assert not missing, f"missing from the handout: {missing}"
    # shipped files are the repository's own (some under another name), except those made for students
    for path, data in files.items():
        if path in handout.GENERATED:
            assert data == (REPO / "tools/handout" / handout.GENERATED[path]).read_bytes(), path
        elif path in handout.SHIPPED_AS:
            assert data == (REPO / handout.SHIPPED_AS[path][0]).read_bytes(), f"{path} differs from its origin"
        elif path not in handout.GENERATED_TEXT:
            assert data == (REPO / path).read_bytes(), f"{path} differs from the repository's"
    # make test's driver finds the grader's own file-name rules and a starter file for every slot
    assert files["grading/scangrade/submission.py"] == (REPO / "grading/scangrade/submission.py").read_bytes()
    assert all(files[f"harness/starter/{s}.cu"] == files[f"student/{s}.cu"] for s in SLOTS)


def test_forbidden_files_absent(tarball):
    files = files_of(tarball)
    for path, data in files.items():
        assert not path.startswith(NEVER), path
        assert path != "grading/worker/reference_as_student.cpp", path
        assert b"namespace scangrade::reference" not in data, f"{path} holds reference solution code"
        assert b"namespace scangrade::baseline" not in data, f"{path} holds the CUB baseline"
        assert "hidden" not in path.lower() and "gallery" not in path.lower(), path
        if path.startswith("testcases/"):
            assert path == "testcases/public.json", f"only the public suite ships, not {path}"
        if path.startswith("harness/tests/"):
            assert path in ("harness/tests/kernel_tests.cpp", "harness/tests/bind_student.cpp",
                            "harness/tests/default_suite.cpp"), path
    assert json.loads(files["testcases/public.json"])["suite"] == "public"
    for slot in SLOTS:
        assert b"not_implemented(" in files[f"student/{slot}.cu"], f"student/{slot}.cu is not a starter file"
    assert sorted(p for p in files if p.startswith("student/")) == sorted(f"student/{s}.cu" for s in SLOTS)
    # the student's deps.sh installs nothing and asks for no sandbox, Slurm or CUDA toolkit
    deps = files["tools/deps.sh"]
    for word in (b"requirements-dev.txt", b"pip ", b"apt-get update", b"command -v bwrap", b"slurm", b"podman",
                 b"command -v nvcc"):
        assert word not in deps, word
    assert not any(l.lstrip().startswith((b"apt-get", b"sudo")) for l in deps.splitlines())
    # what it fetches without root lands in the handout's .deps/: nothing is installed on the machine
    fetch = files["tools/fetch_debs.sh"]
    for word in (b"apt-get install", b"sudo", b"dpkg -i", b"dpkg --install"):
        assert word not in fetch, word


def test_deterministic(tarball, tmp_path, monkeypatch):
    again = tmp_path / "again.tar.gz"
    build(again)
    assert hashlib.sha256(again.read_bytes()).hexdigest() == hashlib.sha256(tarball.read_bytes()).hexdigest()
    infos = members(tarball)
    names = list(infos)
    assert names == sorted(names), "entries are not sorted"
    assert all(n == handout.PREFIX or n.startswith(handout.PREFIX + "/") for n in names)
    assert len({m.mtime for m in infos.values()}) == 1
    for m in infos.values():
        assert (m.uid, m.gid, m.uname, m.gname) == (0, 0, "", "")
        assert m.mode in (0o644, 0o755), (m.name, oct(m.mode))
        assert not (m.issym() or m.islnk() or m.isdev())
    exe = {n.split("/", 1)[1] for n, m in infos.items() if m.isfile() and m.mode == 0o755}
    assert {"tools/deps.sh", "harness/emulation/rewrite.py"} <= exe
    # the gzip header carries neither a file name nor a time
    head = tarball.read_bytes()[:10]
    assert head[3] & 0x08 == 0 and head[4:8] == b"\0\0\0\0"


def copy_sources(tmp: Path) -> Path:
    """A minimal repository with the allow-listed files, for the refusal tests."""
    root = tmp / "repo"
    paths = [e.path for e in handout.collect(handout.WorkTree(REPO))]
    for path in paths + [origin for origin, _ in handout.SHIPPED_AS.values()]:
        if (REPO / path).is_file():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / path, root / path)
    return root


def test_refuses_solutions_and_missing_files(tmp_path):
    root = copy_sources(tmp_path)
    handout.collect(handout.WorkTree(root))  # the copy itself is fine

    solved = root / "student/blelloch.cu"
    original = solved.read_bytes()
    solved.write_bytes(original.replace(b"not_implemented(", b"// done("))
    with pytest.raises(handout.HandoutError, match="student/blelloch.cu: does not call not_implemented"):
        handout.collect(handout.WorkTree(root))
    solved.write_bytes(original)

    leaked = root / "harness/src/leaked.cpp"
    leaked.write_text("namespace scangrade::reference { void f(); }\n")
    with pytest.raises(handout.HandoutError, match="leaked.cpp: contains 'namespace scangrade::reference'"):
        handout.collect(handout.WorkTree(root))
    leaked.unlink()

    (root / "testcases/public.json").unlink()
    with pytest.raises(handout.HandoutError, match="'testcases/public.json' matches no file"):
        handout.collect(handout.WorkTree(root))


@pytest.mark.parametrize("path", ["grading/gallery/correct_x/student/blelloch.cu", "grading/judge/tests/racy/slots.cu",
                                  "grading/tests/test_x.py", "reference/blelloch.cu", "testcases/hidden.json"])
def test_refuses_the_gallery_the_reference_and_hidden_suites(tmp_path, monkeypatch, path):
    """An allow-list entry that reaches the gallery, the grader's tests, reference/ or a hidden suite
    is refused, whatever the file holds (the judge, worker and grade.py ship: make grade)."""
    root = copy_sources(tmp_path)
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text("// harmless text\n")
    monkeypatch.setattr(handout, "ALLOW", [*handout.ALLOW, (path, "a mistake")])
    with pytest.raises(handout.HandoutError, match="refusing to build the handout"):
        handout.collect(handout.WorkTree(root))


def test_student_makefile_follows_the_project_makefile():
    """Makefile.student and the project Makefile share their variables and `make test` (both run
    tools/student_test.py); the student's configures without CUDA when there is no nvcc."""
    student = (REPO / "tools/handout/Makefile.student").read_text().splitlines()
    project = (REPO / "Makefile").read_text().splitlines()
    for shared in ("BUILD ?= build", "JOBS ?= $(shell nproc)", "export SCANGRADE_BACKEND := $(BACKEND)"):
        assert shared in student and shared in project, shared
    backend = next(l for l in project if l.startswith("BACKEND :="))
    assert backend in student

    def recipe(lines: list[str], target: str) -> list[str]:
        i = next(i for i, l in enumerate(lines) if l.startswith(f"{target}:"))
        out = [lines[i]]
        for l in lines[i + 1:]:
            if not l.startswith("\t"):
                break
            out.append(l)
        return out

    assert recipe(student, "test") == recipe(project, "test")
    assert "tools/student_test.py" in recipe(student, "test")[1]
    assert any("-DSCANGRADE_CUDA=OFF" in l for l in student)


def test_stop_after_timeouts_is_the_graders():
    """make test stops a slot after as many timeouts in a row as the grader does by default: the judge's
    option default and the harness constant kernel_tests.cpp uses are the same number."""
    judge = (REPO / "grading/judge/command_line.h").read_text()
    harness = (REPO / "harness/include/scangrade/suite.h").read_text()
    graders = re.search(r"stop_after_timeouts = (\d+);", judge)
    ours = re.search(r"kStopAfterTimeouts = (\d+);", harness)
    assert graders and ours and graders.group(1) == ours.group(1)
    assert "kStopAfterTimeouts" in (REPO / "harness/tests/kernel_tests.cpp").read_text()
    # and the deadline is the judge's: the same function of n on the emulation backend
    assert "default_deadline_s(c.n, true)" in (REPO / "harness/tests/kernel_tests.cpp").read_text()
    assert "default_deadline_s(c.n, o_.backend != \"gpu\")" in (REPO / "grading/judge/session.cpp").read_text()


def test_driver_finds_failed_student_files(tmp_path):
    """tools/student_test.py reads which student files failed from make's and ninja's own lines."""
    import student_test
    make = ("gmake[2]: *** [CMakeFiles/scangrade_student_test_emu.dir/build.make:90: CMakeFiles/scangrade_student_"
            "test_emu.dir/emulated/scangrade_student_test_emu/blelloch.35d701a8/blelloch.cpp.o] Error 1\n"
            "gmake[2]: *** [CMakeFiles/scangrade_student.dir/build.make:77: CMakeFiles/scangrade_student.dir/"
            "student/hillis_steele.cu.o] Error 2\n"
            "FAILED: CMakeFiles/x.dir/emulated/x/my_helper.0123abcd/my_helper.cpp.o\n"
            "student/single_pass.cu(3): error: not a failed object line\n")
    assert student_test.failed_files(make) == ({"blelloch", "my_helper"}, {"hillis_steele"})
    trace = ("In file included from /h/harness/emulation/include/cuda_runtime.h:5,\n"
             "/h/harness/emulation/include/scangrade/emu_device.h:10:3: error: internal thing\n"
             "/h/student/blelloch.cu: In instantiation of 'void f() [with T = int]':\n"
             "/h/student/blelloch.cu:12:5: error: '__syncthread' was not declared in this scope\n"
             "   12 |     __syncthread();\n"
             "      |     ^~~~~~~~~~~~\n")
    # the stand-in for a slot that did not compile: in the project, the grader's own stub
    from scangrade.build import stub_source
    build = tmp_path / "build"
    folder = student_test.starter_dir(build, ["blelloch"])
    assert (folder / "blelloch.cu").read_text() == stub_source("blelloch", "student/blelloch.cu did not compile (make test)")
    shown = student_test.student_errors(trace, "blelloch")
    assert shown[0].endswith("'__syncthread' was not declared in this scope"), shown
    assert not any("harness/emulation" in l or "In instantiation" in l for l in shown), shown


def test_submit_packs_what_the_grader_reads(tmp_path, capsys):
    """make submit (tools/submit.py): student/'s slot, helper and header files, nothing else, in an
    archive the grader's reader accepts; a name the grader refuses writes nothing (exit 2)."""
    import submit
    from scangrade.submission import load_submission
    student = tmp_path / "student"
    student.mkdir()
    for slot in SLOTS:
        shutil.copy(REPO / "student" / f"{slot}.cu", student)
    (student / "util.cuh").write_text("#pragma once\n")
    (student / "notes.txt").write_text("not handed in\n")
    out = tmp_path / "submission.tar.gz"
    assert submit.main(["--student", str(student), "--out", str(out)]) == 0
    with tarfile.open(out) as tar:
        assert sorted(tar.getnames()) == ["student", *sorted(f"student/{s}.cu" for s in SLOTS), "student/util.cuh"]
    with load_submission(out) as sub:
        assert sub.layout_error is None and sorted(sub.slot_files) == sorted(SLOTS)
    (student / "blelloch.cu").rename(student / "blelloch_scan.cu")
    out.unlink()
    assert submit.main(["--student", str(student), "--out", str(out)]) == 2
    assert not out.exists() and "did you mean blelloch.cu?" in capsys.readouterr().out


def test_cli_list_prints_every_file(capsys):
    assert handout.main(["--list"]) == 0
    printed = capsys.readouterr().out
    for path in REQUIRED:
        assert f"{handout.PREFIX}/{path} " in printed


# --- slow: build the handout where a student unpacks it -----------------------------------------

def summary(output: str) -> dict[tuple[str, str], str]:
    """(slot, dtype) -> the summary cell, from kernel_tests.cpp's table (cells apart by 2+ spaces)."""
    lines = output[output.rindex("ScanGrade summary:"):].splitlines()
    cells = {}
    if lines[1].split() == ["slot", "int32", "float32"]:   # one row per slot
        for line in lines[2:2 + len(SLOTS)]:
            slot, int32, float32 = re.split(r"\s{2,}", line.strip())  # cells hold single spaces only
            cells[(slot, "int32")] = int32
            cells[(slot, "float32")] = float32
        return cells
    # a cell too long for 80 columns: a line per type, the slot named on the first
    for first, second in zip(lines[1:1 + 2 * len(SLOTS):2], lines[2:2 + 2 * len(SLOTS):2]):
        slot, _, int32 = re.split(r"\s{2,}", first.strip(), maxsplit=2)
        cells[(slot, "int32")] = int32
        cells[(slot, "float32")] = re.split(r"\s{2,}", second.strip(), maxsplit=1)[1]
    return cells


STUDENT_USER = "scangrade-student"
WIDTH = 80  # failure blocks and the summary wrap here (kernel_tests.cpp)


def student_path(tmp: Path, nvcc: bool) -> str:
    """A PATH with every command of this machine but bubblewrap, and nvcc only when asked for."""
    bin_dir = tmp / ("bin-nvcc" if nvcc else "bin")
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for f in sorted(Path(d).iterdir()) if Path(d).is_dir() else []:
            if f.name in ("bwrap", "nvcc") or (bin_dir / f.name).exists():
                continue
            (bin_dir / f.name).symlink_to(f)
    nvcc_dir = shutil.which("nvcc") and Path(shutil.which("nvcc")).parent
    nvcc_dir = nvcc_dir or (Path("/usr/local/cuda/bin") if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    return str(bin_dir) + (f":{nvcc_dir}" if nvcc else "")


class Student:
    """A student's handout: unpacked in a fresh home folder owned by a non-root user, `make test` run
    as that user with a clean environment and the given PATH."""

    def __init__(self, tarball: Path, base: Path, path: str, folder: str = "") -> None:
        """folder: unpack into home/folder (a second handout of the same student: the same home)."""
        self.home = base / "home"
        if not self.home.is_dir():
            self.home.mkdir()
            shutil.chown(self.home, STUDENT_USER, STUDENT_USER)
        self.path = path
        copy = base / tarball.name  # where the student user can read it
        shutil.copy(tarball, copy)
        os.chmod(copy, 0o644)
        where = self.home / folder
        if folder:
            self.run(["mkdir", "-p", str(where)], cwd=self.home)
        self.run(["tar", "xzf", str(copy)], cwd=where)
        self.root = where / handout.PREFIX
        self.student = self.root / "student"

    def run(self, cmd: list[str], cwd: Path | None = None, timeout: float = 1800,
            env: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        return subprocess.run(["runuser", "-u", STUDENT_USER, "--", "env", "-i", f"HOME={self.home}",
                               f"PATH={self.path}", "LANG=C.UTF-8", *env, *cmd], cwd=cwd or self.root,
                              capture_output=True, text=True, timeout=timeout)

    def make_test(self) -> tuple[int, str]:
        r = self.run(["make", "test", "JOBS=2"])
        return r.returncode, r.stdout + r.stderr

    def make_grade(self) -> tuple[int, str]:
        """make grade with the student's python3 as it is: feedback.html needs no package beyond the
        standard library (no Jinja2)."""
        r = self.run(["make", "grade", "JOBS=2"])
        return r.returncode, r.stdout + r.stderr

    def put(self, files: dict[str, Path | str]) -> None:
        """Replace student/ files (a Path: copied; a str: the text); a None-like empty str removes."""
        for name, src in files.items():
            dst = self.student / name
            if isinstance(src, Path):
                shutil.copy(src, dst)
            elif src == "":
                dst.unlink()
                continue
            else:
                dst.write_text(src)
            shutil.chown(dst, STUDENT_USER, STUDENT_USER)


def expected_cells(root: Path, emulated: bool, slots=SLOTS) -> dict[tuple[str, str], str]:
    cases = json.loads((root / "testcases/public.json").read_text())["cases"]
    out = {}
    for s in slots:
        for d in ("int32", "float32"):
            rows = [c for c in cases if c["slot"] == s and c["dtype"] == d]
            skipped = sum(1 for c in rows if emulated and c["n"] > EMULATION_MAX_N)
            out[(s, d)] = f"{len(rows) - skipped}/{len(rows)} passed" + (f", {skipped} skipped" if skipped else "")
    return out


def check_screen(out: str) -> None:
    """What every run's test output promises a terminal."""
    assert "kernel_tests.cpp" not in out and "[  FAILED  ]" not in out and "FAILED TEST" not in out, out[-3000:]
    tests = out[out.index("ScanGrade: running"):] if "ScanGrade: running" in out else out
    long = [l for l in tests.splitlines() if len(l) > WIDTH and "--gtest_filter=" not in l]
    assert not long, long


@pytest.fixture(scope="module")
def student_user():
    if os.environ.get("SCANGRADE_HANDOUT_STUDENT_TESTS") == "0":
        pytest.skip("run by its own ctest entry, python/handout-as-student")
    if os.geteuid() != 0 or not shutil.which("runuser") or not shutil.which("useradd"):
        pytest.skip("drives the handout as a non-root user: needs root, runuser and useradd")
    if not shutil.which("cmake"):
        pytest.skip("needs CMake to build the handout")
    if subprocess.run(["id", STUDENT_USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-m", STUDENT_USER], check=True, capture_output=True)
    return STUDENT_USER


@pytest.fixture
def student_base():
    base = Path(tempfile.mkdtemp(prefix="scangrade-student-", dir="/tmp"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def grade_digest(results: dict) -> dict:
    """What a grade is: the outcome, the score, each slot's points and statuses, each case's status and points."""
    return {"outcome": results["outcome"], "max_n": results["max_n"], "score": results["score"],
            "slots": {k: (v["points"], v["max_points"], v["statuses"]) for k, v in results["slots"].items()},
            "cases": sorted((c["id"], c["status"], c["points"], c["max_points"]) for c in results["cases"])}


def instructor_grade(student: Path, out: Path) -> dict:
    """The project's own grade.py on the emulation backend with the public suite, of a copy of student/."""
    copy = out / "submission" / "student"
    shutil.copytree(student, copy)
    r = subprocess.run([sys.executable, str(REPO / "grading/grade.py"), "--build-dir", os.environ["SCANGRADE_BUILD_DIR"],
                        "--backend", "emulate", "--out", str(out / "results"), str(copy)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads((out / "results" / "results.json").read_text())


def cache_dir_in(out: str, verb: str) -> str:
    """The emulation runtime's cache folder make test names after `verb` ("stored in", "reused from")."""
    found = re.findall(rf"^emulation runtime: (?:built once and )?{verb} (\S+?):? ", out, re.M)
    assert len(found) == 1, out[-3000:]
    return found[0]


def runtime_objects(build: Path) -> set[str]:
    """The object files this build folder compiled for the emulation runtime's libraries."""
    dirs = {"scangrade_core.dir", "scangrade_emu.dir", "scangrade_device_emu.dir", "scangrade_kernel_tests_emu.dir"}
    return {o.name for o in build.rglob("*.o") if dirs & set(o.parts)}


def test_handout_as_a_student_without_nvcc(tarball, student_user, student_base):
    """Slow (several minutes on 2 cores, one hang costs 3 deadlines): a non-root student in a fresh
    home, no bubblewrap and no nvcc on PATH, drives `make test` through the issue's cases, `make grade`
    (compared with the instructor's emulated grade of the same files) and the per-machine emulation
    runtime (a second handout reuses it, a changed source does not)."""
    build_dir = os.environ.get("SCANGRADE_BUILD_DIR")
    if not build_dir or not (Path(build_dir) / "grading/toolchain.json").is_file():
        pytest.skip("needs SCANGRADE_BUILD_DIR: the project's build with the grader (the instructor's grade)")
    s = Student(tarball, student_base, student_path(student_base, nvcc=False))

    # as shipped: builds (emulated only, said once), the four slots NOT IMPLEMENTED, exit 0; the
    # emulation runtime is built once and stored in the student's cache (said once)
    rc, out = s.make_test()
    assert rc == 0, out[-4000:]
    assert out.count("no nvcc found") == 1 and "deps:" not in out, out[-4000:]
    assert summary(out) == {(sl, d): "NOT IMPLEMENTED" for sl in SLOTS for d in ("int32", "float32")}, out[-2000:]
    stored = cache_dir_in(out, "stored in")
    assert stored.startswith(f"{s.home}/.cache/scangrade/emulation-runtime-"), stored
    rc, out = s.make_test()
    assert rc == 0 and "no nvcc found" not in out and "emulation runtime" not in out, out[-2000:]

    # a second handout of the same student: the runtime is linked from the cache, not compiled
    second = Student(tarball, student_base, s.path, folder="second")
    rc, out = second.make_test()
    assert rc == 0, out[-4000:]
    assert cache_dir_in(out, "reused from") == stored
    assert not runtime_objects(second.root / "build"), "the cached runtime was compiled again"
    assert "kernel_tests.cpp.o" not in {o.name for o in (second.root / "build").rglob("*.o")}
    assert summary(out) == {(sl, d): "NOT IMPLEMENTED" for sl in SLOTS for d in ("int32", "float32")}, out[-2000:]
    # ... until one of its sources changes: another key, built and stored anew, the old entry untouched
    with open(second.root / "harness/src/names.cpp", "a") as f:
        f.write("// changed\n")
    rc, out = second.make_test()
    assert rc == 0, out[-4000:]
    again = cache_dir_in(out, "stored in")
    assert again != stored and Path(stored, "key.txt").is_file(), (again, stored)
    assert "names.cpp.o" in runtime_objects(second.root / "build")

    # a file name the grader refuses: the grader's message and suggestion, nothing built, exit 2
    from scangrade.submission import load_submission
    (s.student / "blelloch.cu").rename(s.student / "blelloch_scan.cu")
    expected = load_submission(s.student).layout_error
    assert expected and "did you mean blelloch.cu?" in expected
    rc, out = s.make_test()
    assert rc != 0 and f"layout error: {expected}" in out and "ScanGrade summary" not in out, out[-2000:]
    assert "building" not in out
    (s.student / "blelloch_scan.cu").rename(s.student / "blelloch.cu")

    # a race, a typo and a hang: the typo's slot is COMPILE ERROR (its first error first, no emulator
    # internals) while the others run; the hang stops after the grader's 3 timeouts
    gallery = REPO / "grading/gallery"
    s.put({"hillis_steele.cu": gallery / "wrong_missing_syncthreads/student/hillis_steele.cu",
           "blelloch.cu": gallery / "wrong_does_not_compile/student/blelloch.cu",
           "single_pass.cu": gallery / "wrong_hangs_spin/student/single_pass.cu"})
    rc, out = s.make_test()
    assert rc != 0, out[-4000:]
    check_screen(out)
    assert out.index("compile error in student/blelloch.cu:") < out.index("ScanGrade: running")
    block = out[out.index("compile error in student/blelloch.cu:"):].splitlines()[1:]
    assert "student/blelloch.cu:" in block[0] and "error" in block[0] and "__syncthread" in block[0], block[:5]
    assert not any("harness/emulation" in l for l in block[:12]), block[:12]
    cells = summary(out)
    assert cells[("blelloch", "int32")] == cells[("blelloch", "float32")] == "COMPILE ERROR", out[-2000:]
    assert re.fullmatch(r"\d+/15 passed, \d+ race", cells[("hillis_steele", "int32")]), cells
    # the race names the kernel from the handout's root, as the grader does, never by an absolute path
    race = " ".join(out[out.index("race: hillis_steele.int32.n3.random"):].split())
    assert "`hillis_steele_kernel` (student/hillis_steele.cu:" in race, race[:600]
    assert str(s.root) not in race[:600], race[:600]
    assert cells[("hierarchical", "int32")] == "NOT IMPLEMENTED"
    assert re.fullmatch(r"\d+/23 passed, \d+ timeout, 2 skipped", cells[("single_pass", "int32")]), cells
    assert " ".join(out.split()).count("not run: the 3 previous cases of this slot timed out") == 1, out[-3000:]
    assert out.count("no result within") == 3, out[-3000:]
    tail = out[out.rindex("ScanGrade summary:"):]
    assert "FAILED" not in tail and "points: " in tail
    assert "--gtest_filter='HillisSteele/Kernel.Case/int32_n" in tail and "compile_error'" not in tail
    assert "--gtest_filter='SinglePass/Kernel.Case/int32_n1025_random'" in tail

    # make grade: the grader's emulated grade of this very folder, without bubblewrap (said once),
    # feedback.html beside results.json, the same statuses and points as the instructor's grade
    rc, out = s.make_grade()
    assert rc == 0, out[-4000:]
    assert out.count("sandbox: NONE (no bubblewrap") == 1 and "Jinja2" not in out, out[-3000:]
    results = list((s.root / "grading-results").glob("*/results.json"))
    assert len(results) == 1 and (results[0].parent / "feedback.html").is_file(), results
    mine = json.loads(results[0].read_text())
    assert mine["backend"] == "emulate" and mine["outcome"] == "graded", mine["outcome"]
    statuses = {st for v in mine["slots"].values() for st in v["statuses"]}
    assert {"compile_error", "race", "timeout", "not_implemented"} <= statuses, statuses
    assert grade_digest(mine) == grade_digest(instructor_grade(s.student, student_base / "instructor"))

    # a slot that breaks a build-time rule (a leftover main()): the grader's message before the tests,
    # POLICY VIOLATION and 0 points as in the grader, its main() never run in place of the tests'
    for f in sorted(s.student.iterdir()):
        f.unlink()
    s.put({f"{slot}.cu": s.root / f"harness/starter/{slot}.cu" for slot in SLOTS})
    s.put({"hillis_steele.cu": gallery / "policy_defines_main/student/hillis_steele.cu"})
    rc, out = s.make_test()
    assert rc != 0 and "all tests passed" not in out, out[-4000:]
    check_screen(out)
    block = " ".join(out[out.index("policy violation in student/hillis_steele.cu"):].split())
    assert "student/hillis_steele.cu breaks a rule of the assignment: it defines `main`" in block, block[:600]
    assert out.index("policy violation in student/hillis_steele.cu") < out.index("ScanGrade: running")
    cells = summary(out)
    assert cells[("hillis_steele", "int32")] == cells[("hillis_steele", "float32")] == "POLICY VIOLATION", cells
    assert "points: 0 of " in out, out[-1500:]

    # a correct submission (the gallery's; the reference solutions are not one: they define and call
    # scangrade::reference names, which the policy refuses): every case passes, the cases above the
    # emulation cap are skipped with the reason, and the score's maximum is the GPU's
    for f in sorted(s.student.iterdir()):
        f.unlink()
    for f in sorted((gallery / "correct_brent_kung/student").iterdir()):
        s.put({f.name: f})
    rc, out = s.make_test()
    assert rc == 0, out[-4000:]
    check_screen(out)
    assert summary(out) == expected_cells(s.root, emulated=True), out[-3000:]
    cases = json.loads((s.root / "testcases/public.json").read_text())["cases"]
    total = sum(c.get("points", 1) for c in cases)
    over = [c for c in cases if c["n"] > EMULATION_MAX_N]
    # the line wraps at 80 columns
    assert f"points: {total - len(over)} of {total - len(over)} (emulated: {len(over)} cases above the emulation " \
           f"cap of 2^22 + 1 elements, {len(over)} points, run on a GPU only: {total} in all)" \
        in " ".join(out.split()), out[-1500:]


def test_handout_as_a_student_with_nvcc(tarball, student_user, student_base):
    """Slow: the same student with nvcc on PATH (still no GPU, no bubblewrap): the student's files are
    also compiled by nvcc with the grader's flags, so a helper that lacks __device__ (accepted by the
    emulated build) is the COMPILE ERROR the GPU grader gives."""
    path = student_path(student_base, nvcc=True)
    if not any(Path(d, "nvcc").exists() for d in path.split(":")):
        pytest.skip("needs nvcc (the CUDA toolkit)")
    s = Student(tarball, student_base, path)
    rc, out = s.make_test()
    assert rc == 0 and "nvcc not found" not in out, out[-4000:]
    assert summary(out) == {(sl, d): "NOT IMPLEMENTED" for sl in SLOTS for d in ("int32", "float32")}, out[-2000:]

    correct = (REPO / "grading/gallery/correct_kogge_stone/student/hillis_steele.cu").read_text()
    host_only = correct.replace("template <typename T>\n__global__ void hillis_steele_kernel",
                                "template <typename T>\nT keep(T x) { return x; }  // no __device__\n\n"
                                "template <typename T>\n__global__ void hillis_steele_kernel", 1)
    host_only = host_only.replace("if (t < n) out[t] = inclusive;", "if (t < n) out[t] = keep(inclusive);", 1)
    assert host_only.count("keep(") == 2
    s.put({"hillis_steele.cu": host_only,
           "kogge_stone.cuh": REPO / "grading/gallery/correct_kogge_stone/student/kogge_stone.cuh"})
    rc, out = s.make_test()
    assert rc != 0, out[-4000:]
    check_screen(out)
    assert "compile error in student/hillis_steele.cu by nvcc (the GPU grader's compiler" in out, out[-4000:]
    cells = summary(out)
    assert cells[("hillis_steele", "int32")] == "COMPILE ERROR", out[-2000:]
    assert cells[("blelloch", "int32")] == "NOT IMPLEMENTED"
