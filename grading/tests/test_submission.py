"""Submission layouts: folders, zips and tarballs built in tmp_path, good and bad."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import make_submission
from scangrade import submission
from scangrade.submission import load_submission
from scangrade.vocab import SLOTS

STUB = "// slot\n"
ALL_SLOTS = {f"student/{s}.cu": STUB for s in SLOTS}


def zip_of(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def tgz_of(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def error_of(path: Path) -> str | None:
    with load_submission(path) as sub:
        return sub.layout_error


# --- accepted ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["folder", "zip", "tgz"])
def test_correct_layout(tmp_path, kind):
    files = dict(ALL_SLOTS, **{"README.md": "hi", "student/common.cuh": "// helper header"})
    if kind == "folder":
        path = make_submission(tmp_path / "alice", files)
    elif kind == "zip":
        path = zip_of(tmp_path / "alice.zip", files)
    else:
        path = tgz_of(tmp_path / "alice.tar.gz", files)
    with load_submission(path) as sub:
        assert sub.layout_error is None
        assert sub.name == "alice"
        assert set(sub.slot_files) == set(SLOTS)
        assert sub.missing_slots == [] and sub.helper_files == []
        assert sub.student_dir.is_dir() and sub.student_dir.name == "student"
        unpacked = sub.workdir
    if kind != "folder":
        assert unpacked is not None and not unpacked.exists(), "the private unpack folder is removed"


@pytest.mark.parametrize("kind", ["folder", "zip", "tgz"])
def test_nested_one_level_is_accepted(tmp_path, kind):
    files = {f"alice-hw3/{k}": v for k, v in ALL_SLOTS.items()}
    files["__MACOSX/alice-hw3/._blelloch.cu"] = "junk"   # what macOS adds to zips
    path = {"folder": lambda: make_submission(tmp_path / "dl", files),
            "zip": lambda: zip_of(tmp_path / "dl.zip", files),
            "tgz": lambda: tgz_of(tmp_path / "dl.tgz", files)}[kind]()
    with load_submission(path) as sub:
        assert sub.layout_error is None
        assert sub.root.name == "alice-hw3"
        assert any("one folder down" in n for n in sub.notes)


def test_missing_slots_and_helpers(tmp_path):
    path = make_submission(tmp_path / "s", {"student/blelloch.cu": STUB, "student/scan_utils.cu": STUB,
                                            "student/extra/old.cu": STUB})
    with load_submission(path) as sub:
        assert sub.layout_error is None
        assert list(sub.slot_files) == ["blelloch"]
        assert sub.missing_slots == ["hillis_steele", "hierarchical", "single_pass"]
        assert [p.name for p in sub.helper_files] == ["scan_utils.cu"]
        assert any("student/extra/old.cu is not compiled" in n for n in sub.notes)
        assert any("student/hillis_steele.cu is missing" in n for n in sub.notes)


# --- refused, with the message the student sees ---------------------------------------------------

def test_nested_deeper_is_an_error(tmp_path):
    path = zip_of(tmp_path / "deep.zip", {f"a/b/{k}": v for k, v in ALL_SLOTS.items()})
    assert error_of(path) == "found student/ at a/b/student: submit the folder that contains student/"


def test_top_level_cu_files(tmp_path):
    path = zip_of(tmp_path / "flat.zip", {"hillis_steele.cu": STUB, "blelloch.cu": STUB})
    assert error_of(path) == "found blelloch.cu at the top level: put your files in student/"
    path = make_submission(tmp_path / "src", {"code/hillis_steele.cu": STUB, "notes.txt": "x", "other/a.txt": "y"})
    assert error_of(path) == "found hillis_steele.cu in code/: put your files in student/"


@pytest.mark.parametrize("name, hint", [("HillisSteele.cu", "hillis_steele.cu"), ("blelloch.CU", "blelloch.cu"),
                                        ("single-pass.cu", "single_pass.cu"), ("hierachical.cu", "hierarchical.cu")])
def test_wrong_slot_names(tmp_path, name, hint):
    path = make_submission(tmp_path / "s", {f"student/{name}": STUB, "student/blelloch.cu": STUB}
                           if name != "blelloch.CU" else {f"student/{name}": STUB})
    err = error_of(path)
    assert err.startswith(f"student/{name} is not a slot file: expected one of hillis_steele.cu, blelloch.cu, "
                          "hierarchical.cu, single_pass.cu")
    assert f"did you mean {hint}?" in err


def test_other_cu_names_need_a_slot_file(tmp_path):
    path = make_submission(tmp_path / "s", {"student/scan.cu": STUB})
    assert error_of(path) == ("student/scan.cu is not a slot file: expected one of hillis_steele.cu, blelloch.cu, "
                              "hierarchical.cu, single_pass.cu")


def test_wrong_folder_case(tmp_path):
    path = make_submission(tmp_path / "s", {f"Student/{s}.cu": STUB for s in SLOTS})
    assert error_of(path) == "found Student/: the folder must be named student/ (lower case)"


def test_archive_inside(tmp_path):
    inner = zip_of(tmp_path / "submission.zip", ALL_SLOTS)
    folder = tmp_path / "upload"
    folder.mkdir()
    inner.rename(folder / "submission.zip")
    assert error_of(folder) == ("found submission.zip inside the submission: "
                                "upload the archive itself or its unpacked folder")
    outer = zip_of(tmp_path / "outer.zip", {"hw/submission.tar.gz": "not really"})
    assert "found hw/submission.tar.gz inside the submission" in error_of(outer)


def test_corrupt_archives(tmp_path):
    bad_zip = tmp_path / "bad.zip"
    bad_zip.write_bytes(b"PK\x03\x04 this is not a zip")
    assert "bad.zip is not a readable zip archive" in error_of(bad_zip)
    bad_tgz = tmp_path / "bad.tgz"
    bad_tgz.write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert "bad.tgz is not a readable tar archive" in error_of(bad_tgz) or "corrupt" in error_of(bad_tgz)
    # a zip whose member data is damaged after the header
    good = zip_of(tmp_path / "trunc.zip", {"student/blelloch.cu": "x" * 5000})
    data = bytearray(good.read_bytes())
    data[40:60] = b"\x00" * 20
    good.write_bytes(bytes(data))
    assert error_of(good) is not None


def test_path_traversal_is_refused(tmp_path):
    evil = zip_of(tmp_path / "evil.zip", dict(ALL_SLOTS, **{"../../escaped.cu": "boom"}))
    assert "points outside the archive" in error_of(evil)
    assert not (tmp_path / "escaped.cu").exists() and not (tmp_path.parent / "escaped.cu").exists()
    absolute = zip_of(tmp_path / "abs.zip", {"/tmp/abs_escape.cu": "boom"})
    assert "absolute path" in error_of(absolute)


def test_tar_links_leaving_the_archive_are_refused(tmp_path):
    path = tmp_path / "links.tgz"
    with tarfile.open(path, "w:gz") as tf:
        for name, text in ALL_SLOTS.items():
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tf.addfile(info, io.BytesIO(text.encode()))
        link = tarfile.TarInfo("student/passwd.cu")
        link.type = tarfile.SYMTYPE
        link.linkname = "../../../../etc/passwd"
        tf.addfile(link)
    assert "is a link that leaves the archive" in error_of(path)


def test_folder_symlink_leaving_the_submission(tmp_path):
    path = make_submission(tmp_path / "s", ALL_SLOTS)
    (path / "student" / "extra.cu").symlink_to("/etc/hostname")
    assert "student/extra.cu is a link that leaves the submission" in error_of(path)


def test_caps(tmp_path, monkeypatch):
    monkeypatch.setattr(submission, "MAX_FILES", 5)
    many = zip_of(tmp_path / "many.zip", {f"student/f{i}.cuh": "x" for i in range(10)})
    assert "more than 5 files" in error_of(many)
    monkeypatch.setattr(submission, "MAX_BYTES", 1000)
    big = zip_of(tmp_path / "big.zip", dict(ALL_SLOTS, **{"student/big.cuh": "x" * 5000}))
    assert error_of(big) == "big.zip: more than 1000 bytes unpacked: refused"


def test_empty(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert error_of(empty) == "the submission is empty"
    assert error_of(zip_of(tmp_path / "empty.zip", {})) == "the submission is empty"
    only_dirs = make_submission(tmp_path / "d", {})
    (only_dirs / "a" / "b").mkdir(parents=True)
    (only_dirs / "c").mkdir()
    assert "empty" in error_of(only_dirs)
    assert error_of(make_submission(tmp_path / "e", {"student/README.txt": "x"})).startswith(
        "student/ has no .cu files")


def test_not_found_and_unsupported(tmp_path):
    assert "does not exist" in error_of(tmp_path / "nope.zip")
    other = tmp_path / "hw.rar"
    other.write_bytes(b"Rar!")
    assert "unsupported archive type" in error_of(other)


def test_cli(tmp_path, capsys):
    path = make_submission(tmp_path / "s", {"student/blelloch.cu": STUB})
    assert submission.main([str(path)]) == 0
    assert "hillis_steele  MISSING" in capsys.readouterr().out
    assert submission.main([str(tmp_path / "nope")]) == 1


# --- limits: each refusal says what and the limit ----------------------------------------------------

def test_zip_entry_count_is_read_before_the_list(tmp_path, monkeypatch):
    many = zip_of(tmp_path / "many.zip", {f"student/f{i}.cuh": "" for i in range(submission.MAX_FILES + 1)})

    def never(*args, **kwargs):
        raise AssertionError("zipfile parsed the list of a zip that declares too many entries")
    monkeypatch.setattr(submission.zipfile, "ZipFile", never)
    assert error_of(many) == f"many.zip: more than {submission.MAX_FILES} files: refused"


def test_zip_and_tar_bombs_stop_at_the_unpacked_limit(tmp_path, monkeypatch):
    zeros = "\0" * (submission.MAX_BYTES + 1)                   # compresses to a few tens of KB
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("student/blelloch.cu", STUB)
        zf.writestr("data/zeros.bin", zeros)
    assert bomb.stat().st_size < 1 << 20
    assert error_of(bomb) == "bomb.zip: more than 64 MiB unpacked: refused"
    assert error_of(tgz_of(tmp_path / "bomb.tgz", {"student/blelloch.cu": STUB, "data/zeros.bin": zeros})) == \
        "bomb.tgz: more than 64 MiB unpacked: refused"
    # a header that tarfile reads whole (a pax header of 3 MB) stops at the stream's cap too
    monkeypatch.setattr(submission, "MAX_BYTES", 1 << 20)
    monkeypatch.setattr(submission, "MAX_FILES", 5)
    pax = tmp_path / "pax.tgz"
    with tarfile.open(pax, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo("student/blelloch.cu")
        info.size = len(STUB)
        info.pax_headers = {"comment": "x" * (3 << 20)}
        tf.addfile(info, io.BytesIO(STUB.encode()))
    assert error_of(pax) == "pax.tgz: more than 1 MiB unpacked: refused"


def test_tar_members_are_counted_as_they_come(tmp_path, monkeypatch):
    monkeypatch.setattr(submission, "MAX_FILES", 5)
    many = tgz_of(tmp_path / "many.tgz", {f"student/f{i}.cuh": "x" for i in range(10)})
    assert error_of(many) == "many.tgz: more than 5 files: refused"
    xz = tmp_path / "ok.tar.xz"
    with tarfile.open(xz, "w:xz") as tf:
        for name, text in ALL_SLOTS.items():
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tf.addfile(info, io.BytesIO(text.encode()))
    with load_submission(xz) as sub:
        assert sub.layout_error is None and set(sub.slot_files) == set(SLOTS)


def test_source_file_size_limit(tmp_path, monkeypatch):
    folder = make_submission(tmp_path / "s", ALL_SLOTS)
    with open(folder / "student" / "blelloch.cu", "r+b") as f:
        f.truncate(submission.MAX_SOURCE_BYTES + 1)             # sparse
    assert error_of(folder) == (f"student/blelloch.cu is {submission.MAX_SOURCE_BYTES + 1} bytes: a source file "
                                "may hold at most 4 MiB: refused")
    monkeypatch.setattr(submission, "MAX_SOURCE_BYTES", 100)
    big = zip_of(tmp_path / "big.zip", dict(ALL_SLOTS, **{"student/table.cuh": "x" * 101, "notes.txt": "y" * 500}))
    assert error_of(big) == "student/table.cuh is 101 bytes: a source file may hold at most 100 bytes: refused"
    assert error_of(zip_of(tmp_path / "fine.zip", dict(ALL_SLOTS, **{"notes.txt": "y" * 500}))) is None


def test_folder_limits(tmp_path, monkeypatch):
    folder = make_submission(tmp_path / "s", ALL_SLOTS)
    with open(folder / "video.mp4", "wb") as f:
        f.truncate(submission.MAX_BYTES + 1)                    # sparse
    assert error_of(folder) == "the submission holds more than 64 MiB: refused"
    (folder / "video.mp4").unlink()
    monkeypatch.setattr(submission, "MAX_FILES", 50)
    (folder / "many").mkdir()
    for i in range(60):
        (folder / "many" / f"{i}.txt").write_text("x")
    assert error_of(folder) == "the submission has more than 50 files and folders: refused"


def test_archive_size_and_member_names(tmp_path, monkeypatch):
    ok = zip_of(tmp_path / "ok.zip", ALL_SLOTS)
    monkeypatch.setattr(submission, "MAX_ARCHIVE_BYTES", 100)
    assert error_of(ok) == f"ok.zip is {ok.stat().st_size} bytes: an archive may hold at most 100 bytes: refused"
    monkeypatch.undo()
    long_name = zip_of(tmp_path / "long.zip", dict(ALL_SLOTS, **{"student/" + "a" * 300 + ".cuh": "x"}))
    assert "has a path longer than 1024 characters or a name longer than 255: refused" in error_of(long_name)
    control = zip_of(tmp_path / "ctl.zip", dict(ALL_SLOTS, **{"student/a\x1b[2Jb.cuh": "x"}))
    assert error_of(control) == "ctl.zip: member 'student/a\\x1b[2Jb.cuh' has a control character in its name: refused"


def test_a_folder_the_compilers_cannot_name_is_graded_from_a_private_copy(tmp_path):
    plain = make_submission(tmp_path / "plain name-1", dict(ALL_SLOTS, **{"student/h.cuh": "// h\n"}))
    with load_submission(plain) as sub:
        assert sub.root == plain.resolve() and sub.workdir is None
    odd = make_submission(tmp_path / 'odd "name\\ $x `id`\n', dict(ALL_SLOTS, **{"student/h.cuh": "// h\n"}))
    (odd / "student" / "link.cuh").symlink_to("h.cuh")
    with load_submission(odd) as sub:
        assert sub.layout_error is None and sub.name == odd.name
        assert sub.workdir is not None and sub.root.is_relative_to(sub.workdir)
        assert submission._COMPILER_SAFE.fullmatch(str(sub.root))
        assert set(sub.slot_files) == set(SLOTS) and all(p.is_relative_to(sub.root) for p in sub.slot_files.values())
        assert (sub.student_dir / "h.cuh").read_text() == "// h\n"
        assert not (sub.student_dir / "link.cuh").is_symlink() and (sub.student_dir / "link.cuh").read_text() == "// h\n"
        workdir = sub.workdir
    assert not workdir.exists()


def test_private_copy_leaves_links_to_folders_out(tmp_path):
    odd = make_submission(tmp_path / "loop$", ALL_SLOTS)
    (odd / "student" / "again").symlink_to(".")                       # a loop inside the submission
    with load_submission(odd) as sub:
        assert sub.layout_error is None and sub.workdir is not None
        assert sorted(p.name for p in sub.student_dir.iterdir()) == sorted(f"{s}.cu" for s in SLOTS)
