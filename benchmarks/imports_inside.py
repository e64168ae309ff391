"""Imports made inside functions in ``runsnap/``: each one listed with its file:line, its function
and the comment that says what it defers, and counted by every definition a reader might use.

    python benchmarks/imports_inside.py              # the list, then the counts
    python benchmarks/imports_inside.py --counts     # the counts alone
    python benchmarks/imports_inside.py --measure    # and what each one defers, measured

The count ``tests/test_layout.py`` caps is :data:`CAPPED`: import *statements* in the body of a
function or method (at any depth of ``if``/``try``/``with``/loops within it, and in functions
nested in it), leaving out ``if TYPE_CHECKING:`` blocks (annotations only: nothing is imported
at run time) and ``runsnap/probe/`` (it runs in the child's interpreter, where deferring is a
matter of the child's start-up, not of runsnap's). The other definitions change one of those
choices each, so that two people who count differently can say where their figures part.

``--measure`` imports the function's own module in a fresh interpreter, then times importing
the deferred module there (``perf_counter``, the median of three interpreters): what the
deferral saves a command that imports the module and never calls the function.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "runsnap"

__all__ = ["CAPPED", "DEFINITIONS", "Found", "count", "find"]


@dataclass(frozen=True)
class Found:
    """One import made inside a function (or, for the wider definitions, elsewhere indented)."""

    path: Path
    line: int
    end: int
    function: str | None
    """The innermost function it is in; ``None`` for an indented import at module level."""
    names: tuple[str, ...]
    module: str
    """What it imports from (``from X import ...``), or ``""`` for ``import X``."""
    statement: bool
    """An ``import`` statement; false for an ``__import__``/``importlib.import_module`` call."""
    type_checking: bool
    """Inside an ``if TYPE_CHECKING:`` block."""
    probe: bool
    """In ``runsnap/probe/`` (run in the child's interpreter)."""
    reason: str
    """The comment that says what it defers (on its lines or above its block), or ``""``."""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def targets(self) -> tuple[str, ...]:
        """The modules it imports (for ``from X import y``: ``X``, or ``X.y`` when that is a
        module), as ``import`` would name them."""
        if not self.module:
            return self.names
        return (self.module,)


def _reason(lines: list[str], node: ast.stmt) -> str:
    """The comment on the import's lines, or the comment above its block of imports: the same
    rule ``tests/test_layout.py`` applies."""
    at = node.lineno - 1
    while at > 0 and (lines[at - 1].lstrip().startswith(("import ", "from ", "#"))
                      or not lines[at - 1].strip()) and "#" not in lines[at]:
        at -= 1
    for k in range(at, node.end_lineno or node.lineno):
        if "#" in lines[k]:
            return lines[k].split("#", 1)[1].strip()
    if at > 0 and lines[at - 1].lstrip().startswith("#"):
        block: list[str] = []
        k = at - 1
        while k >= 0 and lines[k].lstrip().startswith("#"):
            block.insert(0, lines[k].strip().lstrip("#").strip())
            k -= 1
        return " ".join(block)
    return ""


def _is_import_call(node: ast.AST) -> str | None:
    """The module an ``__import__("x")`` or ``importlib.import_module("x")`` call names."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if name not in ("__import__", "import_module"):
        return None
    arg = node.args[0] if node.args else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "?"


def _scan(path: Path) -> list[Found]:
    text = path.read_text("utf-8")
    lines = text.splitlines()
    probe = "probe" in path.relative_to(PACKAGE).parts
    found: list[Found] = []

    def visit(node: ast.AST, func: str | None, tc: bool, depth: int) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name, tc, depth + 1)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, func, True, depth + 1)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                if func is None and depth == 0:
                    continue  # a module's own top-level import
                module = child.module or "" if isinstance(child, ast.ImportFrom) else ""
                if isinstance(child, ast.ImportFrom) and child.level:
                    module = "." * child.level + module
                found.append(Found(path, child.lineno, child.end_lineno or child.lineno, func,
                                   tuple(a.name for a in child.names), module, True, tc, probe,
                                   _reason(lines, child)))
            else:
                called = _is_import_call(child)
                if called is not None and func is not None and isinstance(child, ast.expr):
                    found.append(Found(path, child.lineno, child.end_lineno or child.lineno,
                                       func, (called,), "", False, tc, probe, ""))
                visit(child, func, tc, depth + (isinstance(child, ast.stmt) and hasattr(
                    child, "body")))

    visit(ast.parse(text), None, False, 0)
    return found


def find() -> list[Found]:
    """Every import not at a module's top level, in ``runsnap/``, in file and line order."""
    out: list[Found] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        out += _scan(path)
    return out


def _capped(f: Found) -> bool:
    return f.function is not None and f.statement and not f.type_checking and not f.probe


#: The definition ``tests/test_layout.py`` caps: import statements in function bodies, leaving
#: out ``TYPE_CHECKING`` blocks and ``runsnap/probe/``.
CAPPED = _capped

#: name -> (what it counts, which imports it takes, whether it counts names, not statements)
DEFINITIONS = {
    "capped": ("statements in functions; no TYPE_CHECKING, no probe/ (tests/test_layout.py)",
               _capped, False),
    "names": ("the same, counted by the names imported", _capped, True),
    "+type_checking": ("statements in functions, TYPE_CHECKING blocks in functions too",
                       lambda f: f.function is not None and f.statement and not f.probe, False),
    "+probe": ("statements in functions, runsnap/probe/ too",
               lambda f: f.function is not None and f.statement and not f.type_checking, False),
    "+calls": ("statements in functions and __import__/import_module calls",
               lambda f: f.function is not None and not f.type_checking and not f.probe, False),
    "indented": ("every import statement not at a module's top level (functions, classes, "
                 "module-level if/try/TYPE_CHECKING blocks), probe/ too",
                 lambda f: f.statement, False),
    "indented names": ("the same, counted by names", lambda f: f.statement, True),
    "all": ("everything above, by names (statements, calls, TYPE_CHECKING, probe/)",
            lambda f: True, True),
}


def count(found: list[Found], definition: str) -> int:
    """The count of ``found`` by one of :data:`DEFINITIONS`."""
    _, take, by_names = DEFINITIONS[definition]
    return sum(len(f.names) if by_names else 1 for f in found if take(f))


_TIMER = """
import importlib, sys, time
own, package, statement = sys.argv[1:4]
importlib.import_module(own)
before = set(sys.modules)
t = time.perf_counter()
exec(statement, {"__name__": own, "__package__": package})
print((time.perf_counter() - t) * 1000, len(set(sys.modules) - before))
"""


def measure(f: Found, rounds: int = 3) -> tuple[float, int] | None:
    """Milliseconds the import statement ``f`` takes once its own module is imported (the
    statement itself is run, so a package's lazily imported names count), and how many modules
    it imports (0: it defers nothing); the median of ``rounds`` fresh interpreters."""
    own = ".".join(f.path.relative_to(ROOT).with_suffix("").parts)
    package = own.removesuffix(".__init__") if own.endswith(".__init__") else own.rpartition(".")[0]
    own = own.removesuffix(".__init__")
    lines = f.path.read_text("utf-8").splitlines()[f.line - 1:f.end]
    statement = ast.unparse(ast.parse(textwrap.dedent("\n".join(lines))))
    times, new = [], 0
    for _ in range(rounds):
        done = subprocess.run([sys.executable, "-c", _TIMER, own, package, statement],
                              capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            return None
        ms, count_ = done.stdout.split()
        times.append(float(ms))
        new = int(count_)
    return statistics.median(times), new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", action="store_true", help="the counts alone")
    parser.add_argument("--measure", action="store_true",
                        help="time what each capped import defers (fresh interpreters)")
    args = parser.parse_args(argv)
    found = find()
    if not args.counts:
        for f in found:
            if not _capped(f):
                continue
            what = f"from {f.module} import {', '.join(f.names)}" if f.module else \
                f"import {', '.join(f.names)}"
            cost = ""
            if args.measure:
                got = measure(f)
                cost = "  [?]" if got is None else f"  [{got[0]:.2f} ms, {got[1]} modules]"
            print(f"{f.where}  {f.function}()  {what}{cost}\n    # {f.reason or '(no reason)'}")
        print()
    for name, (words, _, _) in DEFINITIONS.items():
        print(f"{count(found, name):5d}  {name}: {words}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
