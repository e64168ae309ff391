"""schema.json and the sections' declarations (runsnap/snapshot/shapes.py) say the same."""

from __future__ import annotations

import json

import pytest

from runsnap.snapshot import shapes


@pytest.mark.parametrize("name", sorted(shapes.DECLARED))
def test_the_schema_of_a_declared_section_is_its_declaration(name: str) -> None:
    with open(shapes.SCHEMA, encoding="utf-8") as fh:
        schema = json.load(fh)
    assert schema["properties"][name] == shapes.schema_of(shapes.DECLARED[name]), (
        f"schema.json's [{name}] is not what runsnap/snapshot/shapes.py declares: rewrite it "
        f"with python -m runsnap.snapshot.shapes")


@pytest.mark.parametrize("name", sorted(shapes.DEFS))
def test_a_declared_definition_is_its_declaration(name: str) -> None:
    with open(shapes.SCHEMA, encoding="utf-8") as fh:
        schema = json.load(fh)
    assert schema["$defs"][name] == shapes.schema_of(shapes.DEFS[name])


def test_writing_the_schema_again_changes_nothing(tmp_path) -> None:
    copy = tmp_path / "schema.json"
    with open(shapes.SCHEMA, encoding="utf-8") as fh:
        text = fh.read()
    copy.write_text(text, encoding="utf-8")
    shapes.write_schema(str(copy))
    assert copy.read_text(encoding="utf-8") == text


def test_a_real_capture_has_only_declared_fields(tmp_path) -> None:
    """What the collectors write for a declared section is what the declaration has."""
    import sys

    import runsnap

    snap = runsnap.capture(["true", "--x", "1"], cwd=tmp_path)
    ran = runsnap.run([sys.executable, "-c", "import sys; print('x'); sys.exit('boom')"],
                      cwd=tmp_path, output=str(tmp_path / "r.toml")).snapshot
    snap = snap.replace(sections={**snap.sections, "outcome": ran["outcome"]})
    for name, shape in shapes.DECLARED.items():
        if name in snap.sections:
            assert set(snap[name]) <= set(shape.__annotations__), name
