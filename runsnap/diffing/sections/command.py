"""``[command]``: options one by one, the remaining arguments position by position, the
executable and the working directory (argv split by :mod:`runsnap.base.argv`, as capture splits it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.base.argv import positionals
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import keyed, locator
from runsnap.diffing.written import record
from runsnap.knowledge.options import reporting_option
from runsnap.snapshot.records import Command

__all__ = ["compare", "score"]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """argv option by option (``--tp`` added, removed, given another value), the remaining
    arguments position by position, the resolved executable (same ``python``, another
    interpreter) and the working directory."""
    ca, cb = record(Command, a), record(Command, b)
    out = keyed("command", ca.options, cb.options, "--{}",
                under=("options",), name="--{}")
    pa, pb = positionals(ca.argv), positionals(cb.argv)
    if pa != pb:
        if len(pa) == len(pb):
            for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
                if x != y:
                    out.append(Difference(
                        "command", "program" if i == 0 else f"argument {i}", "changed", x, y,
                        path=("command", "program") if i == 0 else locator("command", "positionals", i)))
        else:
            import difflib  # seldom needed: not on every diff's start-up

            evidence = tuple(line for line in difflib.ndiff(pa, pb) if line[:1] in "+-")
            out.append(Difference("command", "arguments", "changed", pa, pb, evidence=evidence,
                                  path=("command", "argv")))
    ra, rb = ca.executable_real or "", cb.executable_real or ""
    if (ra or rb) and ra != rb:
        ea, eb = ca.executable or "", cb.executable or ""
        evidence = (f"A: {ea} -> {ra}", f"B: {eb} -> {rb}")
        out.append(Difference("command", "executable", "changed", ra or None, rb or None,
                              evidence=evidence, path=("command", "executable")))
    if ca.cwd != cb.cwd and (ca.cwd or cb.cwd):
        out.append(Difference("command", "cwd", "changed", ca.cwd, cb.cwd,
                              path=("command", "cwd")))
    return out


def score(d: Difference, rules: RankContext) -> Verdict:
    """Launch options (88) and arguments (86): the program was asked for something else; the
    executable (84): the same command name runs another program; the working directory (30):
    relative paths resolve differently; an option naming another directory that holds the same
    model (20): the model section proves nothing changed but the path; an option whose value is
    where a run wrote (25): a destination, not an input; an option that only says how often,
    where or how loudly the program reports (50, :func:`~runsnap.knowledge.options.
    reporting_option`). The last two score under a likely cause
    (:data:`runsnap.diffing.confidence.LIKELY`): without evidence from the runs, never a
    candidate."""
    if d.key in rules.same_models:
        return 20, "another path to the same model (config, weights and side files equal)", False
    if d.key in rules.outputs:
        return 25, (f"where the program writes its output ({rules.outputs[d.key]}): a "
                    "destination, not an input"), False
    if d.key.startswith("--") and reporting_option(d.key):
        return 50, ("a reporting option: how often, where or how loudly the program reports, "
                    "not what it computes"), False
    if d.key.startswith("--"):
        return 88, "a launch option: the program was asked for something else", False
    if d.key == "executable":
        return 84, "the command resolves to another program (PATH or a virtualenv)", False
    if d.key == "cwd":
        return 30, "relative paths and files found from the working directory change", False
    return 86, "the program or its arguments differ", False
