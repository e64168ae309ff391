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

Memory stays a small multiple of what is remembered, whatever the texts: a long text's runs are
listed a piece at a time (a 10 MB line is 244,000 runs), and a secret found by a rule that looks
at the word alone (an opaque random word: :meth:`add` with ``weak``) is remembered only while
fewer than :data:`WEAK_MAX` are. That rule finds it again wherever it stands on its own, so
past the budget only its copies inside a longer word (a URL's path) go unfound; without it, a
line of random words was remembered word by word (560 bytes each: 25 times the snapshot).
"""

from __future__ import annotations

import re

from runsnap.base.patterns import on_use

__all__ = ["KnownValues"]

_RUN = on_use(r"[A-Za-z0-9]+")
_NOT_RUN = on_use(r"[^A-Za-z0-9]")
_MIN_KEY = 4
#: Up to this many secrets, one regular expression of all of them (compiled in a few ms).
SMALL = 256
#: Up to this many (a capture usually knows a handful), a text that holds none of them as a
#: substring is passed over before any regular expression runs.
FEW = 16
#: At most this many secrets found by a rule on the word alone are remembered (~2 MiB).
WEAK_MAX = 4096
#: A text longer than this has its runs listed a piece of about this size at a time.
PIECE = 1 << 16


class KnownValues:
    """Raw secret -> its fingerprint; :meth:`sub` replaces each occurrence in a text.

    >>> k = KnownValues(re.compile(r"<fp:\\w+>"))
    >>> k.add("s3cr3t-Value", "<fp:a>"); k.add("!!@@##", "<fp:b>")
    >>> k.sub("echo s3cr3t-Value; pw=!!@@## and <fp:a>")
    'echo <fp:a>; pw=<fp:b> and <fp:a>'
    >>> k.sub("nothing here"), len(k)
    ('nothing here', 2)
    >>> k.add("Zq8vLm3nRt5wXy7Q4pK2sD9f", "<fp:c>", weak=True); k.sub("at Zq8vLm3nRt5wXy7Q4pK2sD9f")
    'at <fp:c>'
    """

    def __init__(self, placeholder: re.Pattern[str]) -> None:
        self.values: dict[str, str] = {}
        """Raw secret -> fingerprint."""
        self._by_key: dict[str, str | list[str]] = {}
        """The longest run of letters and digits of each secret -> the secret (or the secrets,
        longest first, that share it)."""
        self.weak = 0
        """How many secrets found by a rule on the word alone are remembered (see :meth:`add`)."""
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

    def add(self, value: str, fp: str, weak: bool = False) -> None:
        """Remember ``value`` (found as a secret) and the fingerprint that stands for it.

        ``weak``: found by a rule that looks at the word alone (an opaque random word), which
        finds it again wherever it stands on its own; remembered while fewer than
        :data:`WEAK_MAX` such are (for where it stands inside a longer word), else not."""
        if value in self.values:
            return
        if weak:
            if self.weak >= WEAK_MAX:
                return
            self.weak += 1
        self.values[value] = fp
        self.version += 1
        self._all_rx = None
        if _RUN.fullmatch(value):
            key = value  # the secret is its own key: no copy of it is kept
        else:
            runs = _RUN.findall(value)
            key = max(runs, key=len) if runs else ""
        if len(key) >= _MIN_KEY:
            entry = self._by_key.get(key)
            if entry is None:
                self._by_key[key] = value
            else:  # several secrets share a key: the longest wins
                shared = [entry, value] if isinstance(entry, str) else [*entry, value]
                self._by_key[key] = sorted(shared, key=lambda v: -len(v))
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
        elif self._by_key and self._hits(text):
            for m in _RUN.finditer(text):
                entry = self._by_key.get(m.group())
                if entry is None:
                    continue
                for value in (entry,) if isinstance(entry, str) else entry:
                    start = m.start() - value.find(m.group())
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

    def _hits(self, text: str) -> bool:
        """Whether a run of ``text`` is the key of a secret (the runs compared as sets, at C
        speed; a long text a piece at a time, cut after a character no run holds).

        >>> k = KnownValues(re.compile("<>")); k.add("ab-efgh", "<fp>")
        >>> k._hits("x " * 40000 + "efgh"), k._hits("x " * 40000 + "efghi")
        (True, False)
        """
        keys = self._by_key.keys()
        lo = 0
        while lo < len(text):
            hi = _cut(text, lo + PIECE)
            if not keys.isdisjoint(_RUN.findall(text, lo, hi)):
                return True
            lo = hi
        return False


def _cut(text: str, at: int) -> int:
    """Where a piece of ``text`` ending near ``at`` ends: after the first character from ``at``
    on that is not a letter or digit (so no run is cut), else at the end."""
    if at >= len(text):
        return len(text)
    m = _NOT_RUN.search(text, at)
    return m.end() if m else len(text)


def _strong(value: str) -> bool:
    """Whether a secret is long and mixed enough to be hidden even inside a longer word.

    >>> _strong("postgres"), _strong("hunter22"), _strong("Pwmjhzvyugribml!7")
    (False, False, True)
    """
    return len(value) >= 12 and not value.isalpha()
