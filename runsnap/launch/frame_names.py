"""The names a failing traceback's code reads: for each frame, the attributes, ``getattr``
names and string keys that its function, and the class whose method it is, access.

Diagnosis asks whether the code that failed reads a config field (``config.rope_theta``,
``getattr(config, "rope_theta")``, ``cfg["rope_theta"]``, ``cfg.get("rope_theta")``): an edited
field the failing code reads is evidence; one it never reads is not
(:mod:`runsnap.diffing.evidence`). Diff never touches the machine, so the names are taken
here, once, when the run has ended and its source files are still where the traceback says:
``frames[i].names`` in ``[outcome] traceback`` (docs/schema.md), kept only for the fields of
the run's own model configs (``[models]``), so a snapshot grows by a few names.

Parsed with :mod:`ast`; a file that is missing, too big or not Python is skipped, and nothing
here fails the capture. Only identifiers are kept, never values.
"""

from __future__ import annotations

import ast
import os

from runsnap.snapshot.records import Outcome

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence
    from typing import Any

    from runsnap.snapshot.records import Frame, Models, Traceback
    from runsnap.snapshot.shapes import OutcomeSection

__all__ = ["MAX_CONFIG_FILES", "MAX_FILE_BYTES", "MAX_NAMES", "aliases", "annotate", "config_keys",
           "named", "names_at"]

#: A source file larger than this is not parsed.
MAX_FILE_BYTES = 2_000_000
#: Names kept per frame.
MAX_NAMES = 400
#: Frames annotated per traceback, innermost first.
MAX_ANNOTATED = 12

_IDENT = str.isidentifier


def _accessed(node: ast.AST) -> set[str]:
    """Attribute names, ``getattr``/``hasattr`` names and string keys read under ``node``."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Subscript):
            key = n.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.add(key.value)
        elif isinstance(n, ast.Call) and n.args:
            first = n.args[1] if len(n.args) > 1 else None
            fn = n.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr \
                if isinstance(fn, ast.Attribute) else ""
            if name in ("getattr", "hasattr") and isinstance(first, ast.Constant) \
                    and isinstance(first.value, str):
                out.add(first.value)
            elif name in ("get", "pop", "setdefault") and isinstance(n.args[0], ast.Constant) \
                    and isinstance(n.args[0].value, str):
                out.add(n.args[0].value)
    return {x for x in out if _IDENT(x)}


def _enclosing(tree: ast.AST, line: int) -> list[ast.AST]:
    """The function and class definitions that contain ``line``, outermost first."""
    chain: list[ast.AST] = []
    node: ast.AST = tree
    while True:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                    child.lineno <= line <= (child.end_lineno or child.lineno):
                chain.append(child)
                node = child
                break
        else:
            return chain


def names_at(tree: ast.AST, line: int) -> list[str]:
    """What the innermost function at ``line`` and its class (every method) read, sorted.

    >>> src = '''
    ... class Attn:
    ...     def __init__(self, config):
    ...         self.theta = config.rope_theta
    ...     def forward(self, x):
    ...         raise ValueError(getattr(self, "scaling_kind"))
    ... '''
    >>> names_at(ast.parse(src), 6)
    ['rope_theta', 'scaling_kind', 'theta']
    """
    chain = _enclosing(tree, line)
    funcs = [n for n in chain if not isinstance(n, ast.ClassDef)]
    classes = [n for n in chain if isinstance(n, ast.ClassDef)]
    out: set[str] = set()
    if funcs:
        out |= _accessed(funcs[-1])
    if classes:
        out |= _accessed(classes[-1])
    if not chain:  # module level: the statement at the line only
        for node in ast.iter_child_nodes(tree):
            start = getattr(node, "lineno", 0)
            if start <= line <= (getattr(node, "end_lineno", None) or start):
                out |= _accessed(node)
    return sorted(out)[:MAX_NAMES]


def _tree(path: str, cache: dict[str, ast.AST | None]) -> ast.AST | None:
    if path in cache:
        return cache[path]
    tree: ast.AST | None = None
    try:
        if path.endswith(".py") and os.path.getsize(path) <= MAX_FILE_BYTES:
            with open(path, "rb") as fh:
                tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    cache[path] = tree
    return tree


def named(section: OutcomeSection, wanted: Collection[str]) -> dict[str, Any]:
    """``[outcome]`` with its tracebacks replaced by :func:`annotate`'s copies (read through
    the :class:`~runsnap.snapshot.records.Outcome` record, as :func:`runsnap.launch.outcome.cut`
    does); ``section`` itself is left as it is."""
    read, out = Outcome(section), dict(section)
    if read.has("traceback"):
        out["traceback"] = annotate([read.traceback], wanted)[0]
    if read.has("earlier_tracebacks"):
        out["earlier_tracebacks"] = annotate(read.earlier_tracebacks, wanted)
    return out


def annotate(tracebacks: Sequence[Traceback], wanted: Collection[str]) -> list[dict[str, Any]]:
    """Copies of ``tracebacks`` (as written), ``names`` added to their innermost frames: those
    of ``wanted`` (the fields of the run's model configs) that the frame's code reads, by their
    own name or by an alias the model's code declares (:func:`aliases`:
    ``config.num_attention_heads`` reads GPT-2's ``n_head``). Never raises: a traceback that
    cannot be read comes back as it was; nothing to add without ``wanted``."""
    plain = [dict(tb.raw) for tb in tracebacks]
    if not wanted:
        return plain
    cache: dict[str, ast.AST | None] = {}
    try:
        inner = [tb.frames[::-1][:MAX_ANNOTATED] for tb in tracebacks]
        alias = aliases({os.path.dirname(fr.file or "") for frames in inner for fr in frames},
                        cache)
        out: list[dict[str, Any]] = []
        for tb, copy, innermost in zip(tracebacks, plain, inner, strict=True):
            frames = [dict(fr.raw) for fr in tb.frames]
            for back, frame in enumerate(innermost):
                if found := _frame_names(frame, wanted, alias, cache):
                    frames[-1 - back]["names"] = found
            out.append({**copy, "frames": frames} if tb.frames else copy)
        return out
    except Exception:  # a traceback we cannot read costs nothing else
        return plain


def _frame_names(frame: Frame, wanted: Collection[str], alias: Mapping[str, str],
                 cache: dict[str, ast.AST | None]) -> list[str]:
    """Those of ``wanted`` that ``frame``'s code reads, sorted."""
    tree = _tree(frame.file or "", cache)
    names: list[str] = []
    for n in names_at(tree, frame.line or 0) if tree is not None else ():
        field = n if n in wanted else alias.get(n, "")
        if field in wanted and field not in names:
            names.append(field)
    return sorted(names)


#: Configuration modules looked at per folder of a failing frame (``configuration_gpt2.py``).
MAX_CONFIG_FILES = 8


def aliases(folders: Iterable[str], cache: dict[str, ast.AST | None] | None = None
            ) -> dict[str, str]:
    """Other names of config fields, as the model code beside a failing frame declares them:
    the ``attribute_map = {"alias": "field"}`` of the configuration classes in the frame's
    folder (Hugging Face's convention: GPT-2's ``num_attention_heads`` is its ``n_head``).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "configuration_toy.py").write_text(
    ...     "class ToyConfig:\\n    attribute_map = {'num_attention_heads': 'n_head'}\\n")
    >>> aliases([str(d)])
    {'num_attention_heads': 'n_head'}
    """
    cache = {} if cache is None else cache
    out: dict[str, str] = {}
    for folder in sorted(f for f in folders if f):
        try:
            files = sorted(e.path for e in os.scandir(folder) if e.name.startswith(
                "configuration_") and e.name.endswith(".py") and e.is_file())
        except OSError:
            continue
        for path in files[:MAX_CONFIG_FILES]:
            tree = _tree(path, cache)
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                        isinstance(t, ast.Name) and t.id == "attribute_map" for t in node.targets):
                    for k, v in zip(node.value.keys, node.value.values, strict=False):
                        if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and \
                                isinstance(k.value, str) and isinstance(v.value, str):
                            out.setdefault(k.value, v.value)
    return out


def config_keys(models: Models) -> set[str]:
    """Every key of every model config in ``[models]`` (read as its record), at any depth.

    >>> from runsnap.snapshot.records import Models
    >>> sorted(config_keys(Models({"models": {"--model-path": {"config": {
    ...     "rope_theta": 1, "text_config": {"max_position_embeddings": 8}}}}})))
    ['max_position_embeddings', 'rope_theta', 'text_config']
    """
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                out.add(str(k))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for model in models.models.values():
        if model.config:
            walk(model.config.raw)  # config.json as written: every key, at any depth
    return out
