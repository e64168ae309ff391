r"""What decides an undecided verdict: ``runsnap bisect`` where it can run, else what would.

Bisect applies variables, command-line options and arguments, the working directory and a
model's ``config.json`` fields (runsnap/experiments/applying.py); it cannot install packages,
check out a commit or change the host. And it judges trials against two runs that ended:
with a side that never ran (``runsnap diff A``: B is the context captured now) there is
nothing to judge by. So the verdict names bisect only over candidates it can apply, between
two runs, and says otherwise what would decide.

    >>> from runsnap.diffing.result import Difference
    >>> env = Difference("env", "NCCL_ALGO", "added", None, "Ring")
    >>> pkg = Difference("packages", "torch", "upgraded", "2.3.0", "2.4.0")
    >>> print(decides([env, pkg], 7, "different").replace(" (", "\n("))
    `runsnap bisect` decides in about 7 launches
    (it cannot apply packages torch: a launch with it changed back decides that)
    >>> decides([pkg], 5, "different")
    'a launch with packages torch changed back decides (runsnap bisect cannot apply it)'
    >>> print(decides([env, pkg], 7, "").replace(": ", ":\n"))
    launch B and diff the two runs:
    the evidence of a run, or runsnap bisect between them, decides
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Differences are read by their fields only (section, key, path, where): this module is used
# by runsnap.diffing.result, and importing it back would make a cycle.

__all__ = ["applicable", "decides"]


def applicable(d: Any) -> bool:
    """Whether bisect can apply ``d`` to a launch."""
    path = tuple(d.path)
    if d.section == "env":
        return True
    if d.section == "command":
        return len(path) > 1 and path[1] in ("options", "positionals", "cwd")
    return d.section == "models" and len(path) > 3 and path[2] == "config"


def decides(candidates: Sequence[Any], launches: int, outcome: str) -> str:
    """The words after "undecided between K candidates (...):" (module docstring)."""
    if not outcome:
        return ("launch B and diff the two runs: the evidence of a run, or runsnap bisect "
                "between them, decides")
    cannot = [d for d in candidates if not applicable(d)]
    names = ", ".join(d.where for d in cannot[:3]) + (", …" if len(cannot) > 3 else "")
    if len(cannot) == len(candidates):
        return (f"a launch with {names} changed back decides (runsnap bisect cannot apply "
                f"{'it' if len(cannot) == 1 else 'them'})")
    head = f"`runsnap bisect` decides in about {launches} launches"
    if not cannot:
        return head
    return (f"{head} (it cannot apply {names}: a launch with "
            f"{'it' if len(cannot) == 1 else 'them'} changed back decides that)")
