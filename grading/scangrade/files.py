"""File and host helpers every part of the grader shares: one way to write a file atomically, to hash
a file, to read the head of a file without following a link, and to list the GPUs.

write_atomic gives every file the same mode, the one open() would give it (0666 less the umask): a
gradebook or a results.json is as private as the instructor's umask makes their other files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK        # what open() gives a new file under this process's umask
NVIDIA_SMI_TIMEOUT_S = 20


def write_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8, newlines as given) via a temporary file in the same folder and a rename:
    readers never see half a file. The folder is made when missing; the mode is FILE_MODE."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(tmp, FILE_MODE)     # mkstemp makes 0600: give it the mode open() would
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sha256_file(path: Path) -> str:
    """The sha256 (hex) of a file's bytes, read in 1 MiB pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_head(path: Path, limit: int) -> str | None:
    """At most `limit` bytes from the start of a file, decoded as UTF-8 (bad bytes replaced), opened
    without following a link; None when it cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def nvidia_smi_gpus() -> list[str] | None:
    """The indices ("0", "1", ...) of the GPUs `nvidia-smi -L` lists; None when nvidia-smi is missing,
    cannot run or fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return [str(i) for i, _ in enumerate(l for l in r.stdout.splitlines() if l.startswith("GPU "))]


def visible_gpus() -> list[str]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES's entries, else nvidia-smi -L's indices."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        return [g.strip() for g in visible.split(",") if g.strip()]
    return nvidia_smi_gpus() or []
