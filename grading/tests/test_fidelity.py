"""tools/bench_fidelity.py: GPU vs emulated case statuses over small synthetic gallery results."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench_fidelity   # tools/ is on the path (pytest.ini)


def case(slot: str, n: int, status: str, dtype: str = "int32") -> dict:
    return {"id": f"{slot}.{dtype}.n{n}.random", "slot": slot, "status": status, "suite": "public", "n": n}


def write_results(root: Path, backend: str, entries: dict[str, list[dict]]) -> Path:
    for name, cases in entries.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "results.json").write_text(json.dumps({"backend": backend, "max_n": 4194305, "cases": cases}))
    return root


def explanations(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps({"explanations": rows}))
    return path


@pytest.fixture
def no_gallery(tmp_path) -> Path:
    """A gallery without expected.json files: no documented differences."""
    (tmp_path / "gallery").mkdir()
    return tmp_path / "gallery"


def run(tmp_path, gpu, emu, no_gallery, rows=None, *extra) -> int:
    notes = explanations(tmp_path / "explanations.json", rows or [])
    return bench_fidelity.main([str(gpu), str(emu), "--explanations", str(notes), "--gallery", str(no_gallery),
                                "--json", str(tmp_path / "report.json"), *extra])


def report(tmp_path) -> dict:
    return json.loads((tmp_path / "report.json").read_text())


def test_agreement_is_agreeing_over_compared(tmp_path, no_gallery, capsys):
    ok = [case("blelloch", n, "pass") for n in range(1, 100)]
    gpu = write_results(tmp_path / "gpu", "gpu", {"a": ok, "b": ok[:50]})
    emu = write_results(tmp_path / "emu", "emulate", {"a": ok, "b": ok[:50]})
    assert run(tmp_path, gpu, emu, no_gallery) == 0
    totals = report(tmp_path)["totals"]
    assert (totals["compared"], totals["agreeing"], totals["agreement"]) == (149, 149, 1.0)
    assert totals["slots_compared"] == 2 and totals["slots_agreeing"] == 2
    out = capsys.readouterr().out
    assert "case-status agreement: 100.00% (149/149); counting the 0 explained differences: 100.00%" in out
    assert out.rstrip().splitlines()[-1] == "fidelity ok"


def test_an_unexplained_verdict_changing_disagreement_fails(tmp_path, no_gallery, capsys):
    gpu_cases = [case("hillis_steele", n, "pass") for n in range(1, 300)]
    emu_cases = [*gpu_cases[:-1], case("hillis_steele", 299, "fail")]
    gpu = write_results(tmp_path / "gpu", "gpu", {"e": gpu_cases})
    emu = write_results(tmp_path / "emu", "emulate", {"e": emu_cases})
    assert run(tmp_path, gpu, emu, no_gallery) == 1   # 298/299 agree: above 99%, but the verdict changes
    out = capsys.readouterr().out
    assert "UNEXPLAINED: e: 1 case hillis_steele.int32.n299.random: pass -> fail (the slot's verdicts differ)" in out
    assert "UNEXPLAINED: e: slot verdict hillis_steele: pass -> fail" in out
    assert "FIDELITY FAILED" in out
    assert report(tmp_path)["totals"]["unexplained_verdict_changes"] == 2


def test_an_explained_disagreement_passes(tmp_path, no_gallery, capsys):
    gpu_cases = [case("hillis_steele", n, "pass") for n in range(1, 300)] + [case("hillis_steele", 1024, "race")]
    emu_cases = [*gpu_cases[:-2], case("hillis_steele", 299, "race"), case("hillis_steele", 1024, "race")]
    gpu = write_results(tmp_path / "gpu", "gpu", {"racy": gpu_cases})
    emu = write_results(tmp_path / "emu", "emulate", {"racy": emu_cases})
    rows = [{"entry": "racy", "slot": "hillis_steele", "cases": "*", "gpu": "pass", "emulated": "race",
             "why": "right by luck on the GPU", "gpu_nondeterministic": True}]
    assert run(tmp_path, gpu, emu, no_gallery, rows) == 0
    out = capsys.readouterr().out
    assert "explained, GPU nondeterministic: racy: 1 case hillis_steele.int32.n299.random: pass -> race" in out
    assert "why: right by luck on the GPU" in out
    (d,) = report(tmp_path)["rows"][0]["disagreements"]
    assert d["gpu_nondeterministic"] and not d["changes_verdict"]


def test_an_explanation_for_other_statuses_does_not_apply(tmp_path, no_gallery):
    gpu = write_results(tmp_path / "gpu", "gpu", {"e": [case("blelloch", 5, "pass")]})
    emu = write_results(tmp_path / "emu", "emulate", {"e": [case("blelloch", 5, "fail")]})
    rows = [{"entry": "e", "cases": "*", "gpu": "pass", "emulated": "race", "why": "a race"}]
    assert run(tmp_path, gpu, emu, no_gallery, rows) == 1


def test_cases_on_one_side_only_are_not_compared(tmp_path, no_gallery, capsys):
    small = [case("hierarchical", n, "pass") for n in (1, 2, 3)]
    gpu = write_results(tmp_path / "gpu", "gpu", {"e": [*small, case("hierarchical", 1 << 26, "fail")],
                                                 "gpu_only": small})
    emu = write_results(tmp_path / "emu", "emulate", {"e": small, "emu_only": small})
    rc = run(tmp_path, gpu, emu, no_gallery)
    doc = report(tmp_path)
    (row,) = doc["rows"]
    assert (row["entry"], row["compared"], row["agreeing"], row["one_side_only"]) == ("e", 3, 3, 1)
    assert doc["totals"]["gpu_only_entries"] == ["gpu_only"] and doc["totals"]["emulated_only_entries"] == ["emu_only"]
    # the verdicts differ (the GPU's 2^26 case failed): unexplained, so the run fails
    assert rc == 1 and "slot verdict hierarchical: fail -> pass" in capsys.readouterr().out


def test_expected_json_emulation_verdicts_explain(tmp_path, capsys):
    gallery = tmp_path / "gallery"
    (gallery / "e").mkdir(parents=True)
    (gallery / "e" / "expected.json").write_text(json.dumps({
        "verdicts": {"single_pass": "fail"}, "emulation_verdicts": {"single_pass": "pass"},
        "emulation_note": "blocks run in order when emulated"}))
    gpu = write_results(tmp_path / "gpu", "gpu", {"e": [case("single_pass", 5, "pass"), case("single_pass", 9, "fail")]})
    emu = write_results(tmp_path / "emu", "emulate", {"e": [case("single_pass", 5, "pass"), case("single_pass", 9, "pass")]})
    notes = explanations(tmp_path / "explanations.json", [])
    assert bench_fidelity.main([str(gpu), str(emu), "--explanations", str(notes), "--gallery", str(gallery),
                                "--min-agreement", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "explained: e: slot verdict single_pass: fail -> pass" in out
    assert "why: expected.json: blocks run in order when emulated" in out


def test_agreement_below_the_threshold_fails(tmp_path, no_gallery):
    gpu = write_results(tmp_path / "gpu", "gpu", {"e": [case("blelloch", n, "fail") for n in range(1, 11)]})
    emu = write_results(tmp_path / "emu", "emulate",
                        {"e": [case("blelloch", n, "fail" if n > 1 else "pass") for n in range(1, 11)]})
    # the verdicts agree (fail); one unexplained case in ten: 90% < 99%
    assert run(tmp_path, gpu, emu, no_gallery) == 1
    assert report(tmp_path)["totals"]["unexplained_verdict_changes"] == 0
    assert run(tmp_path, gpu, emu, no_gallery, None, "--min-agreement", "0.9") == 0
    # explained: it no longer counts against the threshold, unless --raw
    rows = [{"entry": "e", "cases": "blelloch.*", "gpu": "fail", "emulated": "pass", "why": "known"}]
    assert run(tmp_path, gpu, emu, no_gallery, rows) == 0
    assert report(tmp_path)["totals"]["explained_agreement"] == 1.0
    assert run(tmp_path, gpu, emu, no_gallery, rows, "--raw") == 1


def test_a_case_explanation_does_not_explain_a_verdict(tmp_path, no_gallery):
    gpu = write_results(tmp_path / "gpu", "gpu", {"e": [case("blelloch", n, "fail") for n in range(1, 11)]})
    emu = write_results(tmp_path / "emu", "emulate",
                        {"e": [case("blelloch", n, "fail" if n > 1 else "input_modified") for n in range(1, 11)]})
    # input_modified ranks before fail: the verdicts differ; a row with `cases` explains cases only
    assert run(tmp_path, gpu, emu, no_gallery, [{"entry": "e", "cases": "*", "why": "known"}]) == 1
    assert run(tmp_path, gpu, emu, no_gallery, [{"entry": "e", "why": "known"}]) == 0


def test_snapshot_round_trip(tmp_path, no_gallery):
    cases = [case("blelloch", 3, "pass"), case("blelloch", 4, "fail", "float32"),
             {**case("blelloch", 4, "fail"), "suite": "hidden"}]
    gpu = write_results(tmp_path / "gpu", "gpu", {"e": cases})
    emu = write_results(tmp_path / "emu", "emulate", {"e": cases})
    snap = tmp_path / "gpu_statuses.json"
    assert run(tmp_path, gpu, emu, no_gallery, None, "--write-snapshot", str(snap)) == 0
    doc = json.loads(snap.read_text())
    assert doc["backend"] == "gpu" and doc["format"] == bench_fidelity.SNAPSHOT_FORMAT
    assert doc["statuses"]["e"] == {"blelloch.int32.n3.random": "pass", "blelloch.float32.n4.random": "fail",
                                    "hidden:blelloch.int32.n4.random": "fail"}
    assert doc["slot_verdicts"]["e"] == {"blelloch": "fail"}
    assert run(tmp_path, snap, emu, no_gallery) == 0
    assert report(tmp_path)["totals"]["compared"] == 3
    # a snapshot given as the wrong side is refused
    assert run(tmp_path, gpu, snap, no_gallery) == 2


def test_a_snapshot_of_slot_verdicts_only(tmp_path, no_gallery, capsys):
    snap = tmp_path / "gpu_statuses.json"
    snap.write_text(json.dumps({"format": bench_fidelity.SNAPSHOT_FORMAT, "backend": "gpu", "statuses": {},
                                "slot_verdicts": {"e": {"blelloch": "fail"}}}))
    emu = write_results(tmp_path / "emu", "emulate", {"e": [case("blelloch", 3, "pass")]})
    assert run(tmp_path, snap, emu, no_gallery) == 1
    out = capsys.readouterr().out
    assert "case-status agreement: n/a" in out and "UNEXPLAINED: e: slot verdict blelloch: fail -> pass" in out


def test_a_results_folder_of_the_other_backend_is_refused(tmp_path, no_gallery):
    gpu = write_results(tmp_path / "gpu", "emulate", {"e": [case("blelloch", 3, "pass")]})
    emu = write_results(tmp_path / "emu", "emulate", {"e": [case("blelloch", 3, "pass")]})
    assert run(tmp_path, gpu, emu, no_gallery) == 2


def test_the_fidelity_files_load():
    found = bench_fidelity.load_explanations(bench_fidelity.FIDELITY / "explanations.json", bench_fidelity.GALLERY)
    assert all(e.why for e in found)
    for name in ("gpu_statuses.json", "emulated_statuses.json"):
        path = bench_fidelity.FIDELITY / name
        if path.is_file():
            side = bench_fidelity.load_side(path, "gpu" if name.startswith("gpu") else "emulate", None)
            assert side.verdicts
