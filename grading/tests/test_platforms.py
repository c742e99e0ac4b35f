"""The platform packaging (grading/platforms/): Gradescope's run_autograder and bundle, PrairieLearn's
entrypoint and image install, GitHub Actions' summary and workflow.

Each entrypoint runs against a fake platform root in tmp_path (AUTOGRADER_ROOT, GRADE_ROOT) laid out
the way the platform lays it out: with the real build when SCANGRADE_BUILD_DIR (or build/) holds one,
and with a fake grade.py for the failure paths. Every results file is validated against
grading/schemas/{gradescope,prairielearn}.schema.json.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import GRADING, REAL_BUILD, REAL_TOOLCHAIN, REPO, assert_valid, write_script
import fixtures

PLATFORMS = GRADING / "platforms"
GS = PLATFORMS / "gradescope"
PL = PLATFORMS / "prairielearn"
SUMMARY = PLATFORMS / "github" / "summary.py"
GALLERY = GRADING / "gallery"
from scangrade.platforms import common

needs_build = pytest.mark.skipif(
    not REAL_TOOLCHAIN.is_file() or "emulate" not in json.loads(REAL_TOOLCHAIN.read_text()),
    reason=f"no built grader with the emulation backend at {REAL_BUILD} (set SCANGRADE_BUILD_DIR)")
MAX_N = "65536"     # real-build runs: small cases only, to keep the suite quick


def gallery_files(entry: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((GALLERY / entry / "student").iterdir())}


def put(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


# A fake grade.py: records its argv; FAKE_MODE picks what it does.
FAKE_GRADE = r'''
import json, os, sys, time
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--out") + 1])
Path(os.environ["FAKE_RECORD"]).write_text(json.dumps(args))
mode = os.environ.get("FAKE_MODE", "crash")
if mode == "crash":
    raise RuntimeError("boom")
if mode == "bad_input":
    print("grade: error: bad.json: cases[0] (id 'x1'): field 'n': 1025 is above the limit", file=sys.stderr)
    sys.exit(2)
if mode == "hang":
    time.sleep(600)
if mode == "garbage":
    out.mkdir(parents=True, exist_ok=True)
    for name in ("gradescope.json", "prairielearn.json"):
        (out / name).write_text("{not json")
    sys.exit(1)
if mode == "forged_then_killed":   # what a student's process did before the sandbox: full marks, then kill the grader
    out.mkdir(parents=True, exist_ok=True)
    (out / "gradescope.json").write_text(json.dumps({"score": 100, "output": "all tests passed"}))
    (out / "prairielearn.json").write_text(json.dumps({"gradable": True, "score": 1.0}))
    sys.exit(3)
if mode == "huge":
    out.mkdir(parents=True, exist_ok=True)
    tests = [{"name": f"t{i}", "points": 0, "max_points": 1, "message": "x" * 5000, "output": "y" * 5000}
             for i in range(400)]
    (out / "prairielearn.json").write_text(json.dumps({"gradable": True, "score": 0.0, "tests": tests}))
    sys.exit(1)
sys.exit(int(mode))
'''


@pytest.fixture
def fake_grade(tmp_path, monkeypatch):
    script = write_script(tmp_path / "fake_grade.py", FAKE_GRADE)
    monkeypatch.setenv("SCANGRADE_GRADE_PY", str(script))
    monkeypatch.setenv("FAKE_RECORD", str(tmp_path / "argv.json"))
    return tmp_path / "argv.json"


# --- Gradescope ---------------------------------------------------------------------------------------

def gs_root(tmp_path: Path, files: dict[str, bytes], config: dict | None = None, bundle: Path | None = None) -> Path:
    """/autograder: submission/ with the upload, source/ = the bundle (a link to this tree's grading/
    unless an unpacked bundle is given), submission_metadata.json."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    put(root / "submission", files)
    if bundle is not None:
        (root / "source").symlink_to(bundle)
    else:
        (root / "source").mkdir()
        (root / "source" / "grading").symlink_to(GRADING)
        if config is not None:
            (root / "source" / "scangrade-bundle.json").write_text(json.dumps(config))
    (root / "submission_metadata.json").write_text(json.dumps({"id": 123456, "users": [{"name": "Ada"}]}))
    return root


def run_gs(root: Path, env: dict | None = None, script: Path | None = None) -> dict:
    script = script or (root / "source" / "run_autograder"
                        if (root / "source" / "run_autograder").exists() else GS / "run_autograder")
    full_env = {**os.environ, "AUTOGRADER_ROOT": str(root), **(env or {})}
    r = subprocess.run([str(script)], env=full_env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((root / "results" / "results.json").read_text())
    assert_valid(doc, "gradescope")
    return doc


@needs_build
def test_gradescope_top_level_files_all_pass(tmp_path):
    root = gs_root(tmp_path, gallery_files("correct_three_phase"), config={"max_n": int(MAX_N)})
    doc = run_gs(root, {"SCANGRADE_BUILD_DIR": str(REAL_BUILD)})
    assert doc["tests"] and all(t["status"] == "passed" for t in doc["tests"])
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) > 0
    assert "graded them as student/" in doc["output"]
    assert "emulation" in doc["output"]


@needs_build
def test_gradescope_repository_upload_with_compile_error(tmp_path):
    """A GitHub-style upload (the whole repository): only student/ is graded; a slot that does not
    compile costs its points, the others are graded."""
    files = {f"student/{k}": v for k, v in gallery_files("wrong_does_not_compile").items()}
    files.update({"README.md": b"# my repo\n", "notes/todo.txt": b"x\n", "extra.zip": b"PK"})
    root = gs_root(tmp_path, files, config={"max_n": int(MAX_N)})
    doc = run_gs(root, {"SCANGRADE_BUILD_DIR": str(REAL_BUILD)})
    failed = {t["tags"][0] for t in doc["tests"] if t["status"] == "failed"}
    assert "blelloch" in failed
    assert any("did not compile" in t["output"] for t in doc["tests"])
    assert "graded student/ only" in doc["output"]


@needs_build
def test_gradescope_layout_error_is_a_result(tmp_path):
    root = gs_root(tmp_path, {"notes.txt": b"I forgot my code\n"}, config={"max_n": int(MAX_N)})
    doc = run_gs(root, {"SCANGRADE_BUILD_DIR": str(REAL_BUILD)})
    assert doc["score"] == 0
    assert "could not read the submission" in doc["output"]


@pytest.mark.parametrize("mode, expect", [
    ("crash", "internal error, exit status 1"),
    ("3", "internal error, exit status 3"),
    ("bad_input", "misconfigured"),
    ("garbage", "internal error, exit status 1"),
])
def test_gradescope_grade_failures_still_write_score_zero(tmp_path, fake_grade, monkeypatch, mode, expect):
    monkeypatch.setenv("FAKE_MODE", mode)
    root = gs_root(tmp_path, gallery_files("correct_three_phase"), config={})
    doc = run_gs(root)
    assert doc["score"] == 0
    assert expect in doc["output"]
    assert "not your fault" in doc["output"]
    if mode == "bad_input":
        assert "field 'n'" in doc["output"]           # the reason, for whoever reads it


def test_gradescope_never_publishes_an_export_of_a_run_that_did_not_end_graded(tmp_path, fake_grade, monkeypatch):
    """Exit 3 (or any status but 0 and 1): whatever export is on disk is not the grader's word."""
    monkeypatch.setenv("FAKE_MODE", "forged_then_killed")
    doc = run_gs(gs_root(tmp_path, gallery_files("correct_three_phase"), config={}))
    assert doc["score"] == 0 and "not your fault" in doc["output"]


def test_gradescope_grade_py_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("SCANGRADE_GRADE_PY", str(tmp_path / "nowhere" / "grade.py"))
    doc = run_gs(gs_root(tmp_path, {"hillis_steele.cu": b"x"}, config={}))
    assert doc["score"] == 0 and "could not start" in doc["output"]


def test_gradescope_timeout(tmp_path, fake_grade, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    doc = run_gs(gs_root(tmp_path, {"hillis_steele.cu": b"x"}, config={"timeout_s": 2}))
    assert doc["score"] == 0 and "did not finish" in doc["output"]


def test_gradescope_passes_bundle_settings(tmp_path, fake_grade, monkeypatch):
    """Hidden suites and the secret come from the bundle's files; the backend is emulate."""
    monkeypatch.setenv("FAKE_MODE", "1")
    config = {"hidden_suites": ["hidden/h.json"], "secret_file": "hidden/secret.txt", "max_n": 99, "budget_s": 60}
    root = gs_root(tmp_path, {"hillis_steele.cu": b"x"}, config=config)
    (root / "source" / "hidden").mkdir()
    (root / "source" / "hidden" / "h.json").write_text("{}")
    (root / "source" / "hidden" / "secret.txt").write_text("s3cret")
    run_gs(root)
    argv = json.loads(fake_grade.read_text())
    assert argv[argv.index("--backend") + 1] == "emulate"
    assert argv[argv.index("--hidden-suite") + 1] == str(root / "source" / "hidden" / "h.json")
    assert argv[argv.index("--secret-file") + 1] == str(root / "source" / "hidden" / "secret.txt")
    assert argv[argv.index("--max-n") + 1] == "99" and argv[argv.index("--budget-s") + 1] == "60"
    assert argv[argv.index("--suite") + 1] == str(REPO / "testcases" / "public.json")
    assert Path(argv[0]).name == "submission-123456"       # named after Gradescope's submission id
    assert "s3cret" not in " ".join(argv)


def test_gradescope_wrapper_writes_result_when_python_cannot_run(tmp_path):
    """run_autograder (bash) alone, with no ScanGrade tree at all: still a valid score-0 result."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    doc = run_gs(root, script=GS / "run_autograder")
    assert doc["score"] == 0 and "failed to start" in doc["output"]


# --- Gradescope bundle --------------------------------------------------------------------------------

def make_bundle(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "bundle" / "scangrade-gradescope.zip"
    r = subprocess.run([sys.executable, str(GS / "make_bundle.py"), "--out", str(out), *extra],
                       capture_output=True, text=True, timeout=120)
    return r, out


def test_bundle_layout_and_contents(tmp_path):
    r, out = make_bundle(tmp_path)
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(out) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        config = json.loads(zf.read("scangrade-bundle.json"))
    for name in ("setup.sh", "run_autograder"):
        assert name in infos, name
        assert (infos[name].external_attr >> 16) & stat.S_IXUSR, f"{name} is not executable"
    names = list(infos)
    for needed in ("CMakeLists.txt", "grading/grade.py", "grading/exporters.py", "testcases/public.json",
                   "harness/include/scangrade/student_api.h", "harness/emulation/rewrite.py",
                   "grading/platforms/gradescope/run_autograder.py", "grading/scangrade/platforms/common.py",
                   "student/hillis_steele.cu"):
        assert needed in names, needed
    forbidden = [n for n in names if n.startswith((".git", "build/", "reference/", "grading/tests/", "grading/gallery/",
                                                   "grading/docs/", "harness/emulation/tests/", "grading/judge/tests/"))
                 or "__pycache__" in n or n.endswith((".pyc", ".o", ".a"))
                 or n.startswith(("hidden/", "grading-results/"))
                 or (n.startswith("testcases/") and n != "testcases/public.json")]
    assert not forbidden, forbidden
    assert config["hidden_suites"] == [] and config["secret_file"] is None
    assert config["suites"] == ["testcases/public.json"]


def test_bundle_with_hidden_suite(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("instructor-secret\n")
    r, out = make_bundle(tmp_path, "--hidden-suite", str(REPO / "testcases" / "hidden.example.json"),
                         "--secret-file", str(secret))
    assert r.returncode == 0, r.stderr
    assert "keep it private" in r.stdout
    with zipfile.ZipFile(out) as zf:
        config = json.loads(zf.read("scangrade-bundle.json"))
        assert zf.read("hidden/secret.txt") == b"instructor-secret\n"
        assert "hidden/hidden.example.json" in zf.namelist()
    assert config["hidden_suites"] == ["hidden/hidden.example.json"]
    assert config["secret_file"] == "hidden/secret.txt"


@pytest.mark.parametrize("args, message", [
    (["--hidden-suite", "testcases/public.json"], "needs --secret-file"),
    (["--secret-file", "testcases/public.json"], "only applies"),
    (["--hidden-suite", "no/such.json", "--secret-file", "testcases/public.json"], "not found"),
])
def test_bundle_usage_errors(tmp_path, args, message):
    r = subprocess.run([sys.executable, str(GS / "make_bundle.py"), "--out", str(tmp_path / "b.zip"), *args],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2 and message in r.stderr
    assert not (tmp_path / "b.zip").exists()


def test_bundle_is_deterministic(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    r1, out1 = make_bundle(tmp_path / "a")
    r2, out2 = make_bundle(tmp_path / "b")
    assert r1.returncode == r2.returncode == 0
    assert out1.read_bytes() == out2.read_bytes()


def test_setup_sh_is_valid_bash():
    r = subprocess.run(["bash", "-n", str(GS / "setup.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = (GS / "setup.sh").read_text()
    assert "-DSCANGRADE_CUDA=OFF" in text and "scangrade_grader" in text


@needs_build
def test_unpacked_bundle_grades_with_hidden_suite(tmp_path):
    """The zip as Gradescope unpacks it into /autograder/source: its own run_autograder, grade.py and
    bundle settings, the hidden suite graded with the secret (the build is this tree's)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("instructor-secret\n")
    r, out = make_bundle(tmp_path, "--hidden-suite", str(REPO / "testcases" / "hidden.example.json"),
                         "--secret-file", str(secret), "--max-n", MAX_N)
    assert r.returncode == 0, r.stderr
    source = tmp_path / "unpacked"
    with zipfile.ZipFile(out) as zf:
        for info in zf.infolist():
            zf.extract(info, source)
            os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
    root = gs_root(tmp_path, gallery_files("correct_kogge_stone"), bundle=source)
    doc = run_gs(root, {"SCANGRADE_BUILD_DIR": str(REAL_BUILD)})
    suites = {t["extra_data"]["suite"] for t in doc["tests"] if "extra_data" in t}
    assert len(suites) == 2, suites                     # public + the hidden suite
    assert all(t["status"] == "passed" for t in doc["tests"])
    assert "instructor-secret" not in json.dumps(doc)


# --- PrairieLearn -----------------------------------------------------------------------------------

def pl_root(tmp_path: Path, files: dict[str, bytes], config: dict | None = None, params: dict | None = None) -> Path:
    root = tmp_path / "grade"
    (root / "student").mkdir(parents=True)
    put(root / "student", files)
    (root / "tests").mkdir()
    (root / "serverFilesCourse").mkdir()
    (root / "data").mkdir()
    if config is not None:
        (root / "tests" / "scangrade.json").write_text(json.dumps(config))
    (root / "data" / "data.json").write_text(json.dumps({"params": params or {}, "correct_answers": {},
                                                         "submitted_answers": {}, "gradable": True}))
    return root


def run_pl(root: Path, env: dict | None = None, script: Path = PL / "entrypoint") -> dict:
    full_env = {**os.environ, "GRADE_ROOT": str(root), **(env or {})}
    r = subprocess.run([str(script)], env=full_env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    path = root / "results" / "results.json"
    assert path.stat().st_size < 1_000_000
    doc = json.loads(path.read_text())
    assert_valid(doc, "prairielearn")
    return doc


@needs_build
def test_prairielearn_one_slot_question(tmp_path):
    files = {k: v for k, v in gallery_files("correct_three_phase").items() if not k.endswith(".cu")}
    files["hillis_steele.cu"] = (GALLERY / "correct_three_phase" / "student" / "hillis_steele.cu").read_bytes()
    root = pl_root(tmp_path, files, config={"max_n": int(MAX_N)}, params={"scangrade": {"slots": ["hillis_steele"]}})
    doc = run_pl(root, {"SCANGRADE_BUILD_DIR": str(REAL_BUILD)})
    assert doc["gradable"] is True and doc["score"] == 1.0
    assert doc["tests"] and all(t["name"].startswith("hillis_steele") for t in doc["tests"])
    assert "missing slot files" not in doc["output"]
    assert "top level of the upload" not in doc["output"]


@needs_build
def test_prairielearn_wrong_file_name_is_not_gradable(tmp_path):
    root = pl_root(tmp_path, {"HillisSteele.cu": b"// wrong name\n"}, config={"max_n": int(MAX_N)})
    doc = run_pl(root, {"SCANGRADE_BUILD_DIR": str(REAL_BUILD)})
    assert doc["gradable"] is False
    assert any("hillis_steele.cu" in e for e in doc["format_errors"])


@needs_build
def test_prairielearn_installed_tree_grades(tmp_path):
    """install.py's tree (the image's /opt/scangrade) grades on its own: no reference, no gallery."""
    dest = tmp_path / "opt" / "scangrade"
    r = subprocess.run([sys.executable, str(PL / "install.py"), "--build", str(REAL_BUILD), "--dest", str(dest)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    files = [p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()]
    assert not [f for f in files if f.startswith(("reference/", "grading/gallery", "grading/tests"))
                or "reference" in Path(f).name or f.endswith((".o", ".cpp"))], files
    toolchain = (dest / "build" / "grading" / "toolchain.json").read_text()
    assert str(REAL_BUILD.resolve()) not in toolchain and str(REPO) not in toolchain
    root = pl_root(tmp_path, gallery_files("correct_warp_shuffle"), config={"max_n": int(MAX_N)})
    doc = run_pl(root, script=dest / "grading" / "platforms" / "prairielearn" / "entrypoint")
    assert doc["gradable"] is True and doc["score"] == 1.0


@pytest.mark.parametrize("mode", ["crash", "3", "bad_input", "garbage", "hang", "forged_then_killed"])
def test_prairielearn_grade_failures_are_not_gradable(tmp_path, fake_grade, monkeypatch, mode):
    monkeypatch.setenv("FAKE_MODE", mode)
    doc = run_pl(pl_root(tmp_path, {"hillis_steele.cu": b"x"}, config={"timeout_s": 2}))
    assert doc["gradable"] is False
    assert "not your fault" in doc["message"]
    if mode == "hang":
        assert "did not finish" in doc["message"]


def test_prairielearn_oversized_export_is_trimmed(tmp_path, fake_grade, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "huge")
    doc = run_pl(pl_root(tmp_path, {"hillis_steele.cu": b"x"}, config={}))
    assert doc["gradable"] is True and len(doc["tests"]) == 400


@pytest.mark.parametrize("config, message", [
    ({"colour": "blue"}, "unknown key 'colour'"),
    ({"suites": ["missing.json"]}, "not found"),
    ({"hidden_suites": ["h.json"]}, "need a secret_file"),
    ({"slots": ["quicksort"]}, "unknown slot"),
])
def test_prairielearn_bad_config_is_not_gradable(tmp_path, fake_grade, config, message):
    doc = run_pl(pl_root(tmp_path, {"hillis_steele.cu": b"x"}, config=config))
    assert doc["gradable"] is False and "misconfigured" in doc["message"]
    assert message in doc["output"]


def test_prairielearn_passes_filtered_suites(tmp_path, fake_grade, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "1")
    root = pl_root(tmp_path, {"blelloch.cu": b"x"}, config={"slots": ["blelloch"], "budget_s": 30})
    run_pl(root)
    argv = json.loads(fake_grade.read_text())
    suite = Path(argv[argv.index("--suite") + 1])
    assert suite.name == "public.json" and suite != REPO / "testcases" / "public.json"
    assert argv[argv.index("--formats") + 1] == "prairielearn"


def test_prairielearn_wrapper_writes_result_when_python_cannot_run(tmp_path):
    lonely = tmp_path / "bin" / "entrypoint"
    lonely.parent.mkdir()
    shutil.copy2(PL / "entrypoint", lonely)          # no entrypoint.py beside it
    doc = run_pl(pl_root(tmp_path, {}), script=lonely)
    assert doc["gradable"] is False and "failed to start" in doc["message"]


def test_dockerfile_uses_the_entrypoint_and_installs_without_reference():
    text = (PL / "Dockerfile").read_text()
    assert "-DSCANGRADE_CUDA=OFF" in text and "install.py" in text
    assert "/opt/scangrade/grading/platforms/prairielearn/entrypoint" in text
    final_stage = text.split("\nFROM ")[-1]
    assert "COPY --from=build /stage/opt/scangrade /opt/scangrade" in final_stage
    assert "reference" not in final_stage.replace("no model solution", "")


# --- staging and suites (common.py) -----------------------------------------------------------------

def test_stage_top_level_files(tmp_path):
    up = tmp_path / "up"
    put(up, {"hillis_steele.cu": b"a", "helpers.cuh": b"b", ".DS_Store": b""})
    staged = common.stage_submission(up, tmp_path / "stage")
    assert sorted(p.name for p in (staged.path / "student").iterdir()) == ["helpers.cuh", "hillis_steele.cu"]
    assert any("top level of the upload" in n for n in staged.notes)       # Gradescope: worth saying
    # PrairieLearn always puts the files there: nothing to tell the student
    staged = common.stage_submission(up, tmp_path / "stage-pl", top_level_note=False)
    assert (staged.path / "student" / "hillis_steele.cu").is_file() and staged.notes == []


def test_stage_top_level_files_beside_a_folder(tmp_path):
    up = tmp_path / "up"
    put(up, {"hillis_steele.cu": b"a", "notes/todo.txt": b"b"})
    staged = common.stage_submission(up, tmp_path / "stage")
    assert [p.name for p in (staged.path / "student").iterdir()] == ["hillis_steele.cu"]
    assert any("ignored the folder(s) notes/" in n for n in staged.notes)


def test_stage_student_folder_and_archive(tmp_path):
    up = tmp_path / "up"
    put(up, {"student/blelloch.cu": b"a", "README.md": b"r"})
    staged = common.stage_submission(up, tmp_path / "s1")
    assert [p.name for p in staged.path.iterdir()] == ["student"]
    up2 = tmp_path / "up2"
    put(up2, {"alice.zip": b"PK"})
    assert common.stage_submission(up2, tmp_path / "s2").path == up2 / "alice.zip"


def test_stage_never_follows_links(tmp_path):
    up = tmp_path / "up"
    put(up, {"hillis_steele.cu": b"a"})
    (tmp_path / "secret.txt").write_text("s3cret")
    (up / "leak.cuh").symlink_to(tmp_path / "secret.txt")
    staged = common.stage_submission(up, tmp_path / "stage")
    assert (staged.path / "student" / "leak.cuh").is_symlink()     # grade.py refuses it


def test_filter_suite_keeps_seeds_and_slot_points():
    doc = json.loads((REPO / "testcases" / "public.json").read_text())
    doc["performance"] = {"points": {"hierarchical": 5, "single_pass": 5}}
    kept = common.filter_suite(doc, ["hierarchical"])
    assert kept and {c["slot"] for c in kept["cases"]} == {"hierarchical"}
    assert kept["performance"]["points"] == {"hierarchical": 5}
    original = {c["id"]: c for c in doc["cases"]}
    assert all(original[c["id"]] == c for c in kept["cases"])
    assert common.filter_suite({"cases": []}, ["blelloch"]) is None


# --- GitHub Actions -----------------------------------------------------------------------------------

def run_summary(tmp_path: Path, doc: dict | None, *args: str, env: dict | None = None):
    results = tmp_path / "results.json"
    if doc is not None:
        results.write_text(json.dumps(doc))
    summary = tmp_path / "summary.md"
    full_env = {k: v for k, v in os.environ.items() if k not in ("SCANGRADE_MIN_SCORE", "GITHUB_STEP_SUMMARY")}
    full_env.update({"GITHUB_STEP_SUMMARY": str(summary), "PYTHONPATH": str(GRADING), **(env or {})})
    r = subprocess.run([sys.executable, str(SUMMARY), str(results), *args], env=full_env,
                       capture_output=True, text=True, timeout=60)
    return r, summary.read_text() if summary.exists() else ""


def test_summary_all_pass(tmp_path, doc_named):
    doc = doc_named("all_pass_gpu")         # every case passes; 1 performance point short
    r, md = run_summary(tmp_path, doc, "--min-score", "0.95")
    assert r.returncode == 0, r.stderr
    assert "| `hierarchical` |" in md and "| **total** |" in md and "passes the required minimum of 95%" in md
    assert "| 4/5 |" in md                   # hierarchical's performance points
    assert "::error" not in r.stdout         # a performance shortfall is not an error on a file
    r_full, _ = run_summary(tmp_path, doc)   # default threshold: 1.0
    assert r_full.returncode == 1


def test_summary_mixed_annotations_and_threshold(tmp_path, doc_named):
    doc = doc_named("mixed")
    r, md = run_summary(tmp_path, doc)
    assert r.returncode == 1
    errors = [l for l in r.stdout.splitlines() if l.startswith("::error")]
    files = {l.split("file=")[1].split(",")[0] for l in errors}
    assert files == {"student/hillis_steele.cu", "student/blelloch.cu", "student/hierarchical.cu",
                     "student/single_pass.cu"}
    assert any("file=student/blelloch.cu,line=11," in l for l in errors)   # the first compile error's line
    assert fixtures.SECRET not in r.stdout and fixtures.SECRET not in md      # hidden cases stay hidden
    assert "(hidden case)" in md
    s = doc["score"]
    frac = s["total"] / s["max_total"]
    r_ok, _ = run_summary(tmp_path, doc, "--min-score", str(frac))            # exactly at the threshold
    assert r_ok.returncode == 0
    r_env, _ = run_summary(tmp_path, doc, env={"SCANGRADE_MIN_SCORE": "0.1"})
    assert r_env.returncode == 0


def test_summary_appends(tmp_path, doc_named):
    (tmp_path / "summary.md").write_text("earlier step\n")
    _, md = run_summary(tmp_path, doc_named("emulated"), "--min-score", "0")
    assert md.startswith("earlier step\n") and "CPU emulation" in md


@pytest.mark.parametrize("name, code", [("not_graded", 3), ("layout_error", 1)])
def test_summary_exit_codes(tmp_path, doc_named, name, code):
    r, md = run_summary(tmp_path, doc_named(name), "--min-score", "0.5")
    assert r.returncode == code
    if name == "not_graded":
        assert "grader failed" in md and "title=ScanGrade internal error" in r.stdout
    else:
        assert "Could not read the submission" in md


@pytest.mark.parametrize("doc, args", [(None, []), ({"schema_version": 7}, []), ("valid", ["--min-score", "1.5"]),
                                       ("valid", ["--min-score", "most"])])
def test_summary_bad_input(tmp_path, doc_named, doc, args):
    r, md = run_summary(tmp_path, doc_named("mixed") if doc == "valid" else doc, *args)
    assert r.returncode == 2
    assert r.stdout.startswith("::error") and "no results" in md


def test_workflow(tmp_path):
    yaml = pytest.importorskip("yaml")
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "grade.yml").read_text())
    triggers = wf.get("on", wf.get(True))          # YAML 1.1 reads a bare `on` as true
    assert "push" in triggers
    job = wf["jobs"]["grade"]
    assert {"self-hosted", "gpu"} <= set(job["runs-on"])
    assert "SCANGRADE_MIN_SCORE" in job["env"]
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/checkout@") for u in uses)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"
    assert "grading-results/student/feedback.html" in upload["with"]["path"].split()   # the page a student reads
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "grading/grade.py student" in runs and "grading/platforms/github/summary.py" in runs
    assert "$GITHUB_STEP_SUMMARY" not in runs or "summary.py" in runs
    for path in ("grading/grade.py", "grading/platforms/github/summary.py"):
        assert (REPO / path).is_file()
    # the platforms' README names only files that exist, and the GPU runner's packages include the sandbox
    doc = (REPO / "grading" / "platforms" / "README.md").read_text()
    for patch in re.findall(r"[\w./-]+\.patch", doc):
        assert (REPO / patch).is_file() or (REPO / "grading" / "platforms" / patch).is_file(), patch
    runner = doc[doc.index("Runner setup:"):]
    assert "bubblewrap" in runner[:runner.index("Register the runner")]
    # the summary step must come before the upload, and the upload must survive its failure
    names = [s.get("name", s.get("uses")) for s in steps]
    assert names.index("Summary and threshold") < names.index(upload.get("name", upload["uses"]))


def test_slot_filtered_suites_are_the_graders_alone(tmp_path):
    """Inside a platform's container the sandbox's uid can traverse the work folder: the slot-filtered
    copies of the (hidden) suites are 0600 in a 0700 folder, and hold only the asked slots' cases."""
    work = tmp_path / "work"
    work.mkdir(mode=0o711)
    kept = common.write_filtered_suites([REPO / "testcases" / "public.json"], ["blelloch"], work / "hidden")
    assert len(kept) == 1
    assert stat.S_IMODE((work / "hidden").stat().st_mode) == 0o700
    assert stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    doc = json.loads(kept[0].read_text())
    assert doc["cases"] and {c["slot"] for c in doc["cases"]} == {"blelloch"}
