"""Reads in their place: what nearly every process of a stack reads at start-up.

The OpenMP runtime reads ``OMP_*`` in its constructor, colour libraries read ``NO_COLOR``
at import, the interpreter reads ``PATH`` before the program runs: every process of a torch
or numpy stack does, whatever it goes on to do (``knowledge/env-ambient.tsv``, each row with
its source). A difference in such a variable, read only so (natively, in the module body of
a package's import, or on behalf of a generic feature: :mod:`runsnap.diffing.attribution`),
on no failing path and named by no error, is evidence of how the stack started, not of a
decision of the program: kind ``incidental``, scored by its name (at most 80), below the
program's own reads (91-93), launch options (84-88) and config fields, so it is never first
of an undecided list while one of those is a candidate. Where the rule says what the setting
decides and the runs record it, the decision is compared: ``PATH`` decides which executables
run, and when the runs resolved other ones (the command's executable, each Python process's
interpreter) the rule does not apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.diffing.attribution import frames_of, generic_frame
from runsnap.diffing.runfacts import RunFacts
from runsnap.knowledge.readers import ambient_setting

__all__ = ["ambient_reads", "executables"]


def executables(snap: Any) -> tuple[str, ...]:
    """The executables a run resolved: its command's (the real path when recorded) and each
    traced Python process's interpreter."""
    command = snap.get("command") or {}
    out = {str(command.get("executable_real") or command.get("executable") or "")}
    for proc in (snap.get("runtime") or {}).get("processes") or ():
        if isinstance(proc, Mapping) and proc.get("executable"):
            out.add(str(proc["executable"]))
    return tuple(sorted(out - {""}))


def _at_start_up(site: Mapping[str, Any], f: RunFacts) -> bool:
    """Whether a Python read site is a start-up read: for a generic feature, or in the module
    body of an installed package or Python's own library (an import), with no function of the
    program's own code on the way."""
    stack = site.get("stack") or ()
    if generic_frame(stack, f) is not None:
        return True
    frames = frames_of(stack, f)
    if any(fr.origin == "program" and fr.function != "<module>" for fr in frames):
        return False
    inner = next((fr for fr in frames if fr.origin != "stdlib"), None)
    return inner is None or inner.function == "<module>"


def ambient_reads(name: str, runs: Sequence[RunFacts], a: Any, b: Any) -> str | None:
    """The sentence of ``incidental`` evidence when ``name`` is a start-up setting of the
    stack that the runs read only at start-up (see the module's text), else None."""
    rule = ambient_setting(name)
    if rule is None:
        return None
    decides, who = rule
    if not any(f.reads(name) for f in runs):
        return None  # read by no process: the runs say "unread", which says more
    if decides == "executable":
        ea, eb = executables(a), executables(b)
        if ea != eb:
            return None  # what it decides differs: the command resolved another program
        return (f"read at start-up by every process ({who}); both runs resolved the same "
                f"executables ({', '.join(ea) or 'none recorded'}): not a decision here")
    for f in runs:
        got = f.reads(name)
        if not got:
            continue
        sites = [s for s in got.get("sites") or () if isinstance(s, Mapping)]
        if got.get("scan") or not all(_at_start_up(s, f) for s in sites):
            return None  # the program (or a package, in a function) read it for itself
    return (f"read at start-up by nearly every process of the stack ({who}), for the "
            f"{decides} every process takes, not a decision of the program")
