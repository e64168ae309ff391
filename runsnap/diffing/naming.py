"""What the failing run's own words name: a difference's key (a variable, an option, a config
field, a package) or a distinctive token of its value, in the error, a warning one run printed
alone, or the run's last lines; and the engines' own messages (``knowledge/engine-messages.tsv``)
that a setting governs. :mod:`runsnap.diffing.evidence` turns what is found here into ``named``
evidence.

Only what the run printed names: the error (the traceback's exception line, the first error
line), a warning printed by one run only, and, for values and the engines' messages, the
failing run's last lines that the other run did not print. A source line of the traceback
(``mp.spawn(worker, args=(a.bucket_mb,))``) shows what the code passed along, not what failed:
it names nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts, tokens
from runsnap.diffing.written import written
from runsnap.knowledge.engines import governing
from runsnap.knowledge.env import noise_reason
from runsnap.knowledge.models import bookkeeping
from runsnap.knowledge.notices import notice_about
from runsnap.knowledge.packages import normalize_name
from runsnap.launch.lines import LAUNCHER_PREFIX

__all__ = ["WARNED", "called_where_raised", "crowd", "distinctive", "engine_named", "excerpt",
           "last_words", "named", "names_for", "not_heeded", "only_notices_differ",
           "read_by_failing_code", "says", "texts", "value_tokens"]

#: The rank of what a warning says (:func:`texts`): below anything the failing run's error
#: says. A warning shows that a value was seen, not that it failed; :mod:`runsnap.diffing.
#: evidence` takes it as corroboration (``read``), never as the error naming a cause.
WARNED = 3

#: Values too common to single out a setting, whatever the message around them: the
#: booleans and their kin, and the loopback and wildcard addresses every local connection
#: prints (gloo's ``Connection closed by peer [127.0.0.1]:59558`` quotes no ``RAY_ADDRESS``).
_PLAIN = frozenset({"true", "false", "none", "yes", "no", "on", "off", "auto", "default",
                    "null", "all", "any", "127.0.0.1", "localhost", "0.0.0.0", "::1", "::"})


def names_for(d: Difference, facts: Sequence[RunFacts]) -> tuple[str, ...]:
    """The words that would name ``d``'s key in an error message; generic single words
    (``--model``, ``dtype``) only in their literal option form; a config's bookkeeping fields
    (``transformers_version``, ``_name_or_path``) never."""
    if d.section == "env":
        # a single character or a shell's own name (``_``) is no word a message names
        if len(d.key.strip("_")) < 2 or noise_reason(d.key):
            return ()
        return (d.key,) if "_" in d.key or len(d.key) >= 8 else ()
    if d.section == "command" and d.key.startswith("--"):
        bare = d.key[2:].replace("-", "_").lower()
        return (d.key, bare) if "_" in bare else (d.key,)
    if d.section == "models" and ": " in d.key:
        path = d.key.partition(": ")[2]
        field = re.split(r"[.\[\]]+", path.strip("]"))[-1]
        if field and not bookkeeping(path) and not field.startswith(("weights ", "file ")) and (
                "_" in field or len(field) >= 8):
            return (field,)
        return ()
    if d.section == "packages" and "." not in d.key and d.key not in (
            "interpreter", "python_version", "implementation"):
        names = {d.key.replace("-", "_").lower()}
        for f in facts:
            got = f.dists_imported().get(normalize_name(d.key))
            if got:
                names.add(got[0])
        return tuple(n for n in names if len(n) >= 5 or "_" in n)
    return ()


def _quoted_or_word(text: str, raw: str) -> bool:
    """Whether ``text`` appears in ``raw`` as a whole word; a short or purely alphabetic word
    (WARN, Ring, INFO: words a message uses for its own reasons) only when quoted."""
    if len(text) < 3 or (text.isalpha() and len(text) < 5):
        return re.search(r"""(['"`])""" + re.escape(text) + r"\1", raw) is not None
    return re.search(r"(?<![\w.])" + re.escape(text) + r"(?![\w])", raw) is not None


#: Where a value splits into entries: ``,`` ``;`` ``=`` spaces, and ``:`` but not a URL's
#: ``://`` (``module://matplotlib_inline.backend_inline`` is one entry, not ``module``).
_PARTS = re.compile(r"[,;=\s]+|:(?!//)")
#: A traceback's frame line (``File "x.py", line 3, in f``): where code ran, not what it said.
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')


def says(text: str, token: str) -> bool:
    """Whether ``text`` holds ``token`` as a whole word (a short or purely alphabetic one
    only quoted), as an error names a value (:func:`named`)."""
    return _quoted_or_word(token, text)


def value_tokens(value: Any, other: Any) -> list[str]:
    """The distinctive parts of ``value`` that ``other`` lacks: the whole value, then its
    entries (split at ``,`` ``;`` ``:`` ``=`` and spaces); never 0, 1, true and their kin.

    >>> value_tokens("expandable_segment:True", "expandable_segments:True")
    ['expandable_segment:True', 'expandable_segment']
    >>> value_tokens("eth9", None), value_tokens(True, False), value_tokens("1", "0")
    (['eth9'], [], [])
    >>> value_tokens("module://matplotlib_inline.backend_inline", None)
    ['module://matplotlib_inline.backend_inline']
    >>> value_tokens("127.0.0.1:6380", None)  # a loopback address every local peer prints
    ['127.0.0.1:6380', '6380']
    """
    if isinstance(value, bool) or value is None:
        return []
    text = str(value)
    theirs = set(_PARTS.split(str(other))) if other is not None else set()
    out = []
    for part in (text, *_PARTS.split(text)):
        if len(part) < 2 or part.lower() in _PLAIN or part in out or part in theirs:
            continue
        if part.lstrip("-").replace(".", "").isdigit() and len(part) < 3:
            continue
        out.append(part)
    return out


def texts(runs: Sequence[RunFacts]) -> list[tuple[str, str, int, RunFacts]]:
    """What can name a key: ``(where, text, rank, run)``, the failing runs' errors (rank 0)
    and the warnings one run printed alone (rank :data:`WARNED`)."""
    out: list[tuple[str, str, int, RunFacts]] = [
        (f"the error of failing run {f.label}", e, 0, f) for f in runs
        if f.failed and not f.shared_failure for e in f.errors]
    if len(runs) == 2:
        a, b = runs
        out += [(f"a warning printed by {a.label} only", w, WARNED, a) for w in a.warnings
                if w not in b.warnings]
        out += [(f"a warning printed by {b.label} only", w, WARNED, b) for w in b.warnings
                if w not in a.warnings]
    return out


def last_words(runs: Sequence[RunFacts]) -> list[tuple[str, str, int, RunFacts]]:
    """The failing runs' last lines that the other run did not print, less a traceback's frame
    lines and the source lines under them, behind a launcher's mark too (``[rank0]:   File
    ...``): where code ran and what it passed along, never what the run said
    (``torch/nn/modules/module.py`` names no ``module://`` backend, a venv's folder in a frame's
    path no ``VIRTUAL_ENV``)."""
    out = []
    for f in runs:
        if not f.failed or f.shared_failure:
            continue
        others = {line for g in runs if g is not f for line in g.tail}
        said, under_frame = [], False
        for line in f.tail:
            body = LAUNCHER_PREFIX.sub("", line, count=1)  # torchrun's ``[rank0]: ``
            frame = bool(_FRAME.match(body))
            if not frame and not (under_frame and body.startswith("    ")):
                said.append(line)
            under_frame = frame or (under_frame and body.startswith("    "))
        out += [(f"the last lines of failing run {f.label}", line, 0, f) for line in said
                if line not in others]
    return out


def named(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, int, bool, bool] | None:
    """(sentence, rank, reached, quoted) when the runs' words name ``d``'s key, or a
    distinctive part of the failing side's value: rank 0 for the key, and for a variable's
    value when the failing run read that variable by name (a bulk copy handed to a child is no
    read); rank 2 otherwise; :data:`WARNED` when only a warning names it. A part of a value
    counts only when it is :func:`distinctive`: no other input holds it, the other run never
    printed it. ``reached``: the failing error itself quotes the value of an input the failing
    run took in (a variable it read by name, its command line, a field of the config its model
    was built from), so the value reached the code that raised. ``quoted``: the failing error
    itself (not a warning, not a last line) quotes the failing side's value. A name-like part
    of a variable's value the failing run read counts in the error in another case too
    (``nccl`` in ``NCCL``: :func:`_spelled_otherwise`)."""
    names = names_for(d, runs)
    said = texts(runs)
    for where, text, rank, _run in said:
        toks = tokens(text)
        for n in names:
            if n in toks:
                return f"{where} names {n}: \"{excerpt(text, n)}\"", rank, False, False
    if d.section not in ("command", "models", "env") or d.change == "reordered" or (
            d.section == "env" and noise_reason(d.key)) or (
            d.section == "models" and bookkeeping(d.key.partition(": ")[2])):
        return None
    best: tuple[str, int, bool, bool] | None = None
    for where, text, said_rank, f in (*said, *last_words(runs)):
        if not f.failed or f.shared_failure:
            continue
        mine, theirs = (d.b, d.a) if f.label == "B" else (d.a, d.b)
        read = d.section == "env" and (f.reads(d.key) is not None or bool(f.copy_owner(d.key)))
        for token in value_tokens(mine, theirs):
            if _quoted_or_word(token, text):
                if not distinctive(token, f, runs):
                    continue
            elif not ((read or d.section in ("command", "models")) and text in f.errors
                      and (_spelled_otherwise(token, text) or _squashed(token, text))
                      and distinctive(token, f, runs, folded=True)):
                continue
            rank = max(said_rank, 0 if read else 2)
            how = _taken(d, f, read)
            found = (f"{where} names {f.label}'s value {token}{how}: "
                     f"\"{excerpt(text, token)}\"", rank,
                     bool(how) and text in f.errors, text in f.errors)
            if best is None or rank < best[1]:
                best = found
            break
    return best or (_met_other(d, runs, said) if d.section == "models" else None)


def _met_other(d: Difference, runs: Sequence[RunFacts],
               said: Sequence[tuple[str, str, int, RunFacts]]) -> tuple[str, int, bool, bool] | None:
    """The failing run printed the other run's value of a model config field, which its own
    config no longer has (``ckpt: torch.Size([256, 64]) vs model: torch.Size([64, 64])``
    after ``n_positions`` went 256 -> 64): it met something the old value made, weights
    saved with it. Rank 2, as a distinctive part of a value the error names."""
    for where, text, said_rank, f in (*said, *last_words(runs)):
        if not f.failed or f.shared_failure:
            continue
        mine, theirs = (d.b, d.a) if f.label == "B" else (d.a, d.b)
        other = "A" if f.label == "B" else "B"
        for token in value_tokens(theirs, mine):
            if _quoted_or_word(token, text) and distinctive(token, f, runs):
                return (f"{where} names {other}'s value {token}, which {f.label}'s config no "
                        f"longer has: \"{excerpt(text, token)}\"", max(said_rank, 2), False, False)
    return None


def _taken(d: Difference, f: RunFacts, read: bool) -> str:
    """How failing run ``f`` took ``d`` in, in words (``""``: the runs do not show it did): a
    variable it read by name (a bulk copy handed to a child is no read), its command line, a
    field of the config its model was built from."""
    if read:
        return f", which {f.label} read"
    if d.section == "command" and len(d.path) > 1 and d.path[1] in ("options", "positionals"):
        return f", from {f.label}'s command line"
    if d.section == "models" and len(d.path) > 3 and d.path[2] == "config":
        return f", a field of the config {f.label}'s model was built from"
    return ""


#: Words an error uses for its own reasons, whatever a value spells (a log level, a state).
_OWN_WORDS = frozenset({"info", "warn", "warning", "error", "errors", "debug", "trace", "fatal",
                        "critical", "notice", "fail", "failed", "none", "true", "false", "exit",
                        "data", "file", "path", "name", "value", "type", "mode", "size"})


def _spelled_otherwise(token: str, raw: str) -> bool:
    """Whether ``raw`` holds ``token``, a name-like word of a value (``nccl``), as a whole word
    in another case (``Distributed package doesn't have NCCL built in``): a message spells a
    backend, a device or a format its own way. Not a word an error uses for its own reasons
    (:data:`_OWN_WORDS`), not a number, not under 4 characters.

    >>> _spelled_otherwise("nccl", "Distributed package doesn't have NCCL built in")
    True
    >>> _spelled_otherwise("info", "INFO: started"), _spelled_otherwise("ncclx", "NCCL")
    (False, False)

    An option a value holds (``--timeout`` of ``GUNICORN_CMD_ARGS="--timeout 2"``) is spelled
    by its word: ``[CRITICAL] WORKER TIMEOUT``.

    >>> _spelled_otherwise("--timeout", "[CRITICAL] WORKER TIMEOUT (pid:23978)")
    True
    """
    token = token[2:] if token.startswith("--") else token
    if len(token) < 4 or token.lower() in _OWN_WORDS or token.lower() in _PLAIN \
            or not re.fullmatch(r"[A-Za-z][\w-]*", token):
        return False
    return re.search(r"(?<![\w.])" + re.escape(token) + r"(?![\w])", raw, re.I) is not None


def _squashed(token: str, raw: str) -> bool:
    """Whether ``raw`` holds ``token``, a compound name (``flash_attention_2``), written as one
    word without its separators in any case (``FlashAttention2 has been toggled on``): a
    message names a feature in its class's spelling. At least 8 letters and digits, and a
    separator in the token (a plain word is :func:`_spelled_otherwise`'s).

    >>> _squashed("flash_attention_2", "ImportError: FlashAttention2 has been toggled on")
    True
    >>> _squashed("sdpa", "SDPA"), _squashed("flash_attention_2", "flash attention 2")
    (False, False)
    """
    bare = re.sub(r"[-_.]", "", token).lower()
    if len(bare) < 8 or bare == token.lower() or not bare.isalnum():
        return False
    return any(re.sub(r"[-_.]", "", w).lower() == bare
               for w in re.findall(r"[A-Za-z0-9][\w.-]*", raw))


def distinctive(token: str, failing: RunFacts, runs: Sequence[RunFacts], *,
                folded: bool = False) -> bool:
    """Whether ``token`` (a part of the failing side's value) singles that value out: no other
    differing input holds it (:attr:`RunFacts.crowd`), and no other run printed it (an error,
    a warning, a last line): a word the passing run says too is no sign of the failure.

    >>> ok = RunFacts("A", False, False, {}, {}, False, None, (), ("using eth9",))
    >>> bad = RunFacts("B", False, False, {}, {}, True, None, ("no eth9",), ())
    >>> distinctive("eth9", bad, [ok, bad]), distinctive("eth9", bad, [ok.replace(warnings=()), bad])
    (False, True)
    >>> distinctive("eth9", bad.replace(crowd=frozenset({"eth9"})), [bad])
    False
    """
    if token in failing.crowd or (folded and token.lower() in {c.lower() for c in failing.crowd}):
        return False
    if "/" in token and any(_code_under(token, g) for g in runs if g is not failing):
        return False  # a folder the other run ran code from too: a stack trace's paths
    return not any(_quoted_or_word(token, line) or (folded and (
        _spelled_otherwise(token, line) or _squashed(token, line)))
                   for g in runs if g is not failing for line in (*g.errors, *g.warnings, *g.tail))


def _code_under(folder: str, run: RunFacts) -> bool:
    """Whether ``run``'s Python environment lies in ``folder``, or it imported code from there
    (``/work/venv`` for a module of ``/work/venv/lib/python3.11/site-packages``): a path there
    in an error (XGBoost's
    ``[bt] (0) /work/venv/.../libxgboost.so``, a traceback's frame) says where code lives,
    in both runs alike, not which value the failing run was given.

    >>> ok = RunFacts("A", False, False, {}, {"np": {"file": "/v/lib/site-packages/np/a.py"}},
    ...               False, None, (), ())
    >>> _code_under("/v", ok), _code_under("/v/lib/site", ok), _code_under("/w", ok)
    (True, False, False)
    >>> _code_under("/w", ok.replace(prefix="/w/venv"))
    True
    """
    root = folder.rstrip("/") + "/"
    return (run.prefix + "/").startswith(root) or any(
        str(row.file or "").startswith(root) for _top, row in run.imported())


def crowd(diffs: Sequence[Difference]) -> frozenset[str]:
    """The value tokens (:func:`value_tokens`, both sides) that two or more differing inputs
    hold: variables (noise left out), options and arguments, config fields.

    >>> d = [Difference("env", "A_IF", "changed", "eth0", "eth9"),
    ...      Difference("env", "B_IF", "changed", "eth9,eth1", "eth1")]
    >>> sorted(crowd(d))
    ['eth9']
    """
    seen: dict[str, int] = {}
    for d in diffs:
        if d.section not in ("env", "command", "models") or (
                d.section == "env" and noise_reason(d.key)):
            continue
        for token in {*value_tokens(d.a, None), *value_tokens(d.b, None)}:
            seen[token] = seen.get(token, 0) + 1
    return frozenset(t for t, n in seen.items() if n > 1)


def not_heeded(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, str] | None:
    """(why, effect): why variable ``d`` decided nothing, when a run printed a library's notice that it is
    deprecated, renamed or ignored (``knowledge/deprecation-notices.tsv``), in a warning or its
    last lines, and no failing run's error names it (a notice raised as the error, under
    ``PYTHONWARNINGS=error``, is the failure itself); else None."""
    if d.section != "env":
        return None
    for f in runs:
        for line in (*f.warnings, *f.tail):
            row = notice_about(line, d.key) if line not in f.errors else None
            if row is None:
                continue
            if any(d.key in tokens(e) for g in runs if g.failed for e in g.errors) \
                    or only_notices_differ(runs, d.key):
                return None
            who = "a library's" if row.library == "any" else f"{row.library}'s"
            return (f"{f.label} printed {who} notice \"{excerpt(line, d.key, 24)}\": "
                    f"{row.says()}; it decided nothing but that line"), row.effect
    return None


def only_notices_differ(runs: Sequence[RunFacts], key: str) -> bool:
    """Whether two runs ended alike and printed the same last lines and warnings but for the
    lines that name ``key``: then the notice is the whole difference, and ``key`` made it."""
    if len(runs) != 2 or any(r.failed for r in runs) or runs[0].status != runs[1].status:
        return False
    a, b = ({line for line in (*r.warnings, *r.tail) if key not in line} for r in runs)
    return a == b


def read_by_failing_code(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, int] | None:
    """A config field the failing code reads: the function of a failing traceback frame, or
    the class whose method it is, accesses it (``config.field``, ``getattr(config,
    "field")``, ``cfg["field"]``; the frame's ``names``, taken at capture by
    :mod:`runsnap.launch.frame_names`): on the failing path, as a read there would be; the
    frame that raised ranks above its callers: (sentence, rank) for ``failing-path`` evidence."""
    names = names_for(d, runs)
    if not names:
        return None
    best: tuple[str, int] | None = None
    for failing in (v for r in runs for v in r.views()):
        frames = failing.traceback.frames if failing.traceback else ()
        for depth, frame in enumerate(reversed(frames)):
            got = [n for n in names if n in frame.names]
            if not got:
                continue
            where = (f"{str(written(frame, 'file', '?')).rsplit('/', 1)[-1]}:"
                     f"{written(frame, 'line', '?')} in {written(frame, 'function', '?')}")
            what = "the frame that raised" if depth == 0 else "on the failing traceback"
            found = (f"the failing code reads {got[0]}: {where}, {what} (failing run "
                     f"{failing.label})", min(depth, 2))
            if best is None or found[1] < best[1]:
                best = found
            break
    return best


def engine_named(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, int] | None:
    """(sentence, 1) when a failing run printed an engine's own message that ``d`` (a variable
    or an option) governs (``knowledge/engine-messages.tsv``), or None."""
    if d.section not in ("env", "command") or d.change == "reordered":
        return None
    for f in runs:
        if not f.failed or f.shared_failure:
            continue
        lines = (*f.errors, *(t for _w, t, _r, g in (*texts(runs), *last_words(runs))
                              if g is f))
        kind = str((f.traceback.type if f.traceback else None) or "")
        value = d.b if f.label == "B" else d.a
        for row in governing(tuple(lines), kind):
            if not row.governs(d.key, value):
                continue
            if row.message.startswith("type:"):
                said = f"{f.label} failed with {kind}, a warning raised as an error"
            else:
                # the message itself, as printed (its fields filled), not the line around it
                found = next(m for m in map(row.pattern.search, lines) if m)
                said = (f"failing run {f.label} printed {row.engine}'s own message "
                        f"\"{excerpt(found.group(0), '', 45)}\"")
            return f"{said} ({row.source}), which {d.key} governs", 1
    return None


def called_where_raised(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, int] | None:
    """(sentence, 1) when the source line of the frame that raised calls into package ``d``
    (``tinyjson.dumps(x, indent=2)`` raising ``TypeError``): the package's interface is where
    it failed. Only for packages: a line that passes an option's or a variable's value along
    shows where the value went, not that it was wrong."""
    if d.section != "packages":
        return None
    names = names_for(d, runs)
    for f in (v for r in runs for v in r.views()):
        frames = f.traceback.frames if f.traceback else ()
        code = str(frames[-1].code or "") if frames else ""
        for n in names:
            if code and n in tokens(code):
                where = (f"{str(written(frames[-1], 'file', '?')).rsplit('/', 1)[-1]}:"
                         f"{written(frames[-1], 'line', '?')}")
                return (f"the line that raised in failing run {f.label} calls {n}: "
                        f"\"{excerpt(code, n)}\" ({where})", 1)
    return None


def excerpt(text: str, word: str, width: int = 40) -> str:
    """The part of ``text`` around ``word`` (or its ``snake_case`` form), for a reason line.

    >>> excerpt("x " * 60 + "set the env var FOO_BAR=1", "FOO_BAR", 12)
    '…the env var FOO_BAR=1'
    """
    text = " ".join(text.split())
    at = text.find(word)
    if at < 0:
        at = text.lower().replace("-", "_").find(word.lstrip("-").replace("-", "_").lower())
    if at < 0 or len(text) <= 2 * width + len(word):
        return text if len(text) <= 2 * width else text[: 2 * width - 1] + "…"
    start, end = max(0, at - width), min(len(text), at + len(word) + width)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


