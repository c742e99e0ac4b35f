"""Read a ScanGrade submission: a folder, a .zip or a .tar.gz/.tgz that holds student/.

The submission must contain a folder `student/` with the slot files (hillis_steele.cu, blelloch.cu,
hierarchical.cu, single_pass.cu), either at its top level or inside exactly one top-level folder (the
way LMS downloads wrap it). Archives are unpacked into a private temporary folder with every member
checked first: absolute paths, `..`, links that leave the folder, device files and names with control
characters are refused. Limits (vocab.py), each refused as a layout_error that names what and the limit:
MAX_FILES files and folders (archive members included), MAX_BYTES in all (counted on the bytes
written, whatever an archive's headers declare, so a zip bomb stops there), MAX_SOURCE_BYTES for one
student/*.cu or *.cuh, MAX_ARCHIVE_BYTES for the archive file, MAX_NAME_CHARS for a name and
MAX_PATH_CHARS for a path. A zip's entry count is read from its end record before its list is parsed,
and a tar is read as a stream, one member at a time, through a cap on its decompressed bytes: the
grader's memory stays bounded whatever the archive declares.

A folder whose path holds a character the compilers cannot take (a quote, a backslash, $, `, a line
break...: nvcc writes the path into its PTX between quotes and runs its steps through a shell) is graded
from a private copy of its student/; the submission keeps its name.

A submission that cannot be read that way gets a `layout_error` that says what was found and what
to do, e.g. "found hillis_steele.cu at the top level: put your files in student/".

    PYTHONPATH=grading python3 -m scangrade.submission SUBMISSION   prints what was found (exit 0) or the error (exit 1)
"""

from __future__ import annotations

import argparse
import bz2
import difflib
import gzip
import io
import lzma
import os
import re
import shutil
import stat
import struct
import sys
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .vocab import (ARCHIVE_LIKE_SUFFIXES, JUNK_NAMES, MAX_ARCHIVE_BYTES, MAX_BYTES, MAX_FILES, MAX_NAME_CHARS,
                    MAX_PATH_CHARS, MAX_SOURCE_BYTES, SLOT_FILES, SLOTS, TAR_SUFFIXES, strip_archive_suffix)

EXPECTED = ", ".join(SLOT_FILES.values())


class LayoutError(Exception):
    """The submission cannot be read as a student/ folder; the message says why, for the student."""


@dataclass
class Submission:
    """What was found in a submission. `layout_error` is set (and student_dir is None) when unusable."""

    name: str
    source: Path
    root: Path | None = None                                  # the folder that contains student/
    student_dir: Path | None = None
    slot_files: dict[str, Path] = field(default_factory=dict)  # slot -> file, only those present
    missing_slots: list[str] = field(default_factory=list)
    helper_files: list[Path] = field(default_factory=list)     # other .cu files, compiled and linked
    notes: list[str] = field(default_factory=list)
    layout_error: str | None = None
    workdir: Path | None = None                                # private unpack folder (archives)

    def cleanup(self) -> None:
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> "Submission":
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def submission_name(path: Path) -> str:
    """The folder name, or the archive's name without its suffix."""
    stem = strip_archive_suffix(path.name)
    return "submission" if not stem or stem.lower() in ARCHIVE_LIKE_SUFFIXES else stem


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_LIKE_SUFFIXES)


def _is_junk(name: str) -> bool:
    return name in JUNK_NAMES or name.startswith("._")


# --- safe unpacking ---------------------------------------------------------------------------------

def size_text(n: int) -> str:
    """A limit as the student reads it: 64 MiB, 4 MiB, or bytes when not a whole MiB."""
    return f"{n // (1 << 20)} MiB" if n >= (1 << 20) and n % (1 << 20) == 0 else f"{n} bytes"


def _check_member_name(name: str, archive: str) -> PurePosixPath:
    """Refuse absolute names, names with '..' and names past the length limits; return the normalized
    relative path."""
    posix = name.replace("\\", "/")
    path = PurePosixPath(posix)
    if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":"):
        raise LayoutError(f"{archive}: member {name[:200]!r} has an absolute path: refused")
    if ".." in path.parts:
        raise LayoutError(f"{archive}: member {name[:200]!r} points outside the archive ('..'): refused")
    if len(posix) > MAX_PATH_CHARS or any(len(part) > MAX_NAME_CHARS for part in path.parts):
        raise LayoutError(f"{archive}: member {name[:200]!r}... has a path longer than {MAX_PATH_CHARS} "
                          f"characters or a name longer than {MAX_NAME_CHARS}: refused")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in posix):
        raise LayoutError(f"{archive}: member {name[:200]!r} has a control character in its name: refused")
    parts = [p for p in path.parts if p not in ("", ".")]
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _unpacked_too_big(archive: str) -> LayoutError:
    return LayoutError(f"{archive}: more than {size_text(MAX_BYTES)} unpacked: refused")


def _copy_capped(src, dst_path: Path, budget: list[int], archive: str, member: str) -> None:
    """Copy a member's bytes, counting them against the archive's byte budget and a source file's own
    limit (headers can lie: the bytes themselves are counted)."""
    limit = MAX_SOURCE_BYTES if _is_source(member) else None
    written = 0
    dst_path.parent.mkdir(parents=True, exist_ok=True)
    with open(dst_path, "wb") as dst:
        while True:
            chunk = src.read(1 << 16)
            if not chunk:
                break
            budget[0] -= len(chunk)
            written += len(chunk)
            if budget[0] < 0:
                raise _unpacked_too_big(archive)
            if limit is not None and written > limit:
                raise _source_too_big(member, written, more=True)
            dst.write(chunk)


def _is_source(rel: str) -> bool:
    """A file the build may read: a .cu or .cuh under a student/ folder."""
    path = PurePosixPath(rel)
    return "student" in path.parts[:-1] and path.suffix.lower() in (".cu", ".cuh")


def _source_too_big(rel: str, size: int, more: bool = False) -> LayoutError:
    return LayoutError(f"{rel} is {'more than ' if more else ''}{size} bytes: a source file may hold at most "
                       f"{size_text(MAX_SOURCE_BYTES)}: refused")


def _zip_entries(archive: Path) -> tuple[int, int] | None:
    """(entries, bytes of the central directory) as the zip's end record declares them, read before
    zipfile parses that directory (a small zip can declare millions of entries: their list would fill
    the grader's memory). None when there is no end record (zipfile then says it is unreadable)."""
    with open(archive, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        tail_at = max(0, size - (22 + 0xFFFF))
        f.seek(tail_at)
        tail = f.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            return None
        entries, cd_size = struct.unpack("<HI", tail[at + 10: at + 16])
        if entries != 0xFFFF and cd_size != 0xFFFFFFFF:
            return entries, cd_size
        loc = tail_at + at - 20                     # zip64: the locator just before the end record
        if loc < 0:
            return None
        f.seek(loc)
        locator = f.read(20)
        if locator[:4] != b"PK\x06\x07":
            return None
        f.seek(struct.unpack("<Q", locator[8:16])[0])
        record = f.read(56)
        if record[:4] != b"PK\x06\x06" or len(record) < 56:
            return None
        entries64, cd_size64 = struct.unpack("<Q8xQ", record[24:48])
        return entries64, cd_size64


# a central directory record: 46 bytes, the name (MAX_PATH_CHARS) and room for extra fields and a comment
ZIP_RECORD_BYTES = 4096


def _unpack_zip(archive: Path, dest: Path) -> None:
    try:
        declared = _zip_entries(archive)
    except OSError as exc:
        raise LayoutError(f"{archive.name} is not a readable zip archive ({exc})") from None
    if declared is not None and declared[0] > MAX_FILES:
        raise LayoutError(f"{archive.name}: more than {MAX_FILES} files: refused")
    if declared is not None and declared[1] > MAX_FILES * ZIP_RECORD_BYTES:
        raise LayoutError(f"{archive.name}: its list of files takes {declared[1]} bytes, more than "
                          f"{MAX_FILES} files of up to {ZIP_RECORD_BYTES} bytes each would: refused")
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise LayoutError(f"{archive.name} is not a readable zip archive ({exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_FILES:
            raise LayoutError(f"{archive.name}: more than {MAX_FILES} files: refused")
        if sum(i.file_size for i in infos) > MAX_BYTES:
            raise _unpacked_too_big(archive.name)
        budget = [MAX_BYTES]
        for info in infos:
            rel = _check_member_name(info.filename, archive.name)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise LayoutError(f"{archive.name}: member {info.filename!r} is a symbolic link: refused")
            if not info.is_dir() and _is_source(rel.as_posix()) and info.file_size > MAX_SOURCE_BYTES:
                raise _source_too_big(rel.as_posix(), info.file_size)
            target = dest / rel
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                with zf.open(info) as src:
                    _copy_capped(src, target, budget, archive.name, rel.as_posix())
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, ValueError) as exc:
                raise LayoutError(f"{archive.name} is corrupt: cannot read {info.filename!r} ({exc})") from None


class _CappedStream(io.RawIOBase):
    """A decompressed tar stream that ends in LayoutError past `limit` bytes: the headers and the data
    tarfile reads (a GNU long name or a pax header of any declared size included) stay bounded."""

    def __init__(self, raw, limit: int, archive: str) -> None:
        self.raw, self.left, self.archive = raw, limit, archive

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        want = min(len(buf), self.left + 1)
        data = self.raw.read(want)
        if len(data) > self.left:
            raise _unpacked_too_big(self.archive)
        self.left -= len(data)
        buf[:len(data)] = data
        return len(data)


def _open_tar_stream(archive: Path):
    """The archive's decompressed bytes (gzip, bzip2, xz or none, told by the magic bytes)."""
    with open(archive, "rb") as f:
        magic = f.read(6)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(archive, "rb")
    if magic[:3] == b"BZh":
        return bz2.open(archive, "rb")
    if magic[:6] == b"\xfd7zXZ\x00":
        return lzma.open(archive, "rb")
    return open(archive, "rb")


def _tar_stream_limit() -> int:
    """every member's header (512 bytes, more with long names) on top of the bytes of the files"""
    return MAX_BYTES + (MAX_FILES + 1) * 4096


def _unpack_tar(archive: Path, dest: Path) -> None:
    try:
        raw = _open_tar_stream(archive)
    except OSError as exc:
        raise LayoutError(f"{archive.name} is not a readable tar archive ({exc})") from None
    with raw:
        stream = io.BufferedReader(_CappedStream(raw, _tar_stream_limit(), archive.name), 1 << 16)
        try:
            tf = tarfile.open(fileobj=stream, mode="r|")
        except (tarfile.TarError, OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
            raise LayoutError(f"{archive.name} is not a readable tar archive ({exc})") from None
        with tf:
            _unpack_tar_members(tf, archive.name, dest)


def _unpack_tar_members(tf: tarfile.TarFile, archive: str, dest: Path) -> None:
    """Members one by one as the stream gives them (never the whole list first)."""
    budget, count, declared = [MAX_BYTES], 0, 0
    while True:
        try:
            m = tf.next()
        except (tarfile.TarError, OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
            raise LayoutError(f"{archive} is corrupt ({exc})") from None
        if m is None:
            return
        count += 1
        if count > MAX_FILES:
            raise LayoutError(f"{archive}: more than {MAX_FILES} files: refused")
        rel = _check_member_name(m.name, archive)
        if m.issym() or m.islnk():
            link = PurePosixPath(m.linkname.replace("\\", "/"))
            base = rel.parent if m.issym() else PurePosixPath(".")
            resolved = os.path.normpath(str(base / link))
            if link.is_absolute() or resolved == ".." or resolved.startswith("../"):
                raise LayoutError(f"{archive}: member {m.name!r} is a link that leaves the archive "
                                  f"({m.linkname}): refused")
            # links inside the archive carry nothing the layout needs: skip them
            continue
        try:
            if m.isdir():
                (dest / rel).mkdir(parents=True, exist_ok=True)
                continue
            if not m.isfile():
                raise LayoutError(f"{archive}: member {m.name!r} is not a regular file: refused")
            declared += m.size
            if declared > MAX_BYTES:
                raise _unpacked_too_big(archive)
            if _is_source(rel.as_posix()) and m.size > MAX_SOURCE_BYTES:
                raise _source_too_big(rel.as_posix(), m.size)
            src = tf.extractfile(m)
            if src is None:
                raise LayoutError(f"{archive} is corrupt: cannot read {m.name!r}")
            with src:
                _copy_capped(src, dest / rel, budget, archive, rel.as_posix())
        except (tarfile.TarError, OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
            raise LayoutError(f"{archive} is corrupt: cannot read {m.name!r} ({exc})") from None


def unpack(archive: Path, dest: Path) -> None:
    """Unpack a .zip or .tar(.gz) into dest, refusing anything that could escape it or exceed a limit."""
    lower = archive.name.lower()
    if not lower.endswith(".zip") and not lower.endswith(TAR_SUFFIXES):
        raise LayoutError(f"{archive.name}: unsupported archive type: submit a folder, a .zip or a .tar.gz")
    try:
        size = archive.stat().st_size
    except OSError as exc:
        raise LayoutError(f"cannot read {archive.name} ({exc})") from None
    if size > MAX_ARCHIVE_BYTES:
        raise LayoutError(f"{archive.name} is {size} bytes: an archive may hold at most "
                          f"{size_text(MAX_ARCHIVE_BYTES)}: refused")
    if lower.endswith(".zip"):
        _unpack_zip(archive, dest)
    else:
        _unpack_tar(archive, dest)


# --- layout -----------------------------------------------------------------------------------------

def _walk(root: Path) -> list[Path]:
    """Every file and folder under root (relative), junk skipped, links not followed. Refused past
    MAX_FILES entries, MAX_BYTES in all, or a source file (student/*.cu, *.cuh) over MAX_SOURCE_BYTES;
    a folder is read entry by entry, so a folder of a million names is refused without listing it."""
    found: list[Path] = []
    total = 0
    todo = [Path(".")]
    while todo:
        rel_dir = todo.pop()
        try:
            with os.scandir(root / rel_dir) as it:
                entries = []
                for entry in it:
                    entries.append(entry)
                    if len(found) + len(entries) > MAX_FILES:
                        raise LayoutError(f"the submission has more than {MAX_FILES} files and folders: refused")
        except OSError as exc:
            raise LayoutError(f"cannot read {rel_dir.as_posix()}/ in the submission ({exc.strerror})") from None
        subdirs = []
        for entry in sorted(entries, key=lambda e: e.name):
            if _is_junk(entry.name):
                continue
            rel = rel_dir / entry.name
            found.append(rel)
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(rel)
            elif entry.is_file(follow_symlinks=False):
                size = entry.stat(follow_symlinks=False).st_size
                total += size
                if _is_source(rel.as_posix()) and size > MAX_SOURCE_BYTES:
                    raise _source_too_big(rel.as_posix(), size)
                if total > MAX_BYTES:
                    raise LayoutError(f"the submission holds more than {size_text(MAX_BYTES)}: refused")
        todo.extend(reversed(subdirs))
    return found


def _check_links(root: Path, entries: list[Path]) -> None:
    real_root = root.resolve()
    for rel in entries:
        p = root / rel
        if p.is_symlink():
            target = p.resolve()
            if target != real_root and real_root not in target.parents:
                raise LayoutError(f"{rel.as_posix()} is a link that leaves the submission: refused")


def _where(rel: Path) -> str:
    parent = rel.parent.as_posix()
    return "at the top level" if parent == "." else f"in {parent}/"


def _norm(name: str) -> str:
    stem = name.lower()
    for suffix in (".cu", ".cpp", ".cc", ".c", ".cuh"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return "".join(ch for ch in stem if ch.isalnum())


_NORMALIZED_SLOTS = {_norm(f): f for f in SLOT_FILES.values()}


def near_miss(name: str) -> str | None:
    """The slot file a wrongly named file was probably meant to be (HillisSteele.cu, blelloch.CU...)."""
    if name in SLOT_FILES.values():
        return None
    key = _norm(name)
    if key in _NORMALIZED_SLOTS:
        return _NORMALIZED_SLOTS[key]
    close = difflib.get_close_matches(key, list(_NORMALIZED_SLOTS), n=1, cutoff=0.8)
    return _NORMALIZED_SLOTS[close[0]] if close else None


def _find_root(top: Path, entries: list[Path]) -> Path:
    """The folder that contains student/ (top itself or its single top-level folder), or LayoutError."""
    archives = [e for e in entries if (top / e).is_file() and is_archive_name(e.name)]
    if archives:
        raise LayoutError(f"found {archives[0].as_posix()} inside the submission: "
                          "upload the archive itself or its unpacked folder")
    if (top / "student").is_dir() and not (top / "student").is_symlink():
        return top
    top_dirs = [e for e in entries if len(e.parts) == 1 and (top / e).is_dir()]
    if len(top_dirs) == 1 and (top / top_dirs[0] / "student").is_dir():
        return top / top_dirs[0]

    if not entries:
        raise LayoutError("the submission is empty")
    # a folder named like student/ in the wrong case, or student/ nested too deep
    for e in entries:
        if (top / e).is_dir() and e.name.lower() == "student":
            if e.name != "student":
                raise LayoutError(f"found {e.as_posix()}/: the folder must be named student/ (lower case)")
            raise LayoutError(f"found student/ at {e.as_posix()}: submit the folder that contains student/")
    cu = [e for e in entries if (top / e).is_file() and e.suffix.lower() in (".cu", ".cuh")]
    if cu:
        raise LayoutError(f"found {cu[0].name} {_where(cu[0])}: put your files in student/")
    files = [e.as_posix() for e in entries if (top / e).is_file()]
    if not files:
        raise LayoutError("the submission is empty (folders only, no files)")
    shown = ", ".join(files[:5]) + (", ..." if len(files) > 5 else "")
    raise LayoutError(f"no student/ folder and no .cu files in the submission (found: {shown}): "
                      f"put {EXPECTED} in a folder named student/")


def _scan_student_dir(sub: Submission) -> None:
    student = sub.student_dir
    assert student is not None
    cu_files = sorted(p for p in student.iterdir()
                      if p.is_file() and not _is_junk(p.name) and p.suffix.lower() == ".cu")
    wrong: list[str] = []
    others: list[Path] = []
    for p in cu_files:
        slot = next((s for s, f in SLOT_FILES.items() if f == p.name), None)
        if slot is not None:
            sub.slot_files[slot] = p
        elif near_miss(p.name) is not None or p.suffix != ".cu":
            wrong.append(p.name)
        else:
            others.append(p)
    if wrong:
        raise LayoutError(f"student/{wrong[0]} is not a slot file: expected one of {EXPECTED}"
                          + (f" (did you mean {near_miss(wrong[0])}?)" if near_miss(wrong[0]) else ""))
    if others and not sub.slot_files:
        raise LayoutError(f"student/{others[0].name} is not a slot file: expected one of {EXPECTED}")
    if not cu_files:
        deeper = sorted(p.relative_to(student).as_posix() for p in student.rglob("*.cu"))
        if deeper:
            raise LayoutError(f"found student/{deeper[0]}: put the slot files directly in student/, "
                              f"expected one of {EXPECTED}")
        raise LayoutError(f"student/ has no .cu files: expected one of {EXPECTED}")
    sub.helper_files = others
    for p in others:
        sub.notes.append(f"student/{p.name} is compiled as a helper file (not a slot)")
    sub.missing_slots = [s for s in SLOTS if s not in sub.slot_files]
    for s in sub.missing_slots:
        sub.notes.append(f"student/{SLOT_FILES[s]} is missing: {s} is graded as not implemented")
    for p in sorted(student.rglob("*.cu")):
        if p.parent != student:
            sub.notes.append(f"student/{p.relative_to(student).as_posix()} is not compiled "
                             "(only .cu files directly in student/ are)")


# what a path handed to the compilers may hold: nvcc writes the source's absolute path into the PTX
# between quotes (a quote there stops ptxas) and passes -o and source paths through a shell ($ and `
# expand); anything else in the folder's path is graded from a private copy (_stage)
COMPILER_SAFE = _COMPILER_SAFE = re.compile(r"[\w./+,:=@%~ '-]*")


def _stage(sub: Submission, workdir: Path | None) -> None:
    """Grade a folder whose path the compilers cannot take from a private copy of its student/ (links to
    files, already checked to stay inside the submission, are copied as the files they name; links to
    folders are left out, so a loop copies nothing twice)."""
    if sub.root is None or _COMPILER_SAFE.fullmatch(str(sub.root)):
        return
    if sub.workdir is None:
        sub.workdir = Path(tempfile.mkdtemp(prefix="scangrade-sub-", dir=workdir))
        os.chmod(sub.workdir, 0o700)
    staged = sub.workdir / "staged"
    source = sub.root / "student"
    try:
        for dirpath, dirnames, filenames in os.walk(source, followlinks=False):   # links to folders: left out
            dirnames[:] = [d for d in dirnames if not _is_junk(d)]
            here = staged / "student" / Path(dirpath).relative_to(source)
            here.mkdir(parents=True, exist_ok=True)
            for name in filenames:
                if not _is_junk(name) and (Path(dirpath) / name).is_file():
                    shutil.copyfile(Path(dirpath) / name, here / name)
    except OSError as exc:
        raise LayoutError(f"cannot read student/ ({exc.strerror})") from None
    sub.root, sub.student_dir = staged, staged / "student"


def load_submission(path: Path, workdir: Path | None = None) -> Submission:
    """Resolve a submission. Archives are unpacked into a private folder (under workdir if given)
    that Submission.cleanup() removes. Never raises LayoutError: it is returned in layout_error."""
    path = Path(path)
    sub = Submission(name=submission_name(path.resolve() if path.is_dir() else path), source=path)
    try:
        if not path.exists():
            raise LayoutError(f"{path} does not exist")
        if path.is_dir() and path.resolve().name == "student":
            # The student/ folder itself (`make grade` in a working copy): only it is read.
            sub.name = submission_name(path.resolve().parent)
            sub.root = path.resolve().parent
            sub.student_dir = path.resolve()
            _stage(sub, workdir)
            _scan_student_dir(sub)
            return sub
        if path.is_dir():
            top = path.resolve()
        elif is_archive_name(path.name):
            sub.workdir = Path(tempfile.mkdtemp(prefix="scangrade-sub-", dir=workdir))
            os.chmod(sub.workdir, 0o700)
            top = sub.workdir / "unpacked"
            top.mkdir()
            unpack(path, top)
        else:
            raise LayoutError(f"{path.name} is neither a folder nor a .zip/.tar.gz archive")
        entries = _walk(top)
        _check_links(top, entries)
        sub.root = _find_root(top, entries)
        sub.student_dir = sub.root / "student"
        if sub.root != top:
            sub.notes.append(f"used {sub.root.relative_to(top).as_posix()}/student (one folder down)")
        _stage(sub, workdir)
        _scan_student_dir(sub)
    except LayoutError as exc:
        sub.layout_error = str(exc)
        sub.student_dir = None
        sub.slot_files = {}
        sub.helper_files = []
    return sub


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit status: 0 usable, 1 layout error.")
    parser.add_argument("submission", type=Path, help="a folder, .zip or .tar.gz")
    args = parser.parse_args(argv)
    with load_submission(args.submission) as sub:
        if sub.layout_error:
            print(f"layout error: {sub.layout_error}", file=sys.stderr)
            return 1
        print(f"submission {sub.name}: student/ at {sub.student_dir}")
        for slot in SLOTS:
            print(f"  {slot:14} {'present' if slot in sub.slot_files else 'MISSING'}")
        for note in sub.notes:
            print(f"  note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
