"""The PrairieLearn external-grader image, built and run the way grading/platforms/README.md ("Building
and running the images without a registry") says: a Debian bookworm base made with debootstrap and
imported into podman (cached under a tag named by its recipe's hash, so a machine makes it once), the
image built with `podman build --isolation=chroot` from a clean copy of this tree (git's tracked and
untracked-but-not-ignored files: no build folder), and one job in PrairieLearn's layout (/grade/student
holding a gallery entry's files, /grade/tests/scangrade.json, /grade/data/data.json) run with
`podman --runtime runc run --network=none`: /grade/results/results.json must give the entry's full
score and match PrairieLearn's schema.

Its own ctest entry (python/container-images) runs it; python/grading skips it
(SCANGRADE_CONTAINER_TESTS=0). It skips when this machine cannot: not root, podman, runc or
debootstrap missing (tools/deps.sh installs them as root), or Debian's mirror out of reach (the base
and the image's apt-get need it). Every step has a time limit (STEP_TIMEOUT_S).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import GRADING, REPO, assert_valid

SBIN = os.pathsep.join(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
MIRROR = os.environ.get("SCANGRADE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "bookworm"
# the base's recipe: a change makes another tag (a new base); `podman rmi` the old one to save space
BASE_RECIPE = f"debootstrap --variant=minbase {SUITE} {MIRROR}"
BASE = "localhost/scangrade-test-base:" + hashlib.sha256(BASE_RECIPE.encode()).hexdigest()[:16]
IMAGE = "localhost/scangrade-pl:container-test"
ENTRY = "correct_kogge_stone"
MAX_N = 70000      # the cases up to 70,000 elements (142 of them): minutes less than the emulation cap
# seconds per step, about 8 times what they took on a 2-core machine like CI's (debootstrap 24-78 s,
# import 3 s, image 107-111 s without a layer cache, job 3 s); together less than ctest's TIMEOUT (1800)
STEP_TIMEOUT_S = {"debootstrap": 600, "import": 120, "build": 900, "run": 300}


def which(program: str) -> str | None:
    return shutil.which(program, path=os.environ.get("PATH", "") + os.pathsep + SBIN)


def why_not() -> str | None:
    if os.environ.get("SCANGRADE_CONTAINER_TESTS") == "0":
        return "run by its own ctest entry, python/container-images"
    if os.geteuid() != 0:
        return "builds and runs images with rootful podman: needs root"
    missing = [p for p in ("podman", "runc", "debootstrap") if not which(p)]
    if missing:
        return f"needs {', '.join(missing)} (apt-get install -y podman runc debootstrap; tools/deps.sh does as root)"
    try:
        urllib.request.urlopen(f"{MIRROR}/dists/{SUITE}/Release", timeout=20).close()
    except OSError as exc:
        return f"Debian's mirror {MIRROR} is out of reach ({exc}): the base and the image's apt-get need it"
    return None


def run(cmd: list[str], step: str, **kw) -> subprocess.CompletedProcess:
    """One step, its time limit, its output's end in the assertion when it fails."""
    t0 = time.monotonic()
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + os.pathsep + SBIN)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S[step], env=env, **kw)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{step}: over {STEP_TIMEOUT_S[step]} s: {' '.join(cmd)}\n{(exc.stdout or '')[-3000:]}")
    print(f"{step}: {time.monotonic() - t0:.0f} s (exit {r.returncode})")
    assert r.returncode == 0, f"{step}: {' '.join(cmd)} exited {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


def source_files() -> list[str]:
    """What `git archive` of the working tree would hold: tracked and untracked-but-not-ignored files."""
    r = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        pytest.skip("needs a git checkout (a clean context is the tree's tracked files)")
    return sorted(f for f in r.stdout.decode().split("\0") if f and (REPO / f).is_file())


def ensure_base(tmp_path: Path) -> None:
    if subprocess.run(["podman", "image", "exists", BASE], timeout=60).returncode == 0:
        print(f"base: {BASE} cached")
        return
    rootfs = tmp_path / "rootfs"
    run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), MIRROR], "debootstrap")
    with subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE) as tar:
        run(["podman", "import", "-", BASE], "import", stdin=tar.stdout)
    shutil.rmtree(rootfs, ignore_errors=True)


def test_prairielearn_image_grades_a_gallery_entry(tmp_path):
    reason = why_not()
    if reason:
        pytest.skip(reason)
    ensure_base(tmp_path)

    ctx = tmp_path / "ctx"
    for f in source_files():
        (ctx / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, ctx / f, follow_symlinks=False)
    r = run(["podman", "build", "--isolation=chroot", "--build-arg", f"BASE={BASE}",
             "-f", "grading/platforms/prairielearn/Dockerfile", "-t", IMAGE, "."], "build", cwd=ctx)
    print("\n".join(r.stdout.strip().splitlines()[-3:]))

    grade = tmp_path / "job" / "grade"
    for sub in ("student", "tests", "data", "results"):
        (grade / sub).mkdir(parents=True)
    for f in (GRADING / "gallery" / ENTRY / "student").iterdir():
        shutil.copy(f, grade / "student" / f.name)
    (grade / "tests" / "scangrade.json").write_text(json.dumps({"max_n": MAX_N}))
    (grade / "data" / "data.json").write_text(json.dumps({"params": {}, "submitted_answers": {}}))
    run(["podman", "--runtime", "runc", "run", "--rm", "--network=none", "--ulimit", "nofile=1024:1024",
         "--ulimit", "nproc=4096:4096", "-v", f"{grade}:/grade", IMAGE], "run")

    doc = json.loads((grade / "results" / "results.json").read_text())
    assert_valid(doc, "prairielearn")
    assert doc["gradable"] is True and doc["score"] == 1.0, json.dumps(doc)[:2000]
    assert doc["tests"] and all(t["points"] == t["max_points"] for t in doc["tests"])
    assert sum(t["max_points"] for t in doc["tests"]) == 142
