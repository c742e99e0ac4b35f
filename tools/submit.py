#!/usr/bin/env python3
"""`make submit`: the archive the course asks for, student/ as the grader reads it.

    python3 tools/submit.py [--out submission.tar.gz]

Packs the files directly in student/ that the grader reads (the .cu files: the four slots and any
helpers; the headers they include: .cuh, .h, .hpp) under student/ in a deterministic .tar.gz, then
reads the archive back with the grader's own reader (scangrade.submission) and checks that it holds
exactly those files, with every slot file present or reported missing. Exit status: 0 written,
2 the grader would refuse it (layout error; nothing is written).
"""

from __future__ import annotations

import argparse
import gzip
import io
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
import grader_package  # noqa: E402,F401  (the grader's file-name rules: grading/scangrade)
from scangrade.submission import load_submission  # noqa: E402
from scangrade.vocab import SLOT_FILES  # noqa: E402

PACKED_SUFFIXES = (".cu", ".cuh", ".h", ".hpp")


def pack(student: Path) -> tuple[bytes, list[str]]:
    names = sorted(p.name for p in student.iterdir()
                   if p.is_file() and not p.is_symlink() and p.suffix in PACKED_SUFFIXES)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        folder = tarfile.TarInfo("student")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        for name in names:
            data = (student / name).read_bytes()
            info = tarfile.TarInfo(f"student/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue(), names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit status: 0 written, 2 the grader would refuse it (nothing written).")
    parser.add_argument("--out", type=Path, default=ROOT / "submission.tar.gz", help="archive to write")
    parser.add_argument("--student", type=Path, default=ROOT / "student", help="the folder to submit")
    args = parser.parse_args(argv)
    sub = load_submission(args.student)
    if sub.layout_error:
        print(f"layout error: {sub.layout_error}\nnothing written: the grader would refuse this submission")
        return 2
    data, names = pack(args.student)
    tmp = args.out.with_name(".part-" + args.out.name)  # the grader reads archives by their suffix
    tmp.write_bytes(data)
    with load_submission(tmp) as back:  # the grader's reader, on the archive itself
        problem = back.layout_error
        if not problem:
            got = sorted(p.name for p in back.student_dir.iterdir() if p.is_file())
            if got != names:
                problem = f"the archive holds {got}, not {names}"
            elif sorted(back.slot_files) != sorted(sub.slot_files):
                problem = "the archive's slot files differ from student/'s"
    if problem:
        tmp.unlink()
        print(f"make submit: the archive does not read back as student/ ({problem}): please report it")
        return 2
    tmp.replace(args.out)
    print(f"wrote {args.out.name}: student/ with {', '.join(names)}")
    for slot, f in SLOT_FILES.items():
        if slot in back.missing_slots:
            print(f"  note: {f} is missing: {slot} is graded as not implemented")
    for note in sub.notes:
        if "helper" in note or "not compiled" in note:
            print(f"  note: {note}")
    print("hand in this file as the course asks; the grader compiles only these files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
