"""What running the platform images showed: a sandbox with neither namespaces nor a cgroup (inside a
container) ends each command by killing its uid's processes, so compiles then run one at a time."""

from __future__ import annotations


from conftest import write_script
from scangrade import build


def probe_script(tmp_path, name: str, iso: dict):
    return write_script(tmp_path / name, f"import json, sys\nprint(json.dumps({iso!r}))\n")


def test_kills_by_uid_only_without_namespaces_and_cgroup(tmp_path):
    container = {"sandboxed": False, "limits_via": "rlimit", "uid_dropped": True}
    host = {"sandboxed": True, "limits_via": "rlimit", "uid_dropped": True}
    cgroup = {"sandboxed": False, "limits_via": "cgroup", "uid_dropped": True}
    assert build.kills_by_uid((str(probe_script(tmp_path, "c", container)),)) is True
    assert build.kills_by_uid((str(probe_script(tmp_path, "h", host)),)) is False
    assert build.kills_by_uid((str(probe_script(tmp_path, "g", cgroup)),)) is False
    broken = write_script(tmp_path / "b", "print('not json')\n")
    assert build.kills_by_uid((str(broken),)) is False
    assert build.kills_by_uid((str(tmp_path / "missing"),)) is False
