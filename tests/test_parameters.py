"""Below the command-line face, no function takes more than 8 parameters: options travel as
one record (:class:`runsnap.capturing.options.CaptureOptions`), not as twenty keywords. The
public API's own functions keep their keyword arguments, as thin wrappers over the record,
and click commands take what their options declare."""

from __future__ import annotations

import ast

import runsnap
from tests.conftest import ROOT

MOST = 8
#: The command-line face: click commands take one parameter an option.
CLICK_FACE = tuple(f"runsnap/cli/{p.name}" for p in (ROOT / "runsnap" / "cli").glob("*.py"))


def _public_api() -> set[tuple[str, str]]:
    """(defining file, name) of each function the public API (``runsnap.__all__``) names."""
    import inspect
    from pathlib import Path

    out = set()
    for name in runsnap.__all__:
        obj = getattr(runsnap, name)
        if inspect.isfunction(obj):
            where = Path(inspect.getsourcefile(obj) or "").resolve().relative_to(ROOT)
            out.add((where.as_posix(), obj.__name__))
    return out


def _count(args: ast.arguments) -> int:
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    n = len(names) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return n - (names[:1] in (["self"], ["cls"]))


def test_no_function_below_the_cli_takes_more_than_eight_parameters() -> None:
    public = _public_api()
    over = []
    for path in sorted((ROOT / "runsnap").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if rel in CLICK_FACE and any("command" in ast.unparse(d) for d in node.decorator_list):
                continue
            if (rel, node.name) in public:
                continue
            if _count(node.args) > MOST:
                over.append(f"{rel}:{node.lineno} {node.name} ({_count(node.args)})")
    assert over == []


def test_the_public_functions_are_thin_wrappers_over_the_record() -> None:
    """runsnap.capture, capture_pid and run build the record and hand it on: one statement
    after the docstring."""
    import inspect

    for func in (runsnap.capture, runsnap.capture_pid, runsnap.run):
        body = ast.parse(inspect.getsource(func)).body[0].body  # type: ignore[attr-defined]
        assert len(body) <= 3, func.__name__
