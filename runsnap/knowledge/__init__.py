"""What runsnap knows, as code beside its data: variable families, noise, known names and
misspellings (:mod:`~runsnap.knowledge.env`), the core packages of the stacks
(:mod:`~runsnap.knowledge.packages`), the model config fields that matter
(:mod:`~runsnap.knowledge.models`), and the secret rules (:mod:`~runsnap.knowledge.secrets`:
names, token shapes, password options, the user's own additions) that :mod:`runsnap.redact`,
the only module that decides what is a secret, applies.

Diff ranks with this knowledge; check, who-reads, reports and redaction share it.
"""

from __future__ import annotations

import fnmatch
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Glob", "name_list", "rule_lines"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def rule_lines(name: str) -> list[list[str]]:
    """The rules of the data file ``name`` here: one list of tab-separated fields a line, with
    blank lines and ``#`` comments left out.

    Read with :func:`open` beside this module (importlib.resources would cost every capture an
    import it does not otherwise need).

    >>> rule_lines("env-noise.tsv")[0][0]
    'PWD'
    """
    return [line.rstrip().split("\t") for line in _text(name).splitlines()
            if line.strip() and not line.startswith("#")]


def name_list(name: str) -> frozenset[str]:
    """The names of the data file ``name`` here, one a line after its leading ``#`` comments:
    the first field of :func:`rule_lines`, split from the whole text at once where the file
    has that shape (env-known-names.txt, ~2,000 names read by every capture of a command: a
    line at a time was ~1 ms of it).

    >>> "NCCL_P2P_DISABLE" in name_list("env-known-names.txt")
    True
    """
    text = _text(name)
    head = 0
    while text.startswith("#", head):
        head = text.find("\n", head) + 1 or len(text)
    body = text[head:]
    if "#" in body or "\t" in body:
        return frozenset(row[0] for row in rule_lines(name))
    return frozenset(body.split())


def _text(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
        return fh.read()


class Glob:
    """A shell glob over a name, as ``re.compile(fnmatch.translate(glob)).match``, made
    without compiling a regular expression for the usual shapes (a name, ``PREFIX*``,
    ``*SUFFIX``): the knowledge tables hold dozens of such globs, and compiling each was a
    measurable share of a capture.

    >>> [bool(Glob(g).match("NCCL_ALGO")) for g in ("NCCL_*", "*_ALGO", "NCCL_ALGO", "N?CL_*")]
    [True, True, True, True]
    >>> [bool(Glob(g).match("NCCL_ALGO")) for g in ("CUDA_*", "*_PID", "NCCL", "X[AB]*")]
    [False, False, False, False]
    """

    __slots__ = ("glob", "match")

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.match: Callable[[str], object]
        core = glob.strip("*")
        if any(c in core for c in "*?[") or not core or glob.count("*") > 1 \
                or (glob.startswith("*") and glob.endswith("*")):
            self.match = re.compile(fnmatch.translate(glob)).match
        elif glob.endswith("*"):
            self.match = lambda name: name.startswith(core)
        elif glob.startswith("*"):
            self.match = lambda name: name.endswith(core)
        else:
            self.match = core.__eq__

    def __repr__(self) -> str:
        return f"Glob({self.glob!r})"
