"""The batch's case cache (the judge's --case-cache): one folder per batch, 0700, handed to every
judge, removed at the end (also when the batch is interrupted); grade.py passes it only when asked.
Fake compiler and a fake judge that records what it was given."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import GRADING, TESTS, write_script
from scangrade import batch_seats as batchmod
from scangrade.vocab import SLOTS

# Appends one JSON line per run to $FAKE_LOG: its name, --case-cache and what that folder looked
# like; writes a file into the folder (as a judge storing a case would); sleeps $FAKE_SLEEP.
FAKE_JUDGE = r'''
import json, os, sys, time
from pathlib import Path
import fixtures
args = sys.argv[1:]
def opt(name):
    return args[args.index(name) + 1] if name in args else None
name, cache = opt("--submission-name"), opt("--case-cache")
seen = {"name": name, "cache": cache}
if cache:
    st = os.stat(cache)
    seen.update(mode=st.st_mode & 0o7777, uid=st.st_uid)
    (Path(cache) / f"{name}.case").write_text("data")
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(seen) + "\n")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
build = json.loads(Path(opt("--build-json")).read_text())
cases = [fixtures.make_case(s, 100, "int32", "pass", backend=opt("--backend")) for s in fixtures.SLOTS]
doc = fixtures.make_results(cases, backend=opt("--backend"), build=build, name=name)
doc["submission"]["path"] = opt("--submission-path")
Path(opt("--out")).write_text(json.dumps(doc))
sys.exit(doc["exit_code"])
'''

GOOD = {f"student/{s}.cu": f"// {s}\n" for s in SLOTS}


@pytest.fixture
def fake(tmp_path, fake_build_dir):
    judge = write_script(tmp_path / "tools" / "fake_cache_judge", FAKE_JUDGE)
    tc_path = fake_build_dir / "grading" / "toolchain.json"
    tc = json.loads(tc_path.read_text())
    tc["judge"] = str(judge)
    tc_path.write_text(json.dumps(tc))
    log = tmp_path / "judges.jsonl"
    env = dict(os.environ, PYTHONPATH=str(TESTS), FAKE_LOG=str(log))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return {"build": fake_build_dir, "env": env, "log": log}


def submissions(root: Path, names: list[str]) -> Path:
    for name in names:
        for rel, text in GOOD.items():
            p = root / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    return root


def batch_command(subs: Path, out: Path, fake: dict, *extra: str) -> list[str]:
    return [sys.executable, str(GRADING / "batch.py"), str(subs), "--out", str(out), "--build-dir",
            str(fake["build"]), "--backend", "emulate", "--jobs", "2", "--formats", "none", *extra]


def judges_seen(log: Path) -> list[dict]:
    """What each judge was given (the preflight run, with no worker, left out)."""
    runs = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
    return [r for r in runs if r["name"] != "preflight"]


def test_every_judge_gets_one_private_folder_that_is_removed(tmp_path, fake):
    subs = submissions(tmp_path / "subs", ["ann", "bob", "cyd"])
    r = subprocess.run(batch_command(subs, tmp_path / "out", fake), capture_output=True, text=True, timeout=120,
                       env=fake["env"])
    assert r.returncode == 0, r.stderr
    seen = judges_seen(fake["log"])
    assert sorted(s["name"] for s in seen) == ["ann", "bob", "cyd"]
    folders = {s["cache"] for s in seen}
    assert len(folders) == 1 and None not in folders       # one folder for the whole batch
    folder = Path(folders.pop())
    assert all(s["mode"] == 0o700 and s["uid"] == os.getuid() for s in seen)
    shm = batchmod.SHM
    need = batchmod.case_data_bytes([GRADING.parent / "testcases" / "public.json"], batchmod.EMULATION_MAX_N)
    if os.access(shm, os.W_OK) and need + batchmod.SHM_KEEP_FREE <= os.statvfs(shm).f_bavail * os.statvfs(shm).f_frsize:
        assert folder.parent == shm and folder.name.startswith("scangrade-cases-")
    assert not folder.exists()                              # removed at the end, with what the judges wrote


def test_an_interrupted_batch_removes_the_folder(tmp_path, fake):
    subs = submissions(tmp_path / "subs", ["slow"])
    env = dict(fake["env"], FAKE_SLEEP="3")
    p = subprocess.Popen(batch_command(subs, tmp_path / "out", fake), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not judges_seen(fake["log"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        seen = judges_seen(fake["log"])
        assert seen, "the judge never started"
        folder = Path(seen[0]["cache"])
        assert folder.is_dir()
        p.send_signal(signal.SIGINT)                        # Ctrl-C while the judge runs
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0
    assert not folder.exists()


def test_no_folder_with_sandbox_off(tmp_path, fake):
    subs = submissions(tmp_path / "subs", ["ann"])
    r = subprocess.run(batch_command(subs, tmp_path / "out", fake, "--sandbox", "off"), capture_output=True,
                       text=True, timeout=120, env=fake["env"])
    assert r.returncode == 0, r.stderr
    assert [s["cache"] for s in judges_seen(fake["log"])] == [None]


def test_grade_py_passes_a_folder_only_when_asked(tmp_path, fake):
    sub = submissions(tmp_path / "subs", ["ann"]) / "ann"
    grade = [sys.executable, str(GRADING / "grade.py"), str(sub), "--build-dir", str(fake["build"]),
             "--backend", "emulate", "--formats", "none", "--quiet"]
    r = subprocess.run([*grade, "--out", str(tmp_path / "o1")], capture_output=True, text=True, timeout=120,
                       env=fake["env"])
    assert r.returncode == 0, r.stderr
    cache = tmp_path / "keep" / "cases"
    r = subprocess.run([*grade, "--out", str(tmp_path / "o2"), "--case-cache", str(cache)], capture_output=True,
                       text=True, timeout=120, env=fake["env"])
    assert r.returncode == 0, r.stderr
    assert [s["cache"] for s in judges_seen(fake["log"])] == [None, str(cache)]
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700 and (cache / "ann.case").is_file()   # kept


def test_room_and_stale_folders(tmp_path, monkeypatch):
    suite = tmp_path / "s.json"
    suite.write_text(json.dumps({"cases": [{"n": 1000}, {"n": 1 << 26}, {"n": "bad"}]}))
    assert batchmod.case_data_bytes([suite], None) == 2 * 64 + 12 * (1000 + (1 << 26))
    assert batchmod.case_data_bytes([suite, tmp_path / "missing.json"], 5000) == 64 + 12 * 1000
    shm, private = tmp_path / "shm", tmp_path / "private"
    shm.mkdir()
    private.mkdir()
    # a folder of a batch that is gone is swept; a live one's (ours) is kept
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale, live = shm / f"scangrade-cases-{gone.pid}-abc", shm / f"scangrade-cases-{os.getpid()}-def"
    stale.mkdir()
    live.mkdir()
    monkeypatch.setattr(batchmod, "SHM_KEEP_FREE", 0)
    folder = batchmod.make_case_cache(private, 1000, shm)
    assert folder.parent == shm and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not stale.exists() and live.exists()
    # no room: the batch's private folder
    folder = batchmod.make_case_cache(private, 1 << 62, shm)
    assert folder == private / "cases" and stat.S_IMODE(folder.stat().st_mode) == 0o700
