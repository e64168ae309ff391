"""A message that names an input by its words, not by its spelling: uvicorn's ``Exceeded
concurrency limit.`` is about ``--limit-concurrency``, aiohttp's ``Maximum request body size
1024 exceeded.`` about an app's ``--max-body-size``, without either printing the name.

An input's words are its name split at ``-``, ``_``, ``.`` and case changes, lower-cased,
those under three letters left out, and for a variable the family word its stack prefixes to
all of its names (``SGLANG``, ``VLLM``, ``NCCL``: ``knowledge/env-families.tsv``) left out too.
A message names the input when it holds every one of those words (at least two): the same
word, its plural, or a longer word the name abbreviates (``max`` in ``Maximum``, ``num`` in
``number``). Only what the failing side printed alone counts: the failing run's error, a
warning one run printed alone (rank :data:`runsnap.diffing.naming.WARNED`), and only while the
other run printed no line that holds the words too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from runsnap.diffing.naming import excerpt, texts
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts
from runsnap.knowledge import rule_lines
from runsnap.knowledge.env import noise_reason

__all__ = ["by_words", "message_words", "name_parts", "name_words"]

_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
#: A file's path in a message: from a ``/`` (or ``~/``, ``./``) to the next space, quote or
#: bracket, holding at least two ``/``-separated parts.
_PATH = re.compile(r"(?:~|\.{1,2})?/[^\s'\"()\[\]<>,:]*/[^\s'\"()\[\]<>,:]*")
#: The longest name word taken as an abbreviation of a longer message word (``max``, ``num``,
#: ``conf``); a longer one must be the message's word itself or its plural.
_ABBREVIATION = 4
#: Words that end in ``s`` and are no plural: a URL scheme's secure form is another scheme
#: (``HTTPS_PROXY`` is not named by ``HTTPConnectionPool``).
_NOT_PLURALS = frozenset({"https", "wss", "ftps"})


@functools.cache
def _family_words() -> frozenset[str]:
    """The words stacks put in front of all their variables: ``NCCL`` of ``NCCL_*``."""
    out = set()
    for row in rule_lines("env-families.tsv"):
        glob = row[0]
        if glob.endswith("_*") and glob[:-2].isalnum():
            out.add(glob[:-2].lower())
    return frozenset(out)


def name_parts(text: str) -> list[str]:
    """``text`` split at ``-``, ``_``, ``.`` and case changes, lower-cased.

    >>> name_parts("--nproc-per-node"), name_parts("clientMaxSize"), name_parts("WORLD_SIZE")
    (['nproc', 'per', 'node'], ['client', 'max', 'size'], ['world', 'size'])
    """
    return [p.lower() for p in _PARTS.findall(text)]


def name_words(d: Difference, runs: Sequence[RunFacts] = ()) -> tuple[str, ...]:
    """The words of ``d``'s name a message must hold to name it, or ``()`` when the name has
    fewer than two (one word, ``--workers``, is any message's word). A variable's first word
    is left out when it is a stack's family word or the name of a package the runs imported
    (``UVICORN`` of ``UVICORN_LIMIT_CONCURRENCY``, which uvicorn's command line reads).

    >>> name_words(Difference("command", "--max-queue-size", "changed", "8", "2"))
    ('max', 'queue', 'size')
    >>> name_words(Difference("env", "SGLANG_QUEUE_MAX", "changed", "8", "2"))
    ('queue', 'max')
    >>> name_words(Difference("env", "NCCL_IB_HCA", "changed", "a", "b")), name_words(
    ...     Difference("command", "--workers", "changed", "1", "2"))
    ((), ())
    """
    if d.section == "env":
        if noise_reason(d.key):
            return ()
        words = name_parts(d.key)
        if len(words) > 1 and (words[0] in _family_words()
                               or any(words[0] in f.modules for f in runs)):
            words = words[1:]
    elif d.section == "command" and d.key.startswith("-"):
        words = name_parts(d.key)
    elif d.section == "models" and len(d.path) > 3 and d.path[2] == "config":
        words = name_parts(str(d.path[-1]))
    else:
        return ()
    words = [w for w in words if len(w) >= 3 and not w.isdigit()]
    return tuple(dict.fromkeys(words)) if len(set(words)) >= 2 else ()


def _same(word: str, said: str) -> bool:
    """Whether message word ``said`` is name word ``word``: itself, a plural of one or the
    other, or a longer word a short name word abbreviates.

    >>> [_same("max", w) for w in ("maximum", "max", "mixed")]
    [True, True, False]
    >>> [_same("requests", w) for w in ("request", "requests", "requested")]
    [True, True, False]
    >>> _same("https", "http"), _same("http", "https")
    (False, False)
    """
    if said == word:
        return True
    if said.rstrip("s") == word.rstrip("s"):
        return not {said, word} & _NOT_PLURALS  # ``https`` is no plural of ``http``
    return len(word) <= _ABBREVIATION and len(said) > len(word) and said.startswith(word)


def message_words(text: str) -> frozenset[str]:
    """The words of a message, lower-cased, split at case changes too; a file's path in it
    says where something lies, not what the message is about (a venv named ``det-image``
    under a ``trial`` folder names no ``DET_TRIAL_ID``), so its words are left out.

    >>> sorted(message_words("Maximum request body size 1024 exceeded."))
    ['body', 'exceeded', 'maximum', 'request', 'size']
    >>> sorted(message_words("cannot import name 'x' from 'sku' (/w/trial/det-image/sku.py)"))
    ['cannot', 'from', 'import', 'name', 'sku', 'x']
    """
    return frozenset(w for w in name_parts(_PATH.sub(" ", text)) if not w.isdigit())


def _holds(words: Sequence[str], text: str) -> bool:
    said = message_words(text)
    return all(any(_same(w, s) for s in said) for w in words)


def _said_by_other(words: Sequence[str], f: RunFacts, runs: Sequence[RunFacts]) -> bool:
    """Whether a run other than ``f`` printed a line that holds the words too: then they are
    no sign of what differs."""
    return any(_holds(words, line) for g in runs if g is not f
               for line in (*g.errors, *g.warnings, *g.tail))


def by_words(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, int] | None:
    """(sentence, rank) when a message only one side printed holds every word
    of ``d``'s name (:func:`name_words`): rank 1 for the failing run's error (below the name
    spelled out, rank 0), :data:`~runsnap.diffing.naming.WARNED` for a warning."""
    words = name_words(d, runs)
    if not words:
        return None
    failing = any(f.failed and not f.shared_failure for f in runs)
    for where, text, rank, f in texts(runs):
        if failing and not f.failed:
            continue  # a warning of the run that did not fail
        if not _holds(words, text) or _said_by_other(words, f, runs):
            continue
        return (f"{where} names {d.key} by its words ({', '.join(words)}): "
                f"\"{excerpt(text, '')}\"", 1 if rank == 0 else rank)
    return None
