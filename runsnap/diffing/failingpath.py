"""The failing path of a run: the frames of the traceback that ended it, and whether a read of
a variable, or a package's or file's code, lies on them. :mod:`runsnap.diffing.evidence` turns
what is found here into its strongest kind of evidence (``failing-path``).

Only a failure the other run did not share counts (:func:`runsnap.diffing.runfacts.
differential`), and a read counts by the frames where it happened
(:mod:`runsnap.diffing.attribution`):

* the read's stack meets the traceback in the function that raised (rank 0) or, for the
  program's own code, in its caller (rank 1): a program that fails always passes through
  ``main``, and a read in ``main`` is not on the failing path of an error raised three calls
  below it;
* it meets the traceback in a package's function, however far below the raise: a library
  function that read its setting and then made the call that raised decided with it (rank
  by depth, at most 2);
* a frame that was running an import when the read happened (``import scorelib`` in the
  program's module body, the read in scorelib's) is not shared: the read was the imported
  module's, at import (next rule), whatever line of that frame then failed;
* the read was made at import, by a package whose code is on the failing traceback: at module
  level, or in a function of that package the module's body called (rank 2), and only where
  the failing frame lies in the imported module's own folder or below it (a read at import of
  ``torch/_functorch/config.py`` is not on the path of an error raised in
  ``torch/distributed/``: a large package's import reads its every part's settings, through a
  helper elsewhere too: ``torch/utils/_config_module.py``);
* a read made on behalf of a generic feature (terminal size, locale, help formatting:
  ``knowledge/env-generic-readers.tsv``) does not count, unless the failure was raised in
  that feature's own package (a progress-bar or logging library that failed on the setting
  it read: ``ValueError: Level 'WARN' does not exist`` from the logging library that read
  ``LOGURU_LEVEL``).
"""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.base.records import FrozenRecord
from runsnap.diffing.attribution import Frame, frames_of, generic_frame
from runsnap.diffing.runfacts import STDLIB, RunFacts, scanned_as
from runsnap.diffing.written import written
from runsnap.knowledge.readers import generic_feature, native_call
from runsnap.snapshot.records import Traceback

__all__ = ["called_on_failing_path", "code_on_failing_path", "on_failing_path",
           "opened_on_failing_path"]


class _TbFrame(FrozenRecord):
    file: str
    line: int
    function: str
    depth: int
    """Frames of the program or a package below this one, 0 for the one that raised; -1 for
    a frame of Python's own library (not a level)."""
    package: bool
    """The frame's code is an installed package's (``site-packages``)."""
    line_bound: bool = False
    """Only a read at this very line meets it: the line of a function that raised another
    exception while handling this one, where the call that raised this one was made."""


def _chain(facts: RunFacts) -> list[Traceback]:
    """The failing traceback, then the exception it was raised while handling, and so on:
    an earlier traceback printed whose outermost frame is the function that raised the later
    one (``except LocalEntryNotFoundError as e: raise OSError(...) from e`` in
    ``cached_files``: the first exception's traceback starts at the call in that function's
    ``try``). A worker's traceback printed before its launcher's is no cause of it."""
    tb = facts.traceback
    chain = [tb] if tb is not None and tb.frames else []
    rest = list(facts.earlier)
    while chain and rest:
        inner = chain[-1].frames[-1]
        cause = next((t for t in reversed(rest) if t.frames
                      and t.frames[0].function == inner.function
                      and str(written(t.frames[0], "file")) == str(written(inner, "file"))), None)
        if cause is None:
            break
        chain.append(cause)
        rest.remove(cause)
    return chain


def _own_frames(tb: Traceback, line_bound_first: bool = False) -> list[_TbFrame]:
    out: list[_TbFrame] = []
    depth = 0
    frames = list(reversed(tb.frames))
    for i, f in enumerate(frames):
        file = str(written(f, "file"))
        own = not STDLIB.search(file)
        out.append(_TbFrame(file, int(f.line or 0), str(written(f, "function")),
                            depth if own else -1,
                            "/site-packages/" in file or "/dist-packages/" in file,
                            line_bound_first and i == len(frames) - 1))
        if own:
            depth += 1
    return out


def _frames(facts: RunFacts) -> list[_TbFrame]:
    """The failing traceback's frames, innermost first (empty when the failure is shared).
    Where the exception was raised while handling another that a call of the same function
    raised (:func:`_chain`), that call's frames come first, counted from their own raise: a
    read in a call the handled exception came out of (a token fetched inside the download that
    failed) lies as deep as that call, not in the function that re-raised; a read at any other
    line of that function stays the re-raising function's own."""
    if not facts.traceback or not facts.failed or facts.shared_failure:
        return []
    chain = _chain(facts)
    out: list[_TbFrame] = []
    for cause in reversed(chain[1:]):  # the first exception's frames first
        out.extend(_own_frames(cause, line_bound_first=True))
    return out + _own_frames(chain[0]) if chain else []


def _same_file(tb_file: str, rel: str) -> bool:
    """Whether a traceback's file (absolute, as printed) is the site's (relative) file."""
    tb_file, rel = tb_file.replace("\\", "/"), rel.replace("\\", "/")
    return tb_file == rel or tb_file.endswith("/" + rel) or rel.endswith("/" + tb_file)


def _raised(facts: RunFacts) -> str:
    """The type of the exception raised first (:func:`_chain`): where the failing frames
    begin."""
    chain = _chain(facts)
    tb = chain[-1] if chain else facts.traceback
    return str((tb.type if tb else None) or "an error")


def _raised_in(generic: tuple[Frame, str], frames: Sequence[_TbFrame]) -> bool:
    """Whether the frame that raised (the innermost outside Python's own library) is code of
    the generic feature that read (``generic``: its frame and the feature, from
    :func:`~runsnap.diffing.attribution.generic_frame`): a file its rule covers, not only its
    package (``loguru/*`` is all of loguru; ``transformers/utils/logging.py`` is no part of
    ``transformers/utils/loading_report.py``, which raised on a checkpoint's shapes)."""
    raised = next((f for f in frames if f.depth == 0), None)
    top = generic[0].top
    if raised is None or not top:
        return False
    file = raised.file.replace("\\", "/")
    if f"/{top}/" not in file and not file.endswith(f"/{top}.py"):
        return False
    rel = top + file[file.rindex(f"/{top}/") + len(top) + 1:] if f"/{top}/" in file \
        else f"{top}.py"
    return generic_feature(rel, raised.function) == generic[1]


def _meets(stack: Sequence[Frame], frames: Sequence[_TbFrame]
           ) -> tuple[Frame, _TbFrame] | None:
    """The deepest frame of the failing traceback that is also a frame of the read's stack
    and counts by the rules above, with the stack's frame. A frame outside a module body the
    read ran in (``import scorelib`` on the program's line 3, the read in scorelib's body)
    is never shared: the read was that module's decision at its import (:func:`_import_read`),
    not the frame's, whatever line of the same function then failed."""
    for tb in frames:  # innermost first: the deepest shared frame wins
        if tb.depth < 0:
            continue
        for i, entry in enumerate(stack):
            if any(inner.function == "<module>" for inner in stack[:i]):
                break  # the frame ran an import, and the read was that module's, at import
            if entry.function == tb.function and _same_file(tb.file, entry.path) and (
                    not tb.line_bound or entry.line == tb.line):
                if tb.depth <= 1 or tb.package:
                    return entry, tb
                return None
    return None


def _package_dir(facts: RunFacts, top: str) -> str | None:
    mod = facts.module(top)
    file = str(mod.file or "") if mod is not None else ""
    if not file or mod is None or mod.origin not in ("site-packages", "editable"):
        return None
    return file.rsplit("/", 1)[0] if file.endswith("/__init__.py") else file


def _import_read(stack: Sequence[Frame], reader: RunFacts, frames: Sequence[_TbFrame]
                 ) -> tuple[Frame, _TbFrame] | None:
    """A read at module level while a package was imported, and a frame of that package's
    code on the failing traceback."""
    own = [f for f in stack if f.origin != "stdlib"]
    if not own or own[0].origin != "package":
        return None
    # the read is the module's own, at import: at module level, or in a function of the same
    # package that the module's body called (``LEVEL = env("LOGURU_LEVEL", ...)``)
    body = next((i for i, f in enumerate(own) if f.function == "<module>"), None)
    if body is None or any(f.top != own[0].top for f in own[: body + 1]):
        return None
    where = _package_dir(reader, own[0].top)
    if where is None:
        return None
    # the module imported and the code that failed are one part of the package: the failing
    # frame lies in the imported module's own folder or below it (a read in ``torch/__init__.py``
    # covers all of torch; one in ``torch/_functorch/config.py`` not ``torch/distributed/``);
    # the module whose body ran, not the helper it called (``torch/_inductor/config.py``'s
    # settings, read through ``torch/utils/_config_module.py``, are not ``torch/utils/data``'s)
    part = own[body].path.replace("\\", "/").lstrip("/").rpartition("/")[0].partition("/")[2]
    where = f"{where}/{part}" if part and not where.endswith(".py") else where
    for tb in frames:
        if tb.depth >= 0 and (tb.file == where or tb.file.startswith(where + "/")):
            return own[0], tb
    return None


def on_failing_path(name: str, runs: Sequence[RunFacts], *, imports: bool = True
                    ) -> tuple[str, int] | None:
    """(sentence, rank) for the read of ``name`` nearest the failing run's raise (see the
    module's rules), or None when no read is on the failing path. ``imports=False`` leaves out
    reads at the import of a package on the failing traceback (the weakest rule)."""
    best: tuple[str, int] | None = None
    for failing in (v for r in runs for v in r.views()):
        frames = _frames(failing)
        if not any(f.depth >= 0 for f in frames):
            continue
        innermost = next(f for f in frames if f.depth >= 0)
        # a traced failing run's own reads: a read only the other run made (at a line the
        # failing run never reached) is no read on the failing run's path
        for reader in ((failing,) if failing.traced else runs):
            got = reader.reads(name)
            if got is None:
                continue
            for site in got.sites:
                raw = site.stack
                if not raw:
                    continue
                generic = generic_frame(raw, reader)
                if generic is not None and not _raised_in(generic, frames):
                    continue
                stack = frames_of(raw, reader)
                met = _meets(stack, frames)
                if met is not None:
                    entry, tb = met
                    rank = min(tb.depth, 2)
                    if tb.depth == 0:
                        where = f"the function that raised {_raised(failing)} at :{innermost.line}"
                    elif tb.package and tb.depth > 1:
                        where = (f"a function of a package on the failing traceback, which then "
                                 f"called on to where {_raised(failing)} was raised "
                                 f"({innermost.file.rsplit('/', 1)[-1]}:{innermost.line} in "
                                 f"{innermost.function})")
                    else:
                        where = (f"which called {innermost.function}, where {_raised(failing)} "
                                 f"was raised at :{innermost.line}")
                    scan = f" (in a scan of the {scan} variables)" if (scan := scanned_as(got)) else ""
                    found = (f"read at {entry.path}:{entry.line} in {entry.function}{scan}, "
                             f"{where} (failing run {failing.label})", rank)
                else:
                    imp = _import_read(stack, reader, frames) if imports else None
                    if imp is None:
                        continue
                    entry, tb = imp
                    found = (f"read at import of {entry.top} ({entry.path}:{entry.line}), "
                             f"whose code is on the failing traceback: "
                             f"{tb.file.rsplit('/', 1)[-1]}:{tb.line} in {tb.function} "
                             f"({_raised(failing)}, failing run {failing.label})", 2)
                if best is None or found[1] < best[1]:
                    best = found
    return best


def opened_on_failing_path(stack: Sequence[str], run: RunFacts) -> tuple[str, int] | None:
    """(sentence, rank) when run ``run`` opened a file (``[runtime.data_files] stack``) in a
    function of its own failing traceback, by the rules a variable's read is judged by
    (:func:`on_failing_path`): the file's content went where the run failed, as a value read
    there did (``engine.json`` loaded in the module body that raised, beside a variable that
    body read too: the two are judged alike)."""
    for failing in run.views():
        frames = _frames(failing)
        if not any(f.depth >= 0 for f in frames):
            continue
        innermost = next(f for f in frames if f.depth >= 0)
        met = _meets(frames_of(stack, run), frames)
        if met is None:
            continue
        entry, tb = met
        where = (f"the function that raised {_raised(failing)} at :{innermost.line}"
                 if tb.depth == 0 else
                 f"which called on to where {_raised(failing)} was raised "
                 f"({innermost.file.rsplit('/', 1)[-1]}:{innermost.line} in {innermost.function})")
        return (f"opened at {entry.path}:{entry.line} in {entry.function}, {where} (failing "
                f"run {failing.label})", min(tb.depth, 2))
    return None


def code_on_failing_path(runs: Sequence[RunFacts], dirs: Sequence[str], what: str
                         ) -> tuple[str, int] | None:
    """(sentence, rank) for a failing traceback frame whose file is under one of ``dirs`` (a
    package's code, a changed file), or None."""
    for failing in (v for r in runs for v in r.views()):
        for f in _frames(failing):
            if f.depth < 0:
                continue
            for base in dirs:
                if base and (f.file.startswith(base.rstrip("/") + "/") or _same_file(f.file, base)):
                    root = base.rstrip("/").rpartition("/")[0]
                    short = f.file[len(root) + 1:] if root and f.file.startswith(root) else f.file
                    return (f"the failing traceback runs through {what}: {short}:{f.line} in "
                            f"{f.function} ({_raised(failing)}, failing run {failing.label})",
                            min(f.depth, 2))
    return None


def called_on_failing_path(name: str, runs: Sequence[RunFacts]) -> tuple[str, int] | None:
    """(sentence, rank) when ``name`` is read natively at a call the failing frame (or its
    caller) makes (``env-native-calls.tsv``: ``time.localtime`` reads ``TZ`` inside the C
    library, where neither the trace nor an ``LD_PRELOAD`` interposer sees it)."""
    for failing in (v for r in runs for v in r.views()):
        tb = failing.traceback or Traceback()
        for depth, frame in enumerate(reversed(tb.frames[-2:])):
            call = native_call(name, str(frame.code or ""))
            if call:
                where = (f"{str(written(frame, 'file')).rsplit('/', 1)[-1]}:{frame.line} "
                         f"in {frame.function or '?'}")
                return (f"read natively by {call}, called at {where}, where "
                        f"{tb.type or 'the error'} was raised (failing run "
                        f"{failing.label})", depth)
    return None
