"""The shape of the package: the command line flows one way, and no module reaches into
another's private names."""

from __future__ import annotations

import ast
from pathlib import Path

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
