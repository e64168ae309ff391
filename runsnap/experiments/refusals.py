"""Why a bisection refuses to start, or stops without a cause, in words: the differences it
cannot apply named with what differs, GOOD's own launch going bad here, trials judged neither
good nor bad (:mod:`runsnap.experiments.bisecting`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from runsnap.diffing.wording import short

if TYPE_CHECKING:
    from runsnap.experiments.applying import Plan, Skipped

__all__ = ["blocking_named", "code_skipped", "not_good_here", "refusals", "unclear"]


def blocking_named(s: Skipped) -> str:
    """A difference bisect cannot apply, named with what differs: a package's versions, the
    entries of a list (``sys.path``: the folder a ``.pth`` added) in one run only."""
    if isinstance(s.a, list) and isinstance(s.b, list):
        moved = [f"+{e}" for e in s.b if e not in s.a] + [f"-{e}" for e in s.a if e not in s.b]
        return f"{s.where} ({', '.join(_tail(str(m)) for m in moved[:2]) or 'reordered'})"
    a, b = short(s.a, 24), short(s.b, 24)
    return s.where if len(a) + len(b) > 50 else f"{s.where} ({a} -> {b})"


def _tail(text: str, limit: int = 36) -> str:
    """The end of a long path, where the folders differ.

    >>> _tail("+/tmp/pytest-of-root/pytest-158/test_packages/lib-new", 20)
    '+…t_packages/lib-new'
    """
    return text if len(text) <= limit else text[0] + "…" + text[-(limit - 2):]


def refusals(the_plan: Plan) -> list[str]:
    out = []
    if the_plan.program is not None:
        p = the_plan.program
        out.append(f"GOOD and BAD run different programs ({p.where}: {p.a} vs {p.b})")
    blocking = [s for s in the_plan.skipped if s.blocking]
    if blocking:
        shown = ", ".join(blocking_named(s) for s in blocking[:4])
        more = f" and {len(blocking) - 4} more" if len(blocking) > 4 else ""
        out.append(f"{len(blocking)} difference{'s' if len(blocking) != 1 else ''} cannot be "
                   f"applied ({shown}{more}: {blocking[0].why})")
    return out


def code_skipped(the_plan: Plan) -> list[Any]:
    """The skipped differences of the code itself (commits, uncommitted edits), first."""
    return [s for s in the_plan.skipped if s.section == "git" and s.blocking]


#: The words of a skipped difference's reason that say what the user does to put a file back
#: (:func:`runsnap.experiments.filestate.what_to_do`).
_PUT_BACK = "put GOOD's content back"


def not_good_here(the_plan: Plan, trial: int) -> str:
    """Why GOOD's own launch goes bad here, pointing at what bisect could not apply."""
    put_back = [s for s in the_plan.skipped if s.blocking and _PUT_BACK in s.why]
    code = [s for s in code_skipped(the_plan) if s not in put_back]
    rest = [s for s in the_plan.skipped if s.blocking and s not in code and s not in put_back]
    if put_back and not code:  # a file no launch can put back: what the user does
        first = put_back[0]
        hint = f"{first.where} differs and no launch can put it back: " \
            + first.why[first.why.index(_PUT_BACK):]
    elif code:
        named = ", ".join(f"{s.where} ({_words(s.a)} -> {_words(s.b)})" for s in code[:3])
        hint = (f"the code differs and is not applied: {named}"
                f"{' and more' if len(code) > 3 else ''}; put GOOD's code back (runsnap diff "
                "--patch GOOD BAD shows the edits) and bisect again")
    elif rest:
        hint = ("the cause is among what cannot be applied: "
                + ", ".join(s.where for s in rest[:4]))
    else:
        hint = "GOOD's launch does not behave here as it did when it was captured"
    return (f"GOOD's own launch, with nothing applied, goes bad here (trial {trial}): {hint}")


def unclear(runs: Sequence[Any]) -> str:
    """Why a bisection stops when its first trials are judged neither good nor bad: no verdict
    on any later trial could be trusted."""
    said = "; ".join(f"trial {r.trial}: {r.why}" for r in runs[:2])
    return (f"the first trials went neither good nor bad ({said}): runsnap cannot tell GOOD's "
            "behaviour from BAD's in these launches; say what bad means with --test CMD")


def _words(value: Any) -> str:
    return "none" if value is None else str(value)
