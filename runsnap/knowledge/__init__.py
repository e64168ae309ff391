"""What runsnap knows, as code beside its data: variable families, noise, known names and
misspellings (:mod:`~runsnap.knowledge.env`), the core packages of the stacks
(:mod:`~runsnap.knowledge.packages`), the model config fields that matter
(:mod:`~runsnap.knowledge.models`), and the secret rules (:mod:`~runsnap.knowledge.secrets`:
names, token shapes, password options, the user's own additions) that :mod:`runsnap.redact`,
the only module that decides what is a secret, applies.

Diff ranks with this knowledge; check, who-reads, reports and redaction share it.
"""

from __future__ import annotations

import os

__all__ = ["rule_lines"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def rule_lines(name: str) -> list[list[str]]:
    """The rules of the data file ``name`` here: one list of tab-separated fields a line, with
    blank lines and ``#`` comments left out.

    Read with :func:`open` beside this module (importlib.resources would cost every capture an
    import it does not otherwise need).

    >>> rule_lines("env-noise.tsv")[0][0]
    'PWD'
    """
    with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
        text = fh.read()
    return [line.rstrip().split("\t") for line in text.splitlines()
            if line.strip() and not line.startswith("#")]
