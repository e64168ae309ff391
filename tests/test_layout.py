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


def _imports_in_functions() -> list[tuple[Path, list[str], ast.stmt, str]]:
    """(file, its lines, the import, the function) for every import made inside a function
    (``TYPE_CHECKING`` blocks aside)."""
    found = []
    for path in modules():
        if "probe" in path.parts:
            continue
        text = path.read_text("utf-8")
        lines = text.splitlines()

        def visit(node: ast.AST, func: str | None) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, child.name)
                elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                elif isinstance(child, (ast.Import, ast.ImportFrom)) and func is not None:
                    found.append((path, lines, child, func))  # noqa: B023 - used at once
                else:
                    visit(child, func)

        visit(ast.parse(text), None)
    return found


def test_an_import_inside_a_function_says_why() -> None:
    """An import inside a function defers a cost, and a comment on it (or above its block of
    imports) says which; a module never imports the same name in two functions."""
    missing, twice, seen = [], [], {}
    for path, lines, node, func in _imports_in_functions():
        at = node.lineno - 1
        while at > 0 and (lines[at - 1].lstrip().startswith(("import ", "from ", "#"))
                          or not lines[at - 1].strip()) and "#" not in lines[at]:
            at -= 1
        if not any("#" in lines[k] for k in range(at, node.end_lineno or node.lineno)) \
                and not lines[at - 1].lstrip().startswith("#"):
            missing.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
        module = node.module if isinstance(node, ast.ImportFrom) else ""
        for alias in node.names:
            key = (path, module, alias.name)
            if seen.setdefault(key, func) != func:
                twice.append(f"{path.relative_to(PACKAGE)}: {module or ''} {alias.name}")
    assert missing == []
    assert twice == []
    # 130: five that deferred nothing were removed (issue 35): threading where the module, or
    # every command that imports it, already has it (subprocess imports it; so do a capture,
    # show, report and scrub before redaction), and fnmatch, which every reader of the
    # knowledge has loaded before a pattern is compiled
    assert len(_imports_in_functions()) <= 130
