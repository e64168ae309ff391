"""Who reads a variable, and what they accept: families read by native libraries (a Python
trace cannot see those reads), from ``env-native.tsv`` (which :mod:`runsnap.tracing` reads
too); the values a reader accepts, from ``env-values.tsv`` (SGLang's declared ``EnvBool``,
``EnvInt`` and ``EnvFloat``, NCCL's parameters).

Diagnosis (:mod:`runsnap.diffing.evidence`) asks it before calling a variable unread; check
(:mod:`runsnap.checks.rules`) asks it what a reader accepts.
"""

from __future__ import annotations

import fnmatch
import functools
import re

from runsnap.base.records import FrozenRecord
from runsnap.knowledge import Glob, rule_lines

__all__ = ["Accepts", "accepted", "ambient_setting", "generic_feature", "interpreter_setting",
           "native_call", "native_reader", "read_inside_libc", "read_natively", "rejects"]

_TRUE = ("true", "1", "yes", "y")
_FALSE = ("false", "0", "no", "n")


class Accepts(FrozenRecord):
    """What the reader of one variable accepts (a record, not a NamedTuple: the pre-launch
    guard reads it on the capture path, where ``typing`` is never imported)."""

    kind: str
    """``bool``, ``int``, ``float`` or ``enum``."""

    values: str
    """For ``enum``: the accepted values, separated by ``|``."""

    reader: str
    """Who reads it (``NCCL src/graph/search.cc``)."""

    def describe(self) -> str:
        """The accepted values in words.

        >>> Accepts("enum", "LL|LL128|Simple", "NCCL").describe()
        'one of LL, LL128, Simple'
        """
        if self.kind == "bool":
            return "a boolean: " + ", ".join(_TRUE + _FALSE)
        if self.kind == "enum":
            return "one of " + ", ".join(self.values.split("|"))
        return {"int": "an integer", "float": "a number"}.get(self.kind, self.kind)


@functools.lru_cache(maxsize=1)
def _values() -> dict[str, list[str]]:
    """Name -> its first row (a record is made only for the names asked about: the
    pre-launch guard asks for the ~100 variables of a launch, the table has ~750 rows)."""
    out: dict[str, list[str]] = {}
    for row in rule_lines("env-values.tsv"):
        out.setdefault(row[0], row)
    return out


@functools.lru_cache(maxsize=4096)
def accepted(name: str) -> Accepts | None:
    """What the reader of ``name`` accepts, when the knowledge says."""
    row = _values().get(name)
    if row is None:
        return None
    row = [*row, "", "", ""]
    return Accepts(row[1], row[2], row[3])


def rejects(name: str, value: str) -> Accepts | None:
    """What ``name`` accepts, when ``value`` is not among it (None: accepted, or unknown).

    >>> rejects("NCCL_P2P_DISABLE", "true").describe(), rejects("NCCL_P2P_DISABLE", "1")
    ('an integer', None)
    >>> rejects("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "ture").kind
    'bool'
    """
    rule = accepted(name)
    if rule is None:
        return None
    text = value.strip()
    if rule.kind == "bool":
        return None if text.lower() in _TRUE + _FALSE else rule
    if rule.kind == "int":
        try:
            int(text, 0) if text.lower().startswith(("0x", "-0x")) else int(text)
        except ValueError:
            return rule
        return None
    if rule.kind == "float":
        try:
            float(text)
        except ValueError:
            return rule
        return None
    if rule.kind == "enum":
        return None if text in rule.values.split("|") else rule
    return None


@functools.lru_cache(maxsize=1)
def _native_families() -> tuple[tuple[Glob, str], ...]:
    """``env-native.tsv``, read once: (the family's glob; who reads it)."""
    return tuple((Glob(row[0]), row[1])
                 for row in rule_lines("env-native.tsv") if len(row) >= 2)


def native_reader(name: str) -> str | None:
    """Who reads ``name`` from native code, if a family of ``env-native.tsv`` says so.

    >>> native_reader("NCCL_ALGO"), native_reader("SGLANG_ENABLE_JIT")
    ('NCCL (libnccl.so)', None)
    """
    return next((who for pattern, who in _native_families() if pattern.match(name)), None)


def read_natively(name: str) -> bool:
    """Whether ``name`` belongs to a family that native libraries read (``getenv`` in C).

    >>> read_natively("NCCL_P2P_DISABLE"), read_natively("SGLANG_ENABLE_JIT")
    (True, False)
    """
    return native_reader(name) is not None


#: Start-up settings of the interpreter whose value changes what a program computes, not only
#: how Python runs: read once at start-up, but another value is another result.
RESULT_SETTINGS = {
    "PYTHONHASHSEED": ("the seed of str and bytes hashing: the order sets of strings iterate "
                       "in (python(1), PYTHONHASHSEED)"),
    "PYTHONOPTIMIZE": ("the optimisation level: 1 skips assert statements, 2 also drops "
                       "docstrings (__doc__ is None), which code that checks or reads "
                       "them notices (python(1), -O and -OO)"),
    "PYTHONINTMAXSTRDIGITS": ("the most digits int() and str() convert: a longer number "
                              "raises ValueError (python(1), PYTHONINTMAXSTRDIGITS)"),
}


def decides_results(name: str) -> str | None:
    """What start-up setting ``name`` decides of a program's results (:data:`RESULT_SETTINGS`),
    or None: such a read is never incidental when its value differs.

    >>> decides_results("PYTHONHASHSEED").startswith("the seed"), decides_results("PYTHONUNBUFFERED")
    (True, None)
    """
    return RESULT_SETTINGS.get(name)


def read_through_getenv(name: str) -> bool:
    """Whether a native library reads ``name`` with its own ``getenv`` call in the process that
    loads it, from that process's live environment (never from a copy a program made): what an
    ``LD_PRELOAD`` interposer sees. Not the C library's own reads (:func:`read_inside_libc`),
    the dynamic linker's (at exec, before any interposer) or a container runtime's (outside
    the process).

    >>> read_through_getenv("NCCL_DEBUG"), read_through_getenv("LD_LIBRARY_PATH")
    (True, False)
    >>> read_through_getenv("NVIDIA_VISIBLE_DEVICES"), read_through_getenv("HF_HOME")
    (False, False)
    """
    who = native_reader(name) or ""
    return bool(who) and not who.startswith(
        ("the C library", "the dynamic linker", "the NVIDIA container runtime"))


def read_inside_libc(name: str) -> bool:
    """Whether the C library itself reads ``name`` (``TZ``, ``LANG``, ``LC_*``): through its
    own internal ``getenv``, which no ``LD_PRELOAD`` interposer sees, so even a trace that
    observed native reads cannot call it unread.

    >>> read_inside_libc("TZ"), read_inside_libc("LC_ALL"), read_inside_libc("NCCL_ALGO")
    (True, True, False)
    """
    return (native_reader(name) or "").startswith("the C library")


@functools.lru_cache(maxsize=1)
def _native_calls() -> tuple[tuple[Glob, re.Pattern[str], str], ...]:
    """``env-native-calls.tsv``, read once: (the variable's glob, its calls as one pattern,
    who reads it there)."""
    out = []
    for row in rule_lines("env-native-calls.tsv"):
        if len(row) >= 3:
            calls = "|".join(re.escape(c) if c.startswith(".") else r"(?<![\w.])" + re.escape(c)
                             for c in row[1].split())
            out.append((Glob(row[0]), re.compile(rf"(?:{calls})\s*\("), row[2]))
    return tuple(out)


def native_call(name: str, code: str) -> str | None:
    """Who reads ``name`` natively at a call in the source line ``code``
    (``env-native-calls.tsv``), as ``CALL (READER)``; None when the line makes no such call.

    >>> native_call("TZ", 'assert time.strftime("%Z", time.localtime(0)) == "UTC"')
    "time.strftime (the C library's time-zone conversion)"
    >>> native_call("TZ", "x = mytime.localtime(0)"), native_call("NCCL_ALGO", "f()")
    (None, None)
    """
    for pattern, calls, who in _native_calls():
        if pattern.match(name):
            m = calls.search(code)
            if m:
                return f"{m.group(0).rstrip('( ').lstrip('.')} ({who})"
    return None


@functools.lru_cache(maxsize=1)
def _generic() -> tuple[tuple[re.Pattern[str], re.Pattern[str], str], ...]:
    return tuple((re.compile(fnmatch.translate(r[0])), re.compile(fnmatch.translate(r[1])), r[2])
                 for r in rule_lines("env-generic-readers.tsv") if len(r) >= 3)


def generic_feature(file: str, function: str) -> str | None:
    """The generic feature a frame reads the environment for (``env-generic-readers.tsv``),
    or None when the frame is not known as such a reader. ``file`` is the frame's file as the
    tracing hook records it (relative to its ``sys.path`` entry).

    >>> generic_feature("shutil.py", "get_terminal_size"), generic_feature("app.py", "main")
    ('the terminal size', None)
    >>> generic_feature("rich/console.py", "size")
    "rich's terminal, colour and width detection"
    """
    file = file.replace("\\", "/")
    for path, func, feature in _generic():
        if path.match(file) and func.match(function):
            return feature
    return None


@functools.lru_cache(maxsize=1)
def _interpreter() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(fnmatch.translate(r[0])), r[1])
                 for r in rule_lines("env-interpreter.tsv") if len(r) >= 2)


def interpreter_setting(name: str) -> str | None:
    """What the interpreter does with ``name`` when it reads it at its own start-up
    (``env-interpreter.tsv``), or None. Search paths are judged elsewhere.

    >>> interpreter_setting("PYTHONUNBUFFERED"), interpreter_setting("PYTHONPATH")
    ("the Python interpreter's start-up settings", None)
    """
    if name in ("PYTHONPATH", "PYTHONHOME"):
        return None
    return next((why for glob, why in _interpreter() if glob.match(name)), None)


@functools.lru_cache(maxsize=1)
def _ambient() -> tuple[tuple[re.Pattern[str], str, str], ...]:
    return tuple((re.compile(fnmatch.translate(r[0])), r[1], r[2])
                 for r in rule_lines("env-ambient.tsv") if len(r) >= 3)


def ambient_setting(name: str) -> tuple[str, str] | None:
    """(what it decides, who reads it when) for a variable that nearly every process of a
    stack reads at start-up (``env-ambient.tsv``), or None.

    >>> ambient_setting("OMP_NUM_THREADS")[0], ambient_setting("PATH")[0]
    ('threads', 'executable')
    >>> ambient_setting("SGLANG_ENABLE_JIT") is None
    True
    """
    return next(((decides, who) for glob, decides, who in _ambient() if glob.match(name)),
                None)
