"""grade.py end to end with the fake compiler and a FAKE judge (a script that records its arguments,
writes a schema-valid results.json and exits 1): exporters and table run, the exit code is mirrored."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile

import pytest

from conftest import GRADING, REPO, assert_valid, make_submission
import fixtures
from scangrade.vocab import SLOTS

GRADE = GRADING / "grade.py"


def grade(*args, env_extra=None, tmp_path=None):
    import os
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, str(GRADE), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture
def judge_env(tmp_path):
    doc = fixtures.document("mixed")
    assert_valid(doc, "results")
    src = tmp_path / "fake_results.json"
    src.write_text(json.dumps(doc))
    record = tmp_path / "judge_record.json"
    return {"FAKE_RESULTS": str(src), "FAKE_RECORD": str(record), "FAKE_EXIT": "1"}, record


def test_end_to_end_with_a_fake_judge(tmp_path, fake_build_dir, judge_env):
    env, record = judge_env
    files = {f"hw/student/{s}.cu": "// ok\n" for s in SLOTS}
    files["hw/student/blelloch.cu"] = "SYNTAX_ERROR\n"
    sub = tmp_path / "alice.zip"
    with zipfile.ZipFile(sub, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    out = tmp_path / "out"
    r = grade(sub, "--out", out, "--build-dir", fake_build_dir, "--backend", "emulate",
              "--hidden-suite", REPO / "testcases" / "hidden.example.json", "--secret", "hunter2",
              "--budget-s", "60", env_extra=env)
    assert r.returncode == 1, r.stdout + r.stderr        # mirrors the judge's exit status

    seen = json.loads(record.read_text())
    argv = seen["argv"]
    opt = lambda name: argv[argv.index(name) + 1]  # noqa: E731
    assert opt("--worker") == str(out / "worker")
    assert opt("--backend") == "emulate"
    assert opt("--submission-name") == "alice"
    assert opt("--submission-path") == str(sub)
    assert opt("--build-json") == str(out / "build.json")
    assert opt("--suite") == str(REPO / "testcases" / "public.json")
    assert opt("--hidden-suite").endswith("hidden.example.json")
    assert opt("--budget-s") == "60"
    assert "hunter2" not in argv and seen["secret"] == "hunter2"
    assert seen["build"]["failed_slots"] == ["blelloch"]

    results = json.loads((out / "results.json").read_text())
    assert_valid(results, "results")
    assert_valid(json.loads((out / "gradescope.json").read_text()), "gradescope")
    assert_valid(json.loads((out / "prairielearn.json").read_text()), "prairielearn")
    assert "scores" in json.loads((out / "autolab.txt").read_text().splitlines()[-1])
    assert int(ET.parse(out / "junit.xml").getroot().get("tests")) == len(results["cases"])

    assert "slot" in r.stdout and "× CUB" in r.stdout
    assert str(out / "results.json") in r.stdout
    assert "\033[" not in r.stdout
    assert "build: compile_error, failed: blelloch" in r.stderr


def test_layout_error_still_goes_to_the_judge(tmp_path, fake_build_dir, judge_env):
    env, record = judge_env
    sub = make_submission(tmp_path / "bob", {"hillis_steele.cu": "// at the top\n"})
    out = tmp_path / "out"
    r = grade(sub, "--out", out, "--build-dir", fake_build_dir, "--backend", "gpu", "--formats", "none",
              env_extra=env)
    assert r.returncode == 1, r.stderr
    argv = json.loads(record.read_text())["argv"]
    assert "--worker" not in argv
    build = json.loads((out / "build.json").read_text())
    assert build["status"] == "layout_error"
    assert build["log"] == "found hillis_steele.cu at the top level: put your files in student/"
    assert not (out / "gradescope.json").exists()


def test_exit_code_is_mirrored(tmp_path, fake_build_dir, judge_env):
    env, _ = judge_env
    sub = make_submission(tmp_path / "carol", {f"student/{s}.cu": "// ok\n" for s in SLOTS})
    doc = fixtures.document("all_pass_gpu")
    (tmp_path / "pass.json").write_text(json.dumps(doc))
    env = dict(env, FAKE_RESULTS=str(tmp_path / "pass.json"), FAKE_EXIT="0")
    r = grade(sub, "--out", tmp_path / "o", "--build-dir", fake_build_dir, "--backend", "gpu", "--quiet",
              "--formats", "gradescope,junit", "--print-autolab", env_extra=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""                                   # --quiet
    assert sorted(p.name for p in (tmp_path / "o").iterdir() if p.suffix in (".json", ".xml", ".txt")) == \
        ["autolab.txt", "build.json", "gradescope.json", "junit.xml", "results.json"]
    assert "scores" in json.loads(r.stdout.splitlines()[-1]), "Autolab reads stdout's last line"


def test_judge_without_results_is_an_internal_error(tmp_path, fake_build_dir, judge_env):
    env, _ = judge_env
    sub = make_submission(tmp_path / "dave", {f"student/{s}.cu": "// ok\n" for s in SLOTS})
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("{\"stale\": true}")     # a previous run's results must not survive
    env = dict(env, FAKE_RESULTS="", FAKE_EXIT="3")
    r = grade(sub, "--out", out, "--build-dir", fake_build_dir, "--backend", "gpu", env_extra=env)
    assert r.returncode == 3
    assert "wrote no results.json" in r.stderr
    assert not (out / "results.json").exists()
    env["FAKE_EXIT"] = "2"
    r = grade(sub, "--out", out, "--build-dir", fake_build_dir, "--backend", "gpu", env_extra=env)
    assert r.returncode == 2


def test_invalid_results_is_an_internal_error(tmp_path, fake_build_dir, judge_env):
    env, _ = judge_env
    bad = fixtures.document("mixed")
    del bad["score"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    sub = make_submission(tmp_path / "erin", {f"student/{s}.cu": "// ok\n" for s in SLOTS})
    r = grade(sub, "--out", tmp_path / "o", "--build-dir", fake_build_dir, "--backend", "gpu",
              env_extra=dict(env, FAKE_RESULTS=str(tmp_path / "bad.json")))
    assert r.returncode == 3 and "unusable results.json" in r.stderr


def test_missing_toolchain_says_run_make(tmp_path):
    sub = make_submission(tmp_path / "s", {"student/blelloch.cu": "//\n"})
    r = grade(sub, "--build-dir", tmp_path / "nobuild", "--out", tmp_path / "o")
    assert r.returncode == 3 and "run `make` first" in r.stderr


def test_missing_judge_says_run_make(tmp_path, fake_build_dir):
    tc = fake_build_dir / "grading" / "toolchain.json"
    doc = json.loads(tc.read_text())
    doc["judge"] = str(tmp_path / "not_built" / "scangrade_judge")
    tc.write_text(json.dumps(doc))
    sub = make_submission(tmp_path / "s", {"student/blelloch.cu": "//\n"})
    r = grade(sub, "--build-dir", fake_build_dir, "--out", tmp_path / "o")
    assert r.returncode == 3 and "run `make` first" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--hidden-suite", "testcases/hidden.example.json"], "--hidden-suite needs --secret"),
    (["--secret", "x", "--secret-file", "y"], "not allowed with argument"),
    (["--formats", "moodle"], "unknown format 'moodle'"),
    (["--backend", "tpu"], "invalid choice"),
])
def test_usage_errors(tmp_path, args, message):
    r = grade(tmp_path, *args)
    assert r.returncode == 2 and message in r.stderr


def test_missing_suite_is_bad_input(tmp_path, fake_build_dir):
    sub = make_submission(tmp_path / "s", {"student/blelloch.cu": "//\n"})
    r = grade(sub, "--suite", tmp_path / "nope.json", "--build-dir", fake_build_dir)
    assert r.returncode == 2 and "suite" in r.stderr


def test_help():
    r = grade("--help")
    assert r.returncode == 0 and "Exit status" in r.stdout and "--hidden-suite" in r.stdout


# --- with the real judge (needs `make`: build/grading/toolchain.json, or SCANGRADE_BUILD_DIR) --------

from conftest import REAL_BUILD, REAL_TOOLCHAIN  # noqa: E402
from scangrade.grade import detect_backend  # noqa: E402

needs_real_build = pytest.mark.skipif(not REAL_TOOLCHAIN.is_file(),
                                      reason=f"{REAL_TOOLCHAIN} not found: the grader is not built (run `make`)")


@needs_real_build
def test_real_judge_grades_a_layout_error(tmp_path):
    sub = make_submission(tmp_path / "flat", {"hillis_steele.cu": "// at the top\n"})
    out = tmp_path / "out"
    backend = "gpu" if "nvcc" in json.loads(REAL_TOOLCHAIN.read_text()) else "emulate"   # SCANGRADE_CUDA=OFF
    r = grade(sub, "--out", out, "--build-dir", REAL_BUILD, "--backend", backend)
    assert r.returncode == 1, r.stdout + r.stderr
    results = json.loads((out / "results.json").read_text())
    assert_valid(results, "results")
    assert results["build"]["status"] == "layout_error"
    assert {c["status"] for c in results["cases"]} == {"compile_error"}
    assert_valid(json.loads((out / "gradescope.json").read_text()), "gradescope")
    pl = json.loads((out / "prairielearn.json").read_text())
    assert_valid(pl, "prairielearn")
    assert pl["gradable"] is False
    assert "put your files in student/" in r.stdout


@needs_real_build
@pytest.mark.skipif(detect_backend() != "gpu", reason="no GPU listed by nvidia-smi -L: the worker cannot run kernels")
def test_real_judge_on_the_gpu(tmp_path):
    files = {f"student/{p.name}": p.read_text()
             for p in (REPO / "grading" / "gallery" / "correct_brent_kung" / "student").glob("*")}
    files["student/blelloch.cu"] = files["student/blelloch.cu"].replace("namespace", "namespace {{ oops", 1)
    sub = make_submission(tmp_path / "kb", files)
    out = tmp_path / "out"
    r = grade(sub, "--out", out, "--build-dir", REAL_BUILD, "--backend", "gpu", "--budget-s", "400")
    assert r.returncode == 1, r.stdout + r.stderr
    results = json.loads((out / "results.json").read_text())
    assert_valid(results, "results")
    assert results["build"]["failed_slots"] == ["blelloch"]
    slots = results["slots"]
    assert slots["blelloch"]["statuses"] == {"compile_error": slots["blelloch"]["cases"]}
    for slot in ("hillis_steele", "hierarchical", "single_pass"):
        assert slots[slot]["passed"] == slots[slot]["cases"], (slot, slots[slot]["statuses"])
    for fmt in ("gradescope", "prairielearn"):
        assert_valid(json.loads((out / f"{fmt}.json").read_text()), fmt)
    print(r.stdout)
