"""``[command]``: options one by one, the remaining arguments position by position, the
executable and the working directory (argv split by :mod:`runsnap.base.argv`, as capture splits it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from runsnap.base.argv import positionals
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import keyed, locator
from runsnap.diffing.written import record
from runsnap.knowledge.options import parallelism_option, reporting_option
from runsnap.snapshot.records import Command

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records_host import ParsedOption

__all__ = ["compare", "parsed_alike", "score"]

#: The score of an option that differs on the command lines but that both runs' parsers set to
#: the same value: under :data:`runsnap.diffing.confidence.LIKELY`, the program saw no difference.
PARSED_ALIKE = 22


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
    model (20): the model section proves nothing changed but the path; an option both runs'
    parsers set to the same value (22, :func:`parsed_alike`): the program saw no difference;
    an option whose value is where a run wrote (25): a destination, not an input; an option
    that only says how often, where or how loudly the program reports (50,
    :func:`~runsnap.knowledge.options.reporting_option`). The last four score under a likely cause
    (:data:`runsnap.diffing.confidence.LIKELY`): without evidence from the runs, never a
    candidate. A thread or job count (70, :func:`~runsnap.knowledge.options.
    parallelism_option`) stays a candidate, below the options that decide what is computed;
    one that is 2 or more in both runs (55: how many, not whether the work is parallel) is no
    candidate without evidence, unless a run failed as one that ran out of a resource does
    (``rules.ran_out``)."""
    alike = rules.parsed_alike.get(d.key)
    if alike:
        return PARSED_ALIKE, alike, False
    if d.key in rules.same_models:
        return 20, "another path to the same model (config, weights and side files equal)", False
    if d.key in rules.outputs:
        return 25, (f"where the program writes its output ({rules.outputs[d.key]}): a "
                    "destination, not an input"), False
    if d.key.startswith("--") and reporting_option(d.key):
        return 50, ("a reporting option: how often, where or how loudly the program reports, "
                    "not what it computes"), False
    if d.key.startswith("--") and parallelism_option(d.key):
        if _both_parallel(d) and not rules.ran_out:
            return 55, (f"a thread or job count, parallel in both runs ({d.a} and {d.b}): how "
                        "many work at once, not whether, nor what is computed"), False
        return 70, "a thread or job count: how many work at once, not what is computed", False
    if d.key.startswith("--"):
        return 88, "a launch option: the program was asked for something else", False
    if d.key == "executable":
        return 84, "the command resolves to another program (PATH or a virtualenv)", False
    if d.key == "cwd":
        return 30, "relative paths and files found from the working directory change", False
    return 86, "the program or its arguments differ", False


def _both_parallel(d: Difference) -> bool:
    """Whether both runs gave the count option of ``d`` a whole number of 2 or more.

    >>> from runsnap.diffing.result import Difference
    >>> _both_parallel(Difference("command", "--threads", "changed", "2", "4"))
    True
    >>> _both_parallel(Difference("command", "--threads", "changed", "1", "4"))
    False
    """
    try:
        return min(int(str(d.a)), int(str(d.b))) >= 2
    except ValueError:
        return False


def parsed_alike(a: Snapshot, b: Snapshot, found: Iterable[Difference]) -> dict[str, str]:
    """The options of ``found`` that differ on the two command lines but that both runs'
    option parsers set to the same value (``[runtime] parsed_options``, recorded by the tracing
    hook, the option's dest the same in both), with the reason to give: ``B's --node-rank 0 is
    what A parsed too (its default): the program sees no difference``. Where a run was not
    traced, or its program parsed no options, nothing: a value cut short, redacted or not a
    plain literal (``<Path>``) is never taken for equal, nor an option whose action is the
    program's own ``Action`` class (its call may do more than set the value), nor one whose
    recorded parse did not read it in a run that gave it (``given``: another program's parser
    may declare the same string)."""
    pa, pb = a.records.runtime.parsed_options, b.records.runtime.parsed_options
    if not pa or not pb:
        return {}
    given = ({f"--{k}" for k in a.records.command.options},
             {f"--{k}" for k in b.records.command.options})
    out = {}
    for d in found:
        if d.section != "command" or not d.key.startswith("--"):
            continue
        x, y = pa.get(d.key), pb.get(d.key)
        if (x is None or y is None or not x.dest or x.dest != y.dest or x.value != y.value
                or not _comparable(x.value) or x.custom or y.custom):
            continue
        if (d.a is not None and not x.given) or (d.b is not None and not y.given):
            continue  # the parse recorded is not known to be the one that received it
        out[d.key] = _alike_reason(d, pa, given)
    return out


def _comparable(value: str | None) -> bool:
    """Whether a parsed value's text stands for the value itself: not a type's name
    (``<Path>``), a redacted secret (``<redacted:...>``) or a text cut short (``...``)."""
    return bool(value) and not str(value).startswith("<") and not str(value).endswith("...")


def _alike_reason(d: Difference, parsed: Mapping[str, ParsedOption],
                  given: tuple[set[str], set[str]]) -> str:
    """Why an option that differs on the command lines makes no difference to the program.

    ``given``: the options on A's and B's command lines, to say whether the run without the
    option took the default or another spelling of it."""
    entry = parsed[d.key]
    spellings = sorted(k for k, v in parsed.items() if v.dest == entry.dest and k != d.key)
    see = "the program sees no difference"
    if d.change == "changed":
        return (f"{d.key} {_shown(d.a)} in A and {_shown(d.b)} in B parse to the same value "
                f"({entry.dest} = {entry.value}): {see}")
    one, other = ("B", "A") if d.change == "added" else ("A", "B")
    value = d.b if d.change == "added" else d.a
    alias = [k for k in spellings if k in given[0 if other == "A" else 1]]
    how = f"given as {alias[0]}" if alias else "its default"
    return f"{one}'s {d.key}{_shown(value, ' ')} is what {other} parsed too ({how}): {see}"


def _shown(value: Any, lead: str = "") -> str:
    """An option's value as the command line gave it (a bare flag: nothing)."""
    if value is True:
        return ""
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    return f"{lead}{value}"
