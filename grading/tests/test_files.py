"""scangrade/files.py: the one atomic write, the one file hash, the capped head read, GPU discovery."""

import hashlib
import os
import stat
from pathlib import Path

import pytest

from scangrade import files


def test_write_atomic_mode_is_what_open_gives(tmp_path):
    """One mode rule for every atomically written file: the mode a plain open() would give."""
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    target = tmp_path / "sub" / "gradebook.csv"
    files.write_atomic(target, "a,b\r\n1,2\n")
    assert target.read_bytes() == b"a,b\r\n1,2\n"          # newlines as given
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == files.FILE_MODE
    assert [p.name for p in target.parent.iterdir()] == ["gradebook.csv"]   # no temporary file left


def test_write_atomic_leaves_the_old_file_when_it_fails(tmp_path):
    target = tmp_path / "results.json"
    target.write_text("old")

    with pytest.raises(TypeError):
        files.write_atomic(target, 12)   # not text: the write fails before the rename
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_exports_and_platform_results_use_the_one_write(tmp_path, monkeypatch):
    """write_exports, the gradebook and the platforms' write_json_atomic go through files.write_atomic."""
    from scangrade import batch_class, batch_local, batch_report, exporters, gradebook
    from scangrade.platforms import common
    calls = []
    real = files.write_atomic

    def spy(path, text):
        calls.append(Path(path).name)
        real(path, text)

    for mod in (exporters, common, gradebook, batch_report, batch_class, batch_local):
        assert mod.write_atomic is real, mod.__name__
        monkeypatch.setattr(mod, "write_atomic", spy)
    monkeypatch.setattr(exporters, "export", lambda results, fmt: f"{fmt} export\n")
    common.write_json_atomic(tmp_path / "results.json", {"score": 1})
    written = exporters.write_exports({}, tmp_path, ["junit", "autolab"])
    assert calls == ["results.json", written["junit"].name, written["autolab"].name]
    assert (tmp_path / "results.json").read_text() == '{\n "score": 1\n}\n'
    assert written["junit"].read_text() == "junit export\n"


def test_sha256_file(tmp_path):
    p = tmp_path / "big"
    data = os.urandom(3 << 20) + b"tail"          # more than one 1 MiB piece
    p.write_bytes(data)
    assert files.sha256_file(p) == hashlib.sha256(data).hexdigest()


def test_read_head_is_capped_and_follows_no_link(tmp_path):
    p = tmp_path / "copy.cuh"
    p.write_bytes(b"#line 1 \"student/x.cuh\"\n" + b"y" * 10000 + b"\xff")
    head = files.read_head(p, 4096)
    assert len(head) == 4096 and head.startswith('#line 1 "student/x.cuh"')
    link = tmp_path / "link.cuh"
    link.symlink_to(p)
    assert files.read_head(link, 4096) is None
    assert files.read_head(tmp_path / "missing", 10) is None


def test_visible_gpus(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 3,")
    assert files.visible_gpus() == ["2", "3"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: a)'\necho 'GPU 1: NVIDIA H100 (UUID: b)'\n"
                   "echo 'No devices were found' >&2\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert files.nvidia_smi_gpus() == ["0", "1"] and files.visible_gpus() == ["0", "1"]
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed'\nexit 9\n")
    assert files.nvidia_smi_gpus() is None and files.visible_gpus() == []
    smi.unlink()
    assert files.nvidia_smi_gpus() is None
