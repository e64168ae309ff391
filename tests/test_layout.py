"""The shape of the package: the command line flows one way, and no module reaches into
another's private names."""

from __future__ import annotations

import ast
from pathlib import Path

from benchmarks import imports_inside

PACKAGE = Path(__file__).resolve().parent.parent / "runsnap"


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` for every import in ``path`` (names empty for ``import x``)."""
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
    return out


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_nothing_below_the_command_line_imports_it() -> None:
    """Only ``python -m runsnap`` (the other way in) imports the command-line face."""
    cli = PACKAGE / "cli"
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in modules() if cli not in path.parents and path.name != "__main__.py"
        for module, names in imports(path)
        if module == "runsnap.cli" or module.startswith("runsnap.cli.")
        or (module == "runsnap" and "cli" in names)
    ]
    assert offenders == []


def test_no_module_imports_another_modules_private_names() -> None:
    """``from runsnap.x import _name`` reaches into another module: what two modules share is
    public in one of them."""
    offenders = [
        f"{path.relative_to(PACKAGE)}: from {module} import {name}"
        for path in modules()
        for module, names in imports(path) if module.split(".")[0] == "runsnap"
        for name in names if name.startswith("_") and not name.startswith("__")
    ]
    assert offenders == []


def test_the_layers_and_no_cycles_hold() -> None:
    """The contracts in ``pyproject.toml`` (``[tool.importlinter]``): every import goes down the
    layers (cli -> render -> views | experiments -> diffing -> capturing -> launch | tracing |
    whoreads | checks -> redact -> snapshot | knowledge -> base -> errors), imports inside
    functions and under ``TYPE_CHECKING`` included, and no two modules of a package import each
    other. import-linter reads the real import graph (grimp), so nothing here is hand-kept."""
    from importlinter.cli import lint_imports

    status = lint_imports(config_filename=str(PACKAGE.parent / "pyproject.toml"), no_cache=True)
    assert status == 0, "an import breaks the layers or makes a cycle: see the output above"


def test_the_code_run_in_the_child_imports_only_the_standard_library() -> None:
    """The probe and the tracing hook run in the launched program's interpreter: nothing of
    runsnap (nor any third-party package) may be imported there."""
    import sys

    offenders = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in sorted((PACKAGE / "probe").rglob("*.py"))
        for module, _ in imports(path)
        if module.split(".")[0] not in sys.stdlib_module_names
        and not module.split(".")[0].startswith("_runsnap_trace")
    ]
    assert offenders == []


def test_the_layout_in_the_development_docs_names_every_folder() -> None:
    """docs/development.md lists each folder of ``runsnap/`` once, and no folder that is gone."""
    import re

    doc = (PACKAGE.parent / "docs" / "development.md").read_text("utf-8")
    block = doc.split("<!-- layout -->", 1)[1].split("<!-- /layout -->", 1)[0]
    listed = set(re.findall(r"^runsnap/([\w/]+)/ ", block, re.M))
    folders = {str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.parent != PACKAGE and "__pycache__" not in p.parts}
    folders = {f for f in folders if f.count("/") == 0 or f == "capturing/collectors"}
    folders -= {"diffing/sections"}
    assert listed == folders


def test_an_import_inside_a_function_says_why() -> None:
    """An import inside a function defers a cost, and a comment on it (or above its block of
    imports) says which; a module never imports the same name in two functions. What counts
    as an import inside a function is written once, in ``benchmarks/imports_inside.py``
    (``CAPPED``: statements in function bodies, ``TYPE_CHECKING`` blocks and ``runsnap/probe/``
    aside), which prints each one with its reason and the counts by the other definitions."""
    found = [f for f in imports_inside.find() if imports_inside.CAPPED(f)]
    missing = [f.where for f in found if not f.reason]
    seen: dict[tuple[object, ...], str | None] = {}
    twice = [f"{f.where}: {f.module} {name}" for f in found for name in f.names
             if seen.setdefault((f.path, f.module, name), f.function) != f.function]
    assert missing == []
    assert twice == []
    # 126: five more that deferred nothing measurable were removed (issue 35), found by
    # ``python benchmarks/imports_inside.py --measure``: fcntl where the module already had it,
    # or where every capture imports it, resource (every capture reads the limits), and two whose
    # module was loaded with the importing one (checks.rules in the diff's findings,
    # render.diff in the diff command); one was added (the [runtime] reader in checks' rules,
    # which keeps the record classes off the capture path's pre-launch guard)
    assert len(found) <= 126
    assert imports_inside.count(imports_inside.find(), "capped") == len(found)
