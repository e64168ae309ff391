"""The rules that say what a secret looks like, read from the data files beside this module.

:mod:`runsnap.redact` is the only module that decides; it asks here for the rules:

* ``secret-names.txt``: names whose value is always a secret (``*TOKEN*``, ``SSHPASS``);
* ``secret-names-by-value.txt``: names whose value is a secret when it looks like a credential
  (``*AUTH*``: ``HF_AUTH=hf_...`` yes, ``TORCH_CUDNN_V8_API_DISABLED=1`` no);
* ``not-secret-names.txt``: exceptions to both (``*TOKENS*``, ``PAD_TOKEN``);
* ``secret-values.tsv``: token shapes from gitleaks and detect-secrets, each with the keywords
  that must appear in a text before its regular expression runs (as gitleaks does);
* ``secret-formats.tsv``: providers' current token formats, distinctive on their own (a
  documented prefix or marker), each with its source and samples;
* ``password-options.tsv``: options of particular programs that take a password (``sshpass -p``);
* ``secret-query-params.txt``: URL query parameters that carry a secret (``?sig=``).

Everything is read on first use and cached: a capture that meets no free text never compiles a
token shape.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import os
import re
from collections import Counter  # C-accelerated counting (collections is always loaded)

from runsnap.base.files import open_regular
from runsnap.base.paths import current_dir
from runsnap.base.projectfile import may_hold_runsnap_table
from runsnap.base.records import FrozenRecord
from runsnap.base.tomlparse import toml_parser
from runsnap.knowledge import rule_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "NAME_FILES",
    "GlobSet",
    "Policy",
    "load_policy",
    "ValueRule",
    "entropy",
    "name_globs",
    "name_rules",
    "password_options",
    "secret_query_params",
    "value_rules",
    "keyword_positions",
    "token_spans",
]

def _lines(name: str) -> list[str]:
    return ["\t".join(fields) for fields in rule_lines(name)]


class GlobSet:
    """Matches a name against shell globs, as :func:`fnmatch.fnmatchcase` would.

    The name lists use ``*`` only, so most globs are an exact name, a prefix, a suffix or a
    substring, matched with plain string operations; the rest go through one regular
    expression. Compiling all of them as one regular expression was a measurable cost on every
    capture.

    >>> g = GlobSet(["*TOKEN*", "*_KEY", "DATABASE_URL", "A*B*C", "X?Z"])
    >>> [g.match(n) for n in ("HF_TOKEN", "MY_KEY", "DATABASE_URL", "AxBxC", "XYZ", "KEYS")]
    [True, True, True, True, True, False]
    """

    def __init__(self, globs: Iterable[str]) -> None:
        exact, prefix, suffix, inner, other = set(), [], [], [], []
        for g in globs:
            core = g.strip("*")
            if any(c in core for c in "*?[") or not core:
                other.append(g)
            elif g.startswith("*") and g.endswith("*") and len(g) > 1:
                inner.append(core)
            elif g.startswith("*"):
                suffix.append(core)
            elif g.endswith("*"):
                prefix.append(core)
            else:
                exact.add(g)
        self.exact = frozenset(exact)
        self.prefix, self.suffix, self.inner = tuple(prefix), tuple(suffix), tuple(inner)
        self.other = (re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in other))
                      if other else None)
        self._asked = 0
        self._inner_rx: re.Pattern[str] | None = None

    #: After this many names, the substrings are looked for by one regular expression (a
    #: capture under 10,000 variables asks ~30,000 times; an ordinary one ~300, where its
    #: compilation would cost more than it saves).
    INNER_RX_AFTER = 1000

    def match(self, name: str) -> bool:
        """Whether ``name`` (already upper-case) matches one of the globs."""
        if name in self.exact or name.startswith(self.prefix) or name.endswith(self.suffix):
            return True
        if self._inner_rx is not None:
            if self._inner_rx.search(name) is not None:
                return True
        elif self.inner:
            if any(map(name.__contains__, self.inner)):
                return True
            self._asked += 1
            if self._asked >= self.INNER_RX_AFTER:
                # the same answer: a substring found by an alternation of literals
                self._inner_rx = re.compile("|".join(map(re.escape, self.inner)))
        return self.other is not None and self.other.match(name) is not None


#: The name files, in the order :func:`name_rules` returns their matchers.
NAME_FILES = ("secret-names.txt", "secret-names-by-value.txt", "not-secret-names.txt")


def name_globs(file: str) -> tuple[str, ...]:
    """The globs of one of :data:`NAME_FILES`, upper-case."""
    return tuple(line.strip().upper() for line in _lines(file))


@functools.lru_cache(maxsize=1)
def name_rules() -> tuple[GlobSet, GlobSet, GlobSet]:
    """(always secret, secret when the value looks like a credential, never secret)."""
    always, by_value, never = (GlobSet(name_globs(f)) for f in NAME_FILES)
    return always, by_value, never


@functools.lru_cache(maxsize=1)
def password_options() -> dict[str, frozenset[str]]:
    """Program file name -> its options whose value is a password."""
    out: dict[str, frozenset[str]] = {}
    for line in _lines("password-options.tsv"):
        prog, _, opts = line.partition("\t")
        out[prog.strip()] = frozenset(opts.split())
    return out


@functools.lru_cache(maxsize=1)
def secret_query_params() -> frozenset[str]:
    """Lower-case URL query parameter names that carry a secret besides secret names."""
    return frozenset(line.strip().lower() for line in _lines("secret-query-params.txt"))


class ValueRule:
    """One token shape: a regular expression (compiled on first use) and where its secret is."""

    __slots__ = ("id", "group", "keywords", "entropy", "source", "anchor", "_rx")

    def __init__(self, id: str, group: str, keywords: tuple[str, ...], entropy: float | None,
                 source: str) -> None:
        self.id, self.group, self.keywords = id, group, keywords
        self.entropy, self.source = entropy, source
        self.anchor = ""
        """A regular expression that matches wherever this shape could, for a rule without
        keywords (see :func:`value_rules`)."""
        self._rx: re.Pattern[str] | None = None

    @property
    def rx(self) -> re.Pattern[str]:
        if self._rx is None:
            self._rx = re.compile(self.source)
        return self._rx

    def spans(self, text: str) -> Iterable[tuple[int, int]]:
        """Where the secrets this rule finds in ``text`` are (start, end)."""
        for m in self.rx.finditer(text):
            if self.group == "first" and m.re.groups:
                idx = next((i for i in range(1, m.re.groups + 1) if m.start(i) >= 0), 0)
            else:
                idx = 0
            start, end = m.span(idx)
            # a whole match may hold the delimiters around the secret: keep those visible
            while start < end and text[start] in " \t\r\n=:\"'`,(":
                start += 1
            while end > start and text[end - 1] in " \t\r\n\"'`,;)":
                end -= 1
            if end - start < 8:
                continue
            if self.entropy is not None and entropy(text[start:end]) < self.entropy:
                continue
            yield start, end


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character.

    >>> round(entropy("aaaa"), 2), round(entropy("abcd"), 2)
    (0.0, 2.0)
    """
    if not text:
        return 0.0
    n = len(text)
    # H = log2(n) - sum(c * log2(c)) / n, the sum looked up in a table (a C-level map)
    counts = Counter(text).values()
    if n < len(_CLOG):
        return abs(math.log2(n) - sum(map(_CLOG.__getitem__, counts)) / n)
    return abs(-sum(c / n * math.log2(c / n) for c in counts))


#: c * log2(c) for the counts of a text up to 1,024 characters.
_CLOG = [0.0] + [c * math.log2(c) for c in range(1, 1025)]


def _trie_regex(words: Iterable[str]) -> str:
    """One regular expression for a set of literal words, factored as a trie.

    An alternation of 270 words is tried word by word at every position of the text (0.11 s
    over 430 KB of git diff); the trie tries one branch per character (a few ms).

    >>> print(_trie_regex(["sk-", "sk-ant-", "xox"]))
    (?:sk\\-(?:ant\\-)?|xox)
    """
    trie: dict[str, dict] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        end = "" in node
        alts = []
        for ch in sorted(k for k in node if k):
            child = node[ch]
            # collapse a chain of single children into one literal run
            run = re.escape(ch)
            while len(child) == 1 and "" not in child:
                (nxt, child), = child.items()
                run += re.escape(nxt)
            rest = build(child) if any(child) else ""
            alts.append(run + rest)
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if end else body

    out = build(trie)
    return out if out.startswith("(?:") else f"(?:{out})"


#: Up to this length a text is searched whole by every rule whose keyword it holds.
_SHORT_TEXT = 4096

#: Characters searched around a keyword (or an anchor) for its rule's match: most shapes start
#: at their keyword or up to ~70 characters before it (``[\w.-]{0,50}?keyword[ \t\w.-]{0,20}``), and
#: the longest (1Password service tokens, GitLab agent tokens) run to ~1,100 characters.
_BEFORE, _AFTER = 80, 1200


@functools.lru_cache(maxsize=1)
def value_rules() -> tuple[tuple[ValueRule, ...], re.Pattern[str], dict[str, tuple[ValueRule, ...]],
                           _Inner]:
    """Every token shape, the keyword prefilter, the rules of each keyword, and for each keyword
    the shorter keywords inside it (found when first asked: a text meets few keywords).

    A rule whose shape has no keyword names an *anchor* instead (``re:REGEX`` in the keywords
    column): a cheap regular expression that matches wherever the shape could (for a Telegram
    token, a ``:`` after eight digits), under the key ``re:<rule id>``. A shape such as
    ``\\d{8,10}:...`` is tried at every digit of a text; its anchor starts with a literal, which
    the regular expression engine finds as fast as ``str.find``.
    """
    rules: list[ValueRule] = []
    for line in _lines("secret-values.tsv"):
        rid, group, keywords, ent, source = line.split("\t")
        rules.append(ValueRule(rid, group, tuple(keywords.split(",")),
                               float(ent) if ent else None, source))
    for fields in rule_lines("secret-formats.tsv"):
        fid, keywords, source = fields[0], fields[3], fields[4]
        rules.append(ValueRule(f"format:{fid}", "0", tuple(keywords.split(",")), None, source))
    by_keyword: dict[str, list[ValueRule]] = {}
    for rule in rules:  # both tables' rules indexed the same way
        if rule.keywords[0].startswith("re:"):
            rule.anchor = ",".join(rule.keywords)[3:]
            rule.keywords = (f"re:{rule.id}",)
            by_keyword[rule.keywords[0]] = [rule]
        else:
            for kw in rule.keywords:
                by_keyword.setdefault(kw, []).append(rule)
    words = sorted(k for k in by_keyword if not k.startswith("re:") and k != "*")
    # a look-ahead: a keyword is found wherever it starts, also where it overlaps another
    # (``b_`` then ``_mmk`` in ``...EMB_mmk``: a consuming search would take ``b_`` and pass
    # over ``_mmk``); the keywords inside the one found are :class:`_Inner`'s
    gate = re.compile(f"(?=({_trie_regex(words)}))")
    by_keyword.setdefault("*", [])
    return tuple(rules), gate, {k: tuple(v) for k, v in by_keyword.items()}, _Inner(words)


class _Inner(dict[str, tuple[str, ...]]):
    """Keyword -> the other keywords inside it, each found on first lookup.

    >>> _Inner(["sk", "sk-", "sk-ant-", "xox"])["sk-ant-"]
    ('sk', 'sk-')
    """

    def __init__(self, words: Iterable[str]) -> None:
        super().__init__()
        self.words = frozenset(words)

    def __missing__(self, word: str) -> tuple[str, ...]:
        found = self[word] = tuple(sorted(
            {word[i:j] for i in range(len(word)) for j in range(i + 1, len(word) + 1)
             if (i, j) != (0, len(word))} & self.words))
        return found


@functools.lru_cache(maxsize=1)
def _anchors() -> tuple[tuple[str, re.Pattern[str], str], ...]:
    """(key, anchor, the text every match of the anchor starts with) of every rule that has
    an anchor instead of keywords."""
    return tuple((rule.keywords[0], re.compile(rule.anchor), leading_literal(rule.anchor))
                 for rule in value_rules()[0] if rule.anchor)


_META = frozenset(".^$*+?{}[]\\|()")


def leading_literal(pattern: str) -> str:
    """The characters every match of ``pattern`` starts with ("" when it cannot be told
    simply): a text without them holds no match, which ``in`` says faster than a search
    (each anchor was searched for in each of the ~400 texts of a capture).

    >>> [leading_literal(p) for p in (r"AC[a-z0-9]{32}", r"\\.(?<=x)", r":(?<=\\d{8}:)AA", r"ab?c",
    ...                               r"ab+", r"a|b", r"(?i)ac", r"\\d{3}")]
    ['AC', '.', ':', 'a', 'ab', '', '', '']
    """
    if "|" in pattern:
        return ""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1:i + 2]
            if not nxt or nxt.isalnum():  # a class (\d, \w), a group reference or a hex escape
                break
            c, i = nxt, i + 2
        elif c in _META:
            break
        else:
            i += 1
        if pattern[i:i + 1] in ("?", "*", "{"):  # this character may be absent: stop before it
            break
        out.append(c)
    return "".join(out)


def keyword_positions(text: str) -> dict[str, list[int]]:
    """The rules' keywords in ``text`` (case-insensitively), each with where a keyword found
    there starts: its own start, or that of a longer keyword holding it.

    >>> sorted(keyword_positions("EMB_mmk").items())
    [('_mmk', [3]), ('b_', [2])]
    """
    _, gate, _, inner = value_rules()
    where: dict[str, list[int]] = {}
    for m in gate.finditer(text.lower()):
        word = m.group(1)
        where.setdefault(word, []).append(m.start())
        for k in inner[word]:
            where.setdefault(k, []).append(m.start())
    return where


def token_spans(text: str) -> list[tuple[int, int]]:
    """Where token-shaped secrets are in ``text``: (start, end) pairs, sorted, not overlapping.

    Each rule runs only near the places its keywords occur (case-insensitively), as gitleaks
    runs a rule only on fragments that hold one of its keywords, or near the matches of its
    anchor.
    """
    _, _, by_keyword, _ = value_rules()
    where = keyword_positions(text)
    if by_keyword["*"]:
        where["*"] = [0]
    for key, anchor, starts in _anchors():
        if starts and starts not in text:
            continue
        found = [m.start() for m in anchor.finditer(text)]
        if found:
            where[key] = found
    if not where:
        return []  # most texts: no keyword, no anchor
    if len(text) <= _SHORT_TEXT:
        # a short text (a variable, an argument, a line): every candidate rule on all of it
        rules = {rule.id: rule for kw in where for rule in by_keyword.get(kw, ())}
        short = [span for rule in rules.values() for span in rule.spans(text)]
        return _merge(short, len(text)) if len(short) > 1 else short
    windows: dict[str, list[tuple[int, int]]] = {rule.id: [(0, len(text))]
                                                  for rule in by_keyword["*"]}
    for kw, positions in where.items():
        if kw == "*":
            continue
        for rule in by_keyword.get(kw, ()):
            windows.setdefault(rule.id, []).extend(
                (max(0, p - _BEFORE), p + _AFTER) for p in positions)
    rules = {rule.id: rule for kw in where for rule in by_keyword.get(kw, ())}
    found_spans: list[tuple[int, int]] = []
    for rid, spans in windows.items():
        rule = rules[rid]
        for lo, hi in _merge(spans, len(text)):
            found_spans.extend((lo + a, lo + b) for a, b in rule.spans(text[lo:hi]))
    return _merge(found_spans, len(text))


def _merge(spans: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """Sorted, overlapping spans joined, clipped to ``limit``.

    >>> _merge([(5, 9), (0, 3), (2, 4), (9, 12)], 10)
    [(0, 4), (5, 10)]
    """
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        hi = min(hi, limit)
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        elif lo < hi:
            out.append((lo, hi))
    return out


class Policy(FrozenRecord):
    """The user's own additions: names to redact (globs) and names to keep (exact)."""

    redact: tuple[str, ...] = ()
    """Globs of names whose values are secrets (``--redact``, ``redact = [...]``)."""

    keep: tuple[str, ...] = ()
    """Names whose values are kept as they are (``--keep``): explicit, never a default."""


def load_policy(start: str | None = None, redact: Iterable[str] = (),
                keep: Iterable[str] = ()) -> Policy:
    """The :class:`Policy` of a capture: ``redact``/``keep`` given on the command line plus
    ``redact = [...]`` from the nearest ``pyproject.toml`` ``[tool.runsnap.capture]`` or
    ``.runsnap.toml`` ``[capture]`` in ``start`` (default: the cwd) or a parent folder.

    A config file that cannot be read or parsed adds nothing (the capture goes on)."""
    found: list[str] = []
    here = os.path.abspath(start or current_dir())
    while True:
        for fname in (".runsnap.toml", "pyproject.toml"):
            path = os.path.join(here, fname)
            try:
                with open_regular(path) as fh:
                    data = fh.read(1 << 20)
            except OSError:
                continue
            if b"redact" not in data or (fname == "pyproject.toml"
                                           and not may_hold_runsnap_table(data)):
                continue
            found = _config_redact(data, fname)
            if found:
                break
        if found:
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return Policy(redact=(*found, *redact), keep=tuple(keep))


def _config_redact(data: bytes, fname: str) -> list[str]:
    tomllib = toml_parser()
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    table = (doc.get("tool", {}).get("runsnap", {}) if fname == "pyproject.toml" else doc)
    capture = table.get("capture") if isinstance(table, dict) else None
    value = capture.get("redact") if isinstance(capture, dict) else None
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
