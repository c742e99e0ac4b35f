"""The fixture documents follow grading/results.schema.json (so exporter tests test real inputs)."""

from __future__ import annotations

import jsonschema
import pytest

from conftest import assert_valid, load_schema
import fixtures


@pytest.mark.parametrize("name", sorted(fixtures.DOCUMENTS))
def test_fixture_is_schema_valid(name):
    assert_valid(fixtures.document(name), "results")


def test_schema_catches_drift():
    doc = fixtures.document("mixed")
    doc["cases"][0]["score"] = 1          # a key the schema does not have
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, load_schema("results"))


def test_fixtures_cover_every_interesting_status():
    statuses = {c["status"] for name in fixtures.DOCUMENTS for c in fixtures.document(name)["cases"]}
    assert statuses >= {"pass", "fail", "not_implemented", "crash", "timeout", "compile_error",
                        "out_of_bounds_write", "internal_error"}
    visibilities = {c["visibility"] for c in fixtures.document("mixed")["cases"]}
    assert visibilities >= {"visible", "hidden", "after_due_date"}
    assert {fixtures.document(n)["build"]["status"] for n in fixtures.DOCUMENTS} == \
        {"ok", "compile_error", "layout_error"}
