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
