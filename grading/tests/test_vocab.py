"""scangrade/vocab.py: the names agree with results.schema.json, and the slot-verdict rule."""

from __future__ import annotations

import json

import pytest

from conftest import GRADING
from scangrade import vocab

SCHEMA = json.loads((GRADING / "results.schema.json").read_text())


def test_names_match_the_schema():
    assert set(vocab.STATUSES) == set(SCHEMA["$defs"]["status"]["enum"])
    assert set(vocab.VERDICT_ORDER) == set(vocab.STATUSES) - {"pass"}       # every failure has a rank
    assert set(vocab.FLAG_ORDER) == set(vocab.VERDICT_ORDER) | {"layout_error"}
    assert list(vocab.SLOTS) == SCHEMA["$defs"]["slot"]["enum"]


@pytest.mark.parametrize("statuses, verdict", [
    ({"pass": 30}, "pass"),
    ({"pass": 29, "leak": 0}, "pass"),                              # a zero count is not present
    ({}, "pass"),
    ({"pass": 28, "fail": 1, "leak": 1}, "fail"),                   # fail outranks leak
    ({"fail": 3, "crash": 1}, "crash"),
    ({"crash": 2, "timeout": 1}, "timeout"),                        # a hang outranks a crash
    ({"not_implemented": 30, "compile_error": 1}, "compile_error"),
    ({"race": 1, "memory_error": 1, "out_of_bounds_write": 1}, "race"),
    ({"compile_error": 1, "internal_error": 1}, "internal_error"),  # harness faults first
    (["pass", "input_modified", "fail"], "input_modified"),         # a set of statuses works too
    ({"pass": 1, "something_new": 1}, "something_new"),             # never pass for an unknown status
])
def test_slot_verdict(statuses, verdict):
    assert vocab.slot_verdict(statuses) == verdict


def test_slot_verdicts_per_slot():
    cases = [{"slot": "blelloch", "status": "pass"}, {"slot": "blelloch", "status": "leak"},
             {"slot": "hierarchical", "status": "pass"}]
    assert vocab.slot_verdicts({"cases": cases}) == {"blelloch": "leak", "hierarchical": "pass"}


@pytest.mark.parametrize("name, stem", [("alice.tar.gz", "alice"), ("alice.TGZ", "alice"), ("a.b.zip", "a.b"),
                                        ("bob.tar.xz", "bob"), ("carol", "carol"), (".zip", ".zip"),
                                        ("notes.gz", "notes.gz")])
def test_strip_archive_suffix(name, stem):
    assert vocab.strip_archive_suffix(name) == stem
