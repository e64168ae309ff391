"""docs/development.md's recipes (a field, a command, a check rule) stay true: every path and
name they give exists, every command is a module of its own added to the group with one line,
and every kind of finding is named where the recipe says."""

from __future__ import annotations

import ast
import importlib
import os
import re

import click

from runsnap.checks.finding import Finding
from runsnap.checks.rules import CHECKS
from runsnap.cli.app import cli
from tests.conftest import ROOT

#: Modules of runsnap/cli that serve every command rather than being one.
SHARED = {"__init__", "app", "asking", "boundary", "complete", "preflight", "fast", "options"}


def _recipes() -> str:
    text = (ROOT / "docs" / "development.md").read_text()
    return text.split("<!-- recipes -->", 1)[1].split("<!-- /recipes -->", 1)[0]


def test_every_path_the_recipes_give_exists() -> None:
    recipes = _recipes()
    paths = set(re.findall(r"`((?:runsnap|tests|docs)/[\w/.]*)`", recipes))
    examples = {"runsnap/cli/pin.py", "runsnap/commands/pin.py"}  # the recipe's new command
    assert len(paths) > 15
    assert sorted(p for p in paths - examples if not (ROOT / p).exists()) == []
    for name in ("format_option", "dir_option", "output_option", "yes_option", "finish", "echo"):
        assert name in vars(importlib.import_module("runsnap.cli.options")) or \
            name in vars(importlib.import_module("runsnap.cli.boundary")), name
    for name in re.findall(r"`([A-Z][A-Z_]+)`", recipes):  # OK, NO, EXIT_STATUSES, CHECKS
        assert any(name in vars(importlib.import_module(m)) for m in
                   ("runsnap.errors", "runsnap.checks.rules")), name


def test_every_command_is_a_module_of_its_own_added_with_one_line() -> None:
    app = (ROOT / "runsnap" / "cli" / "app.py").read_text()
    modules = sorted(p.stem for p in (ROOT / "runsnap" / "cli").glob("*.py") if p.stem not in SHARED)
    found = {}
    for stem in modules:
        module = importlib.import_module(f"runsnap.cli.{stem}")
        commands = [v for v in vars(module).values()
                    if isinstance(v, click.Command) and v.callback is not None
                    and v.callback.__module__ == module.__name__]
        assert len(commands) == 1, (stem, commands)
        found[commands[0].name] = stem
        assert f"cli.add_command({commands[0].callback.__name__})" in app, stem  # type: ignore[union-attr]
    assert sorted(found) == sorted(cli.commands)
    for name, stem in found.items():
        assert name.replace("-", "") == stem, (name, stem)


def test_a_command_module_holds_its_click_command_and_nothing_else() -> None:
    for path in sorted((ROOT / "runsnap" / "cli").glob("*.py")):
        if path.stem in SHARED:
            continue
        defs = [n.name for n in ast.parse(path.read_text()).body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert len(defs) == 1, (path.name, defs)


def test_every_command_is_documented() -> None:
    docs = "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    assert [n for n in cli.commands if f"runsnap {n}" not in docs] == []


def test_every_kind_of_finding_is_named_where_the_recipe_says() -> None:
    kinds = set()
    for path in (ROOT / "runsnap" / "checks").glob("*.py"):
        kinds |= set(re.findall(r'Finding\(\s*"([a-z-]+)"', path.read_text()))
    assert len(kinds) >= len(CHECKS)
    source = (ROOT / "runsnap" / "checks" / "finding.py").read_text()
    kind_doc = source.split("kind: str", 1)[1].split('"""', 2)[1]  # Finding.kind's docstring
    assert "kind" in Finding._fields
    assert sorted(k for k in kinds if f"``{k}``" not in kind_doc) == []


def test_the_field_recipe_counts_the_files_the_generator_writes() -> None:
    """The field recipe's count: the files written by hand it names, and those
    ``python -m runsnap.snapshot.shapes`` writes (one records module per field)."""
    from runsnap.snapshot import shape_compare, shape_records, shapes

    recipe = _recipes().split("**A command**", 1)[0]
    m = re.search(r"touches\s+(\d+)\s+files:\s+(\d+)\s+written\s+by\s+hand\s+\((.+?)\)\s+and\s+"
                  r"(\d+)\s+that\s+`python -m runsnap.snapshot.shapes`\s+writes\s+\((.+?)\)\.",
                  recipe, re.S)
    assert m, recipe[:400]
    total, by_hand, hand, made, generated = int(m[1]), int(m[2]), m[3], int(m[4]), m[5]
    assert total == by_hand + made and by_hand == len(re.findall(r"collector|`[\w/.]+`", hand))
    named = set(re.findall(r"`runsnap/snapshot/([\w.]+)`", generated))
    written = {os.path.basename(shapes.SCHEMA), os.path.basename(shape_compare.TABLE),
               *(f"{module}.py" for module in shape_records.MODULES.values())}
    assert named == written
    # what the command runs: the three writers
    main = (ROOT / "runsnap" / "snapshot" / "shapes.py").read_text().split("__main__", 1)[1]
    assert all(f"{w}(" in main for w in ("write_schema", "write_table", "write_records"))
    # one field's record lives in one records module: the count has one of them
    assert made == len(written) - (len(shape_records.MODULES) - 1)
