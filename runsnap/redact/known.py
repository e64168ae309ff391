"""Every secret found so far, found again wherever it reappears, in time linear in the text.

A capture can hold thousands of secrets (one per variable of a large environment). One regular
expression of all of them is rebuilt each time a secret is added and tried at every position of
every text: quadratic in the number of secrets (1,200 secrets took 89 s), and even as a trie its
compilation alone takes over a second for 10,000. Instead each secret is indexed by its longest
run of letters and digits (its *key*): a text is split into such runs by one C-level
``findall``, the runs are intersected with the keys as sets, and only a text holding a key is
looked at again, at the places of those runs. A secret with no run of four letters or digits
(``!@#$%^&*``) is rare: those few go into one regular expression.

Up to :data:`SMALL` secrets (every ordinary capture) are searched with one regular expression
instead, compiled once per set: it also finds a long secret glued to other letters
(``x<secret>y``), which the index of whole runs cannot. A short or plain one (``postgres``) is
found only standing on its own, never inside a longer word (``postgresql://``).
"""

from __future__ import annotations

import re

from runsnap.base.patterns import on_use

__all__ = ["KnownValues"]

_RUN = on_use(r"[A-Za-z0-9]+")
_MIN_KEY = 4
#: Up to this many secrets, one regular expression of all of them (compiled in a few ms).
SMALL = 256
#: Up to this many (a capture usually knows a handful), a text that holds none of them as a
#: substring is passed over before any regular expression runs.
FEW = 16


class KnownValues:
    """Raw secret -> its fingerprint; :meth:`sub` replaces each occurrence in a text.

    >>> k = KnownValues(re.compile(r"<fp:\\w+>"))
    >>> k.add("s3cr3t-Value", "<fp:a>"); k.add("!!@@##", "<fp:b>")
    >>> k.sub("echo s3cr3t-Value; pw=!!@@## and <fp:a>")
    'echo <fp:a>; pw=<fp:b> and <fp:a>'
    >>> k.sub("nothing here"), len(k)
    ('nothing here', 2)
    """

    def __init__(self, placeholder: re.Pattern[str]) -> None:
        self.values: dict[str, str] = {}
        """Raw secret -> fingerprint."""
        self._by_key: dict[str, list[tuple[int, str]]] = {}
        self._odd: list[str] = []
        self._odd_rx: re.Pattern[str] | None = None
        self._all_rx: re.Pattern[str] | None = None
        self._placeholder = placeholder
        self.version = 0
        """Grows with every secret added (what was scrubbed under an older version may hold a
        secret found since)."""

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, value: object) -> bool:
        return value in self.values

    def add(self, value: str, fp: str) -> None:
        """Remember ``value`` (found as a secret) and the fingerprint that stands for it."""
        if value in self.values:
            return
        self.values[value] = fp
        self.version += 1
        self._all_rx = None
        runs = _RUN.findall(value)
        key = max(runs, key=len) if runs else ""
        if len(key) >= _MIN_KEY:
            at = value.find(key)
            entries = self._by_key.setdefault(key, [])
            entries.append((at, value))
            if len(entries) > 1:
                entries.sort(key=lambda e: -len(e[1]))  # the longest secret wins
        else:
            self._odd.append(value)
            self._odd_rx = None

    def sub(self, text: str) -> str:
        """``text`` with every known secret in it replaced by its fingerprint (a placeholder
        already in the text is left as it is)."""
        if not self.values or not text:
            return text
        spans: list[tuple[int, int, str]] = []
        if len(self.values) <= FEW and not any(map(text.__contains__, self.values)):
            return text  # no secret in it at all (most texts: checked at C speed)
        if len(self.values) <= SMALL:
            if self._all_rx is None:
                ordered = sorted(self.values, key=len, reverse=True)
                strong = "|".join(re.escape(v) for v in ordered if _strong(v))
                weak = "|".join(re.escape(v) for v in ordered if not _strong(v))
                self._all_rx = re.compile("|".join(
                    ([strong] if strong else [])
                    + ([f"(?<![A-Za-z0-9])(?:{weak})(?![A-Za-z0-9])"] if weak else [])))
            spans = [(m.start(), m.end(), self.values[m.group()])
                     for m in self._all_rx.finditer(text)]
        elif self._by_key:
            hits = self._by_key.keys() & set(_RUN.findall(text))
            if hits:
                for m in _RUN.finditer(text):
                    run = m.group()
                    if run not in hits:
                        continue
                    for offset, value in self._by_key[run]:
                        start = m.start() - offset
                        if start >= 0 and text.startswith(value, start):
                            spans.append((start, start + len(value), self.values[value]))
                            break
        if self._odd and len(self.values) > SMALL:
            if self._odd_rx is None:
                self._odd_rx = re.compile("|".join(
                    re.escape(v) for v in sorted(self._odd, key=len, reverse=True)))
            spans += [(m.start(), m.end(), self.values[m.group()])
                      for m in self._odd_rx.finditer(text)]
        if not spans:
            return text
        guarded = [m.span() for m in self._placeholder.finditer(text)] if "<" in text else []
        spans.sort(key=lambda s: (s[0], -s[1]))
        parts: list[str] = []
        done = g = 0
        for start, end, fp in spans:
            while g < len(guarded) and guarded[g][1] <= start:
                g += 1  # both are sorted: the placeholders wholly before this span are passed
            if start < done or (g < len(guarded) and guarded[g][0] < end):
                continue
            parts += [text[done:start], fp]
            done = end
        if not parts:
            return text
        return "".join(parts) + text[done:]


def _strong(value: str) -> bool:
    """Whether a secret is long and mixed enough to be hidden even inside a longer word.

    >>> _strong("postgres"), _strong("hunter22"), _strong("Pwmjhzvyugribml!7")
    (False, False, True)
    """
    return len(value) >= 12 and not value.isalpha()
