"""Whose decision a read was: the frames of a read's call stack, judged where the read happened.

The tracing hook records each read site's stack, innermost first, each frame as
``path:LINE in FUNC`` with ``path`` relative to its ``sys.path`` entry (``shutil.py``,
``huggingface_hub/constants.py``, ``launch.py``). A frame belongs to Python's own library
(its top-level module is in ``[runtime] stdlib_modules``), to an installed package
(``[runtime.modules]`` says where it came from) or to the program. Walking from the read
outwards to the program's first frame:

* a frame listed in ``knowledge/env-generic-readers.tsv`` (``shutil.get_terminal_size``,
  ``argparse``, ``gettext``, ``rich``, ``tqdm``...) read it on behalf of a generic feature
  (terminal size, locale, colours, logging verbosity, help formatting): not the program's
  decision, whatever the program did next;
* otherwise the read is the decision of the innermost frame that is not Python's own
  library (a package's settings read is the package's, ``os.environ.get`` in the program is
  the program's).

The interpreter's own start-up reads (``knowledge/env-interpreter.tsv``, ``PYTHON*``) are
evidence of how Python ran, not of a decision: :func:`interpreter_only`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runsnap.base.records import FrozenRecord
from runsnap.diffing.runfacts import SITE, STDLIB, RunFacts
from runsnap.knowledge.readers import generic_feature, interpreter_setting
from runsnap.snapshot.records_host import ReadSite, VariableRead

__all__ = ["Frame", "decisive_sites", "frames_of", "generic_frame", "generic_reason",
           "interpreter_only", "origin", "top_module"]


class Frame(FrozenRecord):
    """One frame of a read's call stack."""

    path: str
    """As the hook recorded it (relative to its ``sys.path`` entry, or absolute)."""

    line: int
    function: str
    origin: str
    """``stdlib``, ``package`` or ``program`` (:func:`origin`)."""

    @property
    def top(self) -> str:
        """The top-level module the frame's file belongs to (``huggingface_hub``)."""
        return top_module(self.path)

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function}"


def top_module(path: str) -> str:
    """The top-level module of a frame's relative file.

    >>> top_module("huggingface_hub/constants.py"), top_module("shutil.py")
    ('huggingface_hub', 'shutil')
    """
    head = path.replace("\\", "/").lstrip("/").split("/", 1)[0]
    return head[:-3] if head.endswith(".py") else head


def origin(path: str, facts: RunFacts) -> str:
    """Where a frame's code comes from: ``stdlib``, ``package`` (an installed distribution or
    another ``site-packages`` folder) or ``program`` (the rest: the script, its own modules).

    >>> f = RunFacts("A", True, False, {}, {"rich": {"origin": "site-packages"}}, False, None,
    ...              (), (), stdlib=frozenset({"shutil"}))
    >>> origin("shutil.py", f), origin("rich/console.py", f), origin("app.py", f)
    ('stdlib', 'package', 'program')
    """
    if path.startswith("<"):
        return "stdlib"  # <frozen importlib._bootstrap>, <string>
    if path.startswith("/"):
        if "/site-packages/" in path or "/dist-packages/" in path:
            return "package"
        return "stdlib" if STDLIB.search(path) else "program"
    top = top_module(path)
    if top in facts.stdlib:
        return "stdlib"
    mod = facts.module(top)
    if mod is not None and (mod.origin in ("site-packages", "editable") or mod.dist):
        return "package"
    return "program"


def frames_of(stack: Iterable[Any], facts: RunFacts) -> list[Frame]:
    """A recorded stack as :class:`Frame` records, innermost first (unparsable entries left out)."""
    out: list[Frame] = []
    for entry in stack:
        m = SITE.match(str(entry))
        if m is not None:
            out.append(Frame(m["path"], int(m["line"]), m["func"], origin(m["path"], facts)))
    return out


def generic_frame(stack: Iterable[Any], facts: RunFacts) -> tuple[Frame, str] | None:
    """The frame that read for a generic feature and the feature (``the terminal size``),
    looking at the frames from the read out to the program's first, or to the module body the
    read ran in: a read at a module's import is that module's, whatever import brought it in
    (``huggingface_hub/constants.py`` reads ``HF_HOME`` when ``utils/tqdm.py``, a progress
    bar's code, imports it); None when the read was a decision of a package or of the
    program."""
    for frame in frames_of(stack, facts):
        if frame.origin == "program":
            return None
        feature = generic_feature(frame.path, frame.function)
        if feature:
            return frame, feature
        if frame.function == "<module>":
            return None
    return None


def generic_reason(stack: Iterable[Any], facts: RunFacts) -> str | None:
    """Why a read was made for a generic feature (``the terminal size (shutil.py:1408 in
    get_terminal_size)``), or None (:func:`generic_frame`)."""
    got = generic_frame(stack, facts)
    return None if got is None else f"{got[1]} ({got[0]})"


def decisive_sites(got: VariableRead, facts: RunFacts) -> tuple[list[ReadSite], list[str]]:
    """The read sites of one variable that were a decision of the program or a package, and
    the reasons of those left out (made for a generic feature)."""
    kept: list[ReadSite] = []
    generic: list[str] = []
    for site in got.sites:
        why = generic_reason(site.stack, facts)
        if why is None:
            kept.append(site)
        elif why not in generic:
            generic.append(why)
    return kept, generic


def interpreter_only(name: str, got: VariableRead, facts: RunFacts) -> str | None:
    """What the interpreter does with ``name`` when its reads were only the interpreter's own
    (native, at start-up, or in Python's own library), else None."""
    why = interpreter_setting(name)
    if why is None:
        return None
    for site in got.sites:
        if any(f.origin != "stdlib" for f in frames_of(site.stack, facts)):
            return None
    return why
