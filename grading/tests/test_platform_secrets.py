"""What student code can read on each grading platform: no model solution, no suite but the public one
and no secret in what the platforms ship (the Gradescope zip, the PrairieLearn image's install tree,
the feedback grader tree students' CI checks out), except the hidden suites and secret an instructor
names for Gradescope; those, and PrairieLearn's course files, are the grader's alone (folders 0700,
files 0600) before grade.py runs, because inside Docker bubblewrap is usually kept out and student
code runs as an unprivileged uid that reads whatever "others" may read; hidden suites are not graded
where student code could still read them; and the sandbox's binds for compiles and links name none of
them. Seconds in all: the bundles are made with fake builds and a fake grade.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from conftest import GRADING, REAL_TOOLCHAIN, REPO, write_script
from scangrade import build_tools
from scangrade.platforms import common

PLATFORMS = GRADING / "platforms"
GS = PLATFORMS / "gradescope"
PL = PLATFORMS / "prairielearn"
SECRET = "sg-secret-7f3c1e0a-do-not-ship"
SANDBOX_UID = 65534          # the sandbox's default uid when the grader is root (sandbox.cpp kNobody)
TEST_UID = 65321             # the real fallback check's own uid: no batch seat (61000..65095) nor nobody
# what solves a slot (the model solutions, gallery submissions, test kernels) or shows one
SOLVES_A_SLOT = ("reference/", "grading/gallery/", "grading/tests/", "grading/judge/tests/", "grading/worker/tests/",
                 "grading/fidelity/", "grading/docs/", "harness/emulation/tests/")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def solution_hashes() -> dict[str, str]:
    """sha256 -> path of every file that solves a slot, but those identical to a starter file (a
    gallery entry keeps the starter for the slots it does not attack)."""
    starters = {sha(p.read_bytes()) for p in (REPO / "student").glob("*") if p.is_file()}
    found = {}
    for folder in ("reference", "grading/gallery", "harness/emulation/tests", "grading/judge/tests/racy"):
        for p in sorted((REPO / folder).rglob("*")):
            if p.is_file() and p.suffix in (".cu", ".cuh", ".h", ".cpp") and "__pycache__" not in p.parts:
                h = sha(p.read_bytes())
                if h not in starters:
                    found.setdefault(h, p.relative_to(REPO).as_posix())
    return found


def leaks(files: dict[str, bytes], hidden_ok: tuple[str, ...] = ()) -> list[str]:
    """What in a shipped tree (relative path -> bytes) a student must not read: a file under a folder
    that solves a slot, a model solution or gallery file under any name, a suite but the public one, the
    secret; the files in hidden_ok (the instructor's own, named on the command line) excepted."""
    solutions = solution_hashes()
    hidden = sha((REPO / "testcases" / "hidden.example.json").read_bytes())
    found = []
    for rel, data in sorted(files.items()):
        if rel in hidden_ok:
            continue
        if rel.startswith(SOLVES_A_SLOT):
            found.append(f"{rel}: under a folder that solves a slot")
        elif sha(data) in solutions:
            found.append(f"{rel}: a copy of {solutions[sha(data)]}")
        elif sha(data) == hidden or (rel.startswith("testcases/") and rel not in ("testcases/public.json",
                                                                                  "testcases/generate.py")):
            found.append(f"{rel}: a suite that is not the public one")
        elif SECRET.encode() in data:
            found.append(f"{rel}: holds the secret")
    return found


@pytest.fixture
def open_dir():
    """A folder every uid may enter (0755 under /tmp), as /autograder and /grade are: pytest's own
    tmp_path sits under a 0700 folder, where nothing would be readable by another uid anyway."""
    path = Path(tempfile.mkdtemp(prefix="scangrade-secrets-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def fake_build(folder: Path, isolation: dict) -> Path:
    """A build folder whose toolchain names a sandbox launcher that reports `isolation` to --probe."""
    (folder / "grading").mkdir(parents=True, exist_ok=True)
    probe = write_script(folder / "probe_sandbox", f"import json\nprint(json.dumps({isolation!r}))\n")
    (folder / "grading" / "toolchain.json").write_text(json.dumps({"sandbox": str(probe)}))
    return folder


# A fake grade.py: records the mode of every path given in FAKE_WATCH (one a line) as it starts, that
# is while the real grade.py would compile and run student code, then exits 1 without an export.
FAKE_GRADE = r'''
import json, os, sys
from pathlib import Path
modes = {p: oct(os.stat(p).st_mode & 0o777) for p in Path(os.environ["FAKE_WATCH"]).read_text().split()}
Path(os.environ["FAKE_RECORD"]).write_text(json.dumps({"argv": sys.argv[1:], "modes": modes}))
sys.exit(1)
'''


def run_entrypoint(script: Path, env: dict, watch: list[Path], tmp: Path) -> tuple[dict, dict | None]:
    """Run a platform's shell entrypoint with the fake grade.py; its results.json and the record."""
    grade = write_script(tmp / "fake_grade.py", FAKE_GRADE)
    (tmp / "watch.txt").write_text("\n".join(map(str, watch)))
    record = tmp / "record.json"
    full = {**os.environ, **env, "SCANGRADE_GRADE_PY": str(grade), "FAKE_WATCH": str(tmp / "watch.txt"),
            "FAKE_RECORD": str(record)}
    r = subprocess.run([str(script)], env=full, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    root = Path(env.get("AUTOGRADER_ROOT") or env["GRADE_ROOT"])
    doc = json.loads((root / "results" / "results.json").read_text())
    return doc, json.loads(record.read_text()) if record.is_file() else None


# --- Gradescope: the zip, and hidden/ before grading ----------------------------------------------------

def make_bundle(out: Path, hidden: bool) -> Path:
    zip_path = out / "bundle.zip"
    extra = []
    if hidden:
        (out / "secret.txt").write_text(SECRET + "\n")
        extra = ["--hidden-suite", str(REPO / "testcases" / "hidden.example.json"), "--secret-file", str(out / "secret.txt")]
    r = subprocess.run([sys.executable, str(GS / "make_bundle.py"), "--out", str(zip_path), *extra],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return zip_path


def unzip(zip_path: Path, dest: Path) -> dict[str, bytes]:
    """Unpack as Gradescope's unzip does (modes kept: 0644 files, 0755 folders); the files' bytes."""
    files = {}
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            zf.extract(info, dest)
            os.chmod(dest / info.filename, (info.external_attr >> 16) & 0o777)
            files[info.filename] = zf.read(info)
    for folder in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        os.chmod(folder, 0o755)
    return files


@pytest.mark.parametrize("hidden", [False, True], ids=["public", "hidden_suite"])
def test_gradescope_zip_ships_no_solution_and_only_the_named_hidden_files(tmp_path, hidden):
    with zipfile.ZipFile(make_bundle(tmp_path, hidden)) as zf:
        files = {name: zf.read(name) for name in zf.namelist()}
    named = ("hidden/hidden.example.json", "hidden/secret.txt") if hidden else ()
    assert not leaks(files, hidden_ok=named)
    assert [n for n in files if n.startswith("hidden/")] == sorted(named)
    assert "grading/grade.py" in files and "harness/include/scangrade/student_api.h" in files


def test_gradescope_setup_builds_without_reference_and_locks_hidden():
    text = (GS / "setup.sh").read_text()
    assert "-DSCANGRADE_WITH_REFERENCE=OFF" in text and "rm -rf reference" in text
    assert "chmod 0700 hidden" in text and "chmod 0600" in text


@pytest.mark.parametrize("isolation, graded", [
    ({"sandboxed": False, "uid_dropped": True, "uid": SANDBOX_UID}, True),    # Docker as root: the uid drop
    ({"sandboxed": True, "uid_dropped": True, "uid": SANDBOX_UID}, True),     # bubblewrap binds none of it
    ({"sandboxed": False, "uid_dropped": False, "uid": None}, False),         # the grader's own uid, no namespaces
], ids=["uid_drop", "bubblewrap", "no_isolation"])
def test_gradescope_hidden_files_are_the_graders_alone_while_grading(open_dir, tmp_path, isolation, graded):
    """The unpacked zip as Gradescope leaves it (world-readable): hidden/ is 0700 and its files 0600
    when grade.py starts, so the sandbox's uid reads none of it while the public suite stays readable;
    where student code would keep the grader's uid without namespaces, hidden suites are not graded."""
    root = open_dir / "autograder"
    files = unzip(make_bundle(tmp_path, hidden=True), root / "source")
    assert "hidden/secret.txt" in files
    (root / "submission").mkdir()
    (root / "submission" / "hillis_steele.cu").write_text("// x\n")
    hidden = root / "source" / "hidden"
    watch = [hidden, hidden / "secret.txt", hidden / "hidden.example.json"]
    assert all(common.readable_by(p, SANDBOX_UID, SANDBOX_UID) for p in watch)          # as unpacked
    build = fake_build(tmp_path / "build", isolation)
    doc, record = run_entrypoint(GS / "run_autograder", {"AUTOGRADER_ROOT": str(root), "SCANGRADE_BUILD_DIR": str(build)},
                                 watch, tmp_path)
    assert SECRET not in json.dumps(doc)
    if not graded:
        assert record is None and doc["score"] == 0 and "misconfigured" in doc["output"]
        assert str(hidden / "secret.txt") in doc["output"]
        return
    assert record is not None
    assert record["modes"] == {str(hidden): "0o700", str(hidden / "secret.txt"): "0o600",
                               str(hidden / "hidden.example.json"): "0o600"}
    assert not [p for p in watch if common.readable_by(p, SANDBOX_UID, SANDBOX_UID)]
    assert common.readable_by(root / "source" / "testcases" / "public.json", SANDBOX_UID, SANDBOX_UID)
    assert SECRET not in " ".join(record["argv"])


# --- PrairieLearn: the image's install tree, and the course's files before grading -----------------------

def test_prairielearn_image_ships_no_solution_suite_or_secret(tmp_path):
    """install.py's tree (the run stage's /opt/scangrade: everything the pushed image holds of
    ScanGrade) from a build, and a build stage that never copies reference/ nor a suite but the public one."""
    build = tmp_path / "build"
    names = ["scangrade_judge", "grading/scangrade_sandbox", "libworker_emu.a", "scangrade_worker_reference_emu"]
    for name in names:
        (build / name).parent.mkdir(parents=True, exist_ok=True)
        (build / name).write_bytes(b"\x7fELF fake " + name.encode())
    (build / "grading" / "toolchain.json").write_text(json.dumps({
        "version": "0", "cxx": "/usr/bin/c++", "judge": str(build / names[0]), "sandbox": str(build / names[1]),
        "emulate": {"rewrite": [str(REPO / "harness/emulation/rewrite.py")], "cxx": "/usr/bin/c++", "cxx_flags": [],
                    "link": [str(build / names[2]), "-lpthread"], "reference_worker": str(build / names[3])}}))
    dest = tmp_path / "opt" / "scangrade"
    r = subprocess.run([sys.executable, str(PL / "install.py"), "--build", str(build), "--dest", str(dest)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    files = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert not leaks(files)
    assert not [f for f in files if "reference" in Path(f).name], files
    assert "grading/grade.py" in files and "build/scangrade_judge" in files
    dockerfile = (PL / "Dockerfile").read_text()
    copies = [line.split()[1:] for line in dockerfile.splitlines() if line.startswith("COPY ")]
    sources = [c[0] for c in copies if not c[0].startswith("--from")]
    assert sources and not [s for s in sources if s.startswith(("reference", "testcases")) and s != "testcases/public.json"]
    assert [c for c in copies if c[0].startswith("--from")] == [["--from=build", "/stage/opt/scangrade", "/opt/scangrade"]]


@pytest.mark.parametrize("isolation, graded", [
    ({"sandboxed": False, "uid_dropped": True, "uid": SANDBOX_UID}, True),
    ({"sandboxed": False, "uid_dropped": False, "uid": None}, False),
], ids=["uid_drop", "no_isolation"])
def test_prairielearn_course_files_are_the_graders_alone_while_grading(open_dir, tmp_path, isolation, graded):
    """/grade as PrairieLearn mounts it (world-readable): serverFilesCourse/, tests/ and data/ are 0700
    and the hidden suite and secret 0600 when grade.py starts."""
    root = open_dir / "grade"
    course = root / "serverFilesCourse" / "scangrade"
    for folder in (root / "student", course, root / "tests", root / "data"):
        folder.mkdir(parents=True)
    (root / "student" / "hillis_steele.cu").write_text("// x\n")
    shutil.copy(REPO / "testcases" / "hidden.example.json", course / "hidden.json")
    (course / "secret.txt").write_text(SECRET + "\n")
    (course / "scangrade.json").write_text(json.dumps({"hidden_suites": ["hidden.json"], "secret_file": "secret.txt"}))
    (root / "data" / "data.json").write_text(json.dumps({"params": {}, "correct_answers": {"x": "an answer"}}))
    for p in [root, *root.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    watch = [root / "serverFilesCourse", root / "tests", root / "data", course / "hidden.json", course / "secret.txt"]
    assert all(common.readable_by(p, SANDBOX_UID, SANDBOX_UID) for p in watch)
    build = fake_build(tmp_path / "build", isolation)
    doc, record = run_entrypoint(PL / "entrypoint", {"GRADE_ROOT": str(root), "SCANGRADE_BUILD_DIR": str(build)},
                                 watch, tmp_path)
    assert SECRET not in json.dumps(doc)
    if not graded:
        assert record is None and doc["gradable"] is False and "misconfigured" in doc["message"]
        return
    assert record is not None
    assert record["modes"] == {str(p): "0o700" if p.is_dir() else "0o600" for p in watch}
    assert not [p for p in watch if common.readable_by(p, SANDBOX_UID, SANDBOX_UID)]
    assert common.readable_by(root / "student" / "hillis_steele.cu", SANDBOX_UID, SANDBOX_UID)


# --- GitHub: the tree students' feedback CI checks out -------------------------------------------------

@pytest.mark.skipif(not (REPO / ".git").exists(), reason="feedback_grader.py lists git's tracked files")
def test_feedback_grader_tree_ships_no_solution_suite_or_secret(tmp_path):
    import feedback_grader
    out = tmp_path / "grader"
    feedback_grader.write_tree(out)
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert not leaks(files)
    assert "grading/grader.cmake" in files and "testcases/public.json" in files


def test_instructor_workflow_grades_only_in_the_sandbox():
    """grade-class.yml, where the hidden suite and secret are: no grade without bubblewrap."""
    text = (REPO / ".github" / "workflows" / "grade-class.yml").read_text()
    assert "--sandbox require" in text


# --- who may read what ----------------------------------------------------------------------------------

def test_readable_by_follows_every_folder_above(open_dir):
    public = open_dir / "pub" / "suite.json"
    public.parent.mkdir()
    public.write_text("{}")
    private = open_dir / "priv" / "secret.txt"
    private.parent.mkdir()
    private.write_text("s")
    for p in (public.parent, private.parent):
        os.chmod(p, 0o755)
    os.chmod(public, 0o644)
    os.chmod(private, 0o644)
    assert common.readable_by(public, SANDBOX_UID, SANDBOX_UID)
    assert common.readable_by(private, SANDBOX_UID, SANDBOX_UID)
    common.make_private([private.parent])
    assert not common.readable_by(private, SANDBOX_UID, SANDBOX_UID)       # the folder above is closed
    assert not common.readable_by(private.parent, SANDBOX_UID, SANDBOX_UID)
    assert common.readable_by(public, SANDBOX_UID, SANDBOX_UID)
    st = os.stat(private.parent)
    assert common.readable_by(private, st.st_uid, st.st_gid)                 # the grader itself still reads it
    assert not common.readable_by(open_dir / "missing", SANDBOX_UID, SANDBOX_UID)


def test_exposed_to_student_by_isolation(open_dir):
    secret = open_dir / "secret.txt"
    secret.write_text("s")
    os.chmod(secret, 0o644)
    missing = open_dir / "none.json"
    drop = {"sandboxed": False, "uid_dropped": True, "uid": SANDBOX_UID}
    assert common.exposed_to_student([secret, missing], drop) == [secret]
    assert common.exposed_to_student([secret], {"sandboxed": True, "uid_dropped": False}) == []
    assert common.exposed_to_student([secret, missing], {"sandboxed": False, "uid_dropped": False}) == [secret]
    assert common.exposed_to_student([secret], None) == []
    common.make_private([secret])
    assert common.exposed_to_student([secret], drop) == []
    assert common.exposed_to_student([secret], {"sandboxed": False, "uid_dropped": False}) == [secret]


# --- the sandbox's binds -------------------------------------------------------------------------------

def synthetic_toolchain(sandbox: str) -> dict:
    build = REPO / "build"
    return {"cxx": "/usr/bin/c++", "judge": str(build / "scangrade_judge"), "sandbox": sandbox,
            "emulate": {"rewrite": ["/usr/bin/python3", str(REPO / "harness/emulation/rewrite.py"), "--runtime-header",
                                    str(REPO / "harness/emulation/include/cuda_runtime.h")],
                        "cxx": "/usr/bin/c++",
                        "cxx_flags": ["-std=c++17", f"-I{REPO}/harness/emulation/include", f"-I{REPO}/harness/include"],
                        "link": [str(build / "libscangrade_worker_main_emu.a"), str(build / "libscangrade_core.a"),
                                 "-lpthread"]}}


@pytest.mark.parametrize("backend", ["emulate", "gpu"])
def test_compile_and_link_binds_expose_no_solution_suite_or_secret(tmp_path, backend):
    """Every compile, rewrite, link and object scan of a submission runs in scangrade_sandbox with the
    paths it names bound (build_tools.Confinement.wrap): none of them is, or holds, reference/, the
    compiled reference, a suite folder, hidden/ or the secret (the toolchain's include folders are
    harness/include and the emulator's, never the tree above them)."""
    toolchain = json.loads(REAL_TOOLCHAIN.read_text()) if REAL_TOOLCHAIN.is_file() else synthetic_toolchain("/bin/true")
    toolchain.setdefault("sandbox", "/bin/true")
    if backend == "gpu" and "nvcc" not in toolchain:
        pytest.skip("this build has no GPU recipe")
    recipe = build_tools.Recipe.from_toolchain(toolchain, backend)
    sub = tmp_path / "sub"
    src = sub / "student" / "hillis_steele.cu"
    src.parent.mkdir(parents=True)
    src.write_text("// x\n")
    obj_dir = tmp_path / "obj"
    obj_dir.mkdir()
    obj = obj_dir / "hillis_steele.o"
    commands = [(c, [src.parent, src.parent], [obj_dir]) for c in recipe.compile_steps(src, obj, Path("student"))]
    commands += [(recipe.link_command([obj], obj_dir / "worker"), [], [obj_dir]),
                 ([recipe.nm, "-p", str(obj)], [obj_dir], []), ([recipe.objdump, "-dr", str(obj)], [obj_dir], [])]
    private = [REPO / "reference", REPO / "testcases" / "hidden.example.json", REPO / "grading" / "gallery",
               Path("/autograder/source/hidden/secret.txt"), Path("/grade/serverFilesCourse/scangrade/secret.txt")]
    for cmd, read_only, writable in commands:
        argv = recipe.confine.wrap(cmd, sub, read_only, writable, 60)
        assert argv[:1] == [toolchain["sandbox"]], argv
        binds = [Path(argv[i + 1]) for i, a in enumerate(argv[:argv.index("--")]) if a in ("--ro", "--rw")]
        assert binds
        for bound in binds:
            for p in private:
                assert not (bound == p or p.is_relative_to(bound) or bound.is_relative_to(p)), (bound, p, cmd)
            assert "reference" not in bound.name, (bound, cmd)    # scangrade_worker_reference, libscangrade_reference.a
            assert bound not in (REPO, REPO / "build", REPO / "testcases", Path("/"), Path("/autograder"),
                                 Path("/grade")), (bound, cmd)


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop needs root")
@pytest.mark.skipif(not REAL_TOOLCHAIN.is_file(), reason="no built scangrade_sandbox")
def test_the_sandbox_without_bubblewrap_reads_no_private_file(open_dir):
    """The container case for real: scangrade_sandbox kept from bubblewrap (--bwrap names nothing)
    drops to its uid and runs `cat` on the grader's files after make_private: refused, while a public
    file in the same tree is read (its own uid, TEST_UID: the sandbox ends a run by killing its uid's
    processes when it has neither namespaces nor a cgroup)."""
    launcher = json.loads(REAL_TOOLCHAIN.read_text())["sandbox"]
    hidden = open_dir / "source" / "hidden"
    hidden.mkdir(parents=True)
    (hidden / "secret.txt").write_text(SECRET)
    public = open_dir / "source" / "public.json"
    public.write_text("{}")
    for p in (open_dir / "source", hidden):
        os.chmod(p, 0o755)
    for p in (hidden / "secret.txt", public):
        os.chmod(p, 0o644)
    common.make_private([hidden, hidden / "secret.txt"])

    def cat(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run([launcher, "--sandbox", "auto", "--bwrap", str(open_dir / "no-bwrap"), "--uid", str(TEST_UID),
                               "--timeout-s", "20", "--", "/bin/cat", str(path)], capture_output=True, text=True, timeout=60)

    read = cat(public)
    assert read.returncode == 0 and read.stdout.strip() == "{}", read.stdout + read.stderr
    refused = cat(hidden / "secret.txt")
    assert refused.returncode != 0 and "Permission denied" in refused.stdout + refused.stderr
    assert SECRET not in refused.stdout + refused.stderr
