"""Reads in their place: what nearly every process of a stack reads at start-up.

The OpenMP runtime reads ``OMP_*`` in its constructor, colour libraries read ``NO_COLOR``
at import, the interpreter reads ``PATH`` before the program runs: every process of a torch
or numpy stack does, whatever it goes on to do (``knowledge/env-ambient.tsv``, each row with
its source). A difference in such a variable, read only so (natively, in the module body of
a package's import, or on behalf of a generic feature: :mod:`runsnap.diffing.attribution`),
on no failing path and named by no error, is evidence of how the stack started, not of a
decision of the program: kind ``incidental``, scored by its name (at most 80), below the
program's own reads (91-93), launch options (84-88) and config fields, so it is never first
of an undecided list while one of those is a candidate. Where the rule says what the setting
decides and the runs record it, the decision is compared: ``PATH`` decides which executables
run, and when the runs resolved other ones (the command's executable, each Python process's
interpreter) the rule does not apply.

Beyond the table, told from the data (:func:`startup_reads`): a variable that native code of
both runs read only at a start-up, in every process (``[runtime] native_startup``: the getenv
interposer saw each read while the interpreter started, while the dynamic loader ran a
library's constructors, or while Python imported a module, and none while the program ran),
is ``incidental`` too, at most :data:`CEILING`. A variable read only from Python in the body
of a package's import is not made incidental: a package's settings module reads its
decisions at import (``huggingface_hub/constants.py``), and nothing in the runs says this one
decided nothing (measured: made incidental, such reads fell out of the top three on a half
never tuned on). Told from the data (:func:`import_reads`: every read in a library's import,
in every process of a run that read it, no package of those imports on a failing traceback), it keeps
``read`` evidence and stays listed, but scores :data:`CEILING`, below the program's own
reads, launch options and config fields; it is left out of an undecided list whose top is an
option or a field, and stays a candidate beside the program's reads (issue 41 item 4: a cache
folder, a home, a logging switch; :mod:`runsnap.diffing.confidence`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.attribution import frames_of, generic_frame
from runsnap.diffing.runfacts import RunFacts, scanned_as
from runsnap.diffing.written import record
from runsnap.knowledge.readers import ambient_setting
from runsnap.snapshot.records_host import ReadSite, VariableRead

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["CEILING", "ambient_reads", "decides_otherwise", "executables", "import_reads",
           "locale_of", "locale_reads", "no_device_to_choose", "startup_reads"]

#: The variables that choose among NVIDIA GPUs (which, in what order): what they decide is
#: only there where the host has one (the CUDA runtime and the container toolkit read them).
NVIDIA_CHOICE = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")

#: The highest score of a variable read only at start-up: below the launch options (88), the
#: command's executable (84) and a model's config fields (85-88), as below the program's reads.
CEILING = 83


def executables(snap: Snapshot) -> tuple[str, ...]:
    """The executables a run resolved: its command's (the real path when recorded) and each
    traced Python process's interpreter."""
    command = snap.records.command
    out = {str(command.executable_real or command.executable or "")}
    out.update(str(proc.executable) for proc in snap.records.runtime.processes if proc.executable)
    return tuple(sorted(out - {""}))


def _at_start_up(site: ReadSite, f: RunFacts) -> bool:
    """Whether a Python read site is a start-up read: for a generic feature, or in the module
    body of an installed package or Python's own library (an import), or in code that body
    called (transformers' logging reads ``CI`` in a function its module body runs), with no
    function of the program's own code on the way."""
    stack = site.stack
    if generic_frame(stack, f) is not None:
        return True
    frames = frames_of(stack, f)
    if any(fr.origin == "program" and fr.function != "<module>" for fr in frames):
        return False
    inner = next((fr for fr in frames if fr.origin != "stdlib"), None)
    return inner is None or inner.function == "<module>" or _under_import(site, f) is not None


#: The locale categories a C library resolves from the environment (POSIX XBD 8.2).
_CATEGORIES = ("LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES")


def _locale_name(value: str) -> str:
    """A locale name as the C library matches it: the codeset's case and dashes do not count.

    >>> _locale_name("C.UTF-8") == _locale_name("C.utf8")
    True
    """
    lang, dot, codeset = value.partition(".")
    return lang + dot + codeset.lower().replace("-", "")


#: Languages whose locales write numbers as C does (``.`` for decimals): glibc's
#: ``localedata/locales`` LC_NUMERIC ``decimal_point`` for these is ``"."``. Others (``de``,
#: ``fr``, ``ru``, ``pt``...) use ``","``, which the C library's ``strtod`` and ``printf`` follow.
_POINT_LANGUAGES = frozenset({"C", "POSIX", "en", "ja", "zh", "ko", "th", "he", "hi"})


def _codeset(name: str) -> str:
    """A resolved locale's codeset (``utf8``); ``C`` and ``POSIX`` without one are ASCII."""
    lang, dot, codeset = name.partition(".")
    return codeset.partition("@")[0] if dot else ("ascii" if lang in ("C", "POSIX") else "")


def locales_alike(la: Sequence[str], lb: Sequence[str]) -> bool:
    """Whether two resolved locales (:func:`locale_of`) encode text and write numbers alike
    in every category: the same codeset for ``LC_CTYPE`` (the only category whose codeset
    decides an encoding: Python's text I/O), and a language of :data:`_POINT_LANGUAGES` on
    both sides in each (``en_US.UTF-8`` and ``C.UTF-8``: UTF-8, ``1.5``; ``LC_NUMERIC`` of
    ``C`` and of ``C.UTF-8``: ``1.5``, no grouping). What is left to differ is collation
    (``strcoll``, which Python's ``sorted`` never calls) and message catalogues.

    >>> locales_alike(("en_US.utf8",) * 6 + ("",), ("C.utf8",) * 6 + ("",))
    True
    >>> locales_alike(("en_US.utf8",) * 6 + ("",), ("C",) * 6 + ("",))
    False
    >>> locales_alike(("en_US.utf8",) * 6 + ("",), ("de_DE.utf8",) * 6 + ("",))
    False
    >>> locales_alike(("C.utf8",) + ("C",) * 5 + ("",), ("C.utf8",) * 6 + ("",))
    True
    """
    for i, (x, y) in enumerate(zip(la[:len(_CATEGORIES)], lb[:len(_CATEGORIES)], strict=False)):
        if x == y:
            continue
        if _CATEGORIES[i] == "LC_CTYPE" and (not _codeset(x) or _codeset(x) != _codeset(y)):
            return False
        if not all(v.partition(".")[0].partition("_")[0] in _POINT_LANGUAGES for v in (x, y)):
            return False
    return True


def locale_of(snap: Snapshot) -> tuple[str, ...]:
    """The locale each category of :data:`_CATEGORIES` resolves to in ``snap``'s environment,
    by POSIX's order (``LC_ALL``, then ``LC_<category>``, then ``LANG``, else ``C``), and
    ``LANGUAGE`` (gettext's message languages).

    In a run of traced Python processes, an ``LC_CTYPE`` of ``C`` or ``POSIX`` is
    ``C.utf8``: Python 3.7+ coerces it to ``C.UTF-8`` (PEP 538: unless ``LC_ALL`` is set or
    ``PYTHONCOERCECLOCALE=0``) or else turns on its UTF-8 mode (PEP 540: unless
    ``PYTHONUTF8=0``), so its text is UTF-8 as under ``C.UTF-8``."""
    env = snap.records.env.vars

    def first(*names: str) -> str:
        return next((str(env[n]) for n in names if env.get(n)), "C")

    cats = [_locale_name(first("LC_ALL", cat, "LANG")) for cat in _CATEGORIES]
    coerced = not env.get("LC_ALL") and str(env.get("PYTHONCOERCECLOCALE", "")).strip() != "0"
    if cats[0] in ("C", "POSIX") and snap.records.runtime.processes and (
            coerced or str(env.get("PYTHONUTF8", "")).strip() != "0"):
        cats[0] = "C.utf8"
    return (*cats, str(env.get("LANGUAGE") or ""))


def locale_reads(name: str, runs: Sequence[RunFacts], a: Any, b: Any) -> str | None:
    """The sentence of a locale variable the runs read that resolved another locale in each
    (:func:`locale_of`), else None: a setting every process takes at start-up, which may
    matter (collation, number formats, encodings) but, with nothing in the runs tying it to
    the outcome, is no decision of the program: it stays listed below the program's own
    reads, launch options and config fields (:data:`CEILING`), as an import read does."""
    rule = ambient_setting(name)
    if rule is None or rule[0] != "locale" or not any(f.reads(name) for f in runs):
        return None
    la, lb = locale_of(a), locale_of(b)
    if la == lb:
        return None
    i = next(i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y)
    what = _CATEGORIES[i] if i < len(_CATEGORIES) else "LANGUAGE"
    return (f"read for the locale every process takes ({rule[1].split(' (')[0]}); the runs "
            f"resolved other locales ({what} {la[i] or '(unset)'}, {lb[i] or '(unset)'}): a "
            "setting of the whole process, not "
            "a decision of the program")


def ambient_reads(name: str, runs: Sequence[RunFacts], a: Any, b: Any) -> str | None:
    """The sentence of ``incidental`` evidence when ``name`` is a start-up setting of the
    stack that the runs read only at start-up (see the module's text), else None."""
    rule = ambient_setting(name)
    if rule is None:
        return None
    decides, who = rule
    if not any(f.reads(name) for f in runs):
        return None  # read by no process: the runs say "unread", which says more
    if decides == "executable":
        ea, eb = executables(a), executables(b)
        if ea != eb:
            return None  # what it decides differs: the command resolved another program
        return (f"read at start-up by every process ({who}); both runs resolved the same "
                f"executables ({', '.join(ea) or 'none recorded'}): not a decision here")
    if decides == "locale":
        la, lb = locale_of(a), locale_of(b)
        if la == lb:
            return (f"read for the locale ({who}); both runs resolved the same locale "
                    f"({la[0]}): not a decision here")
        if locales_alike(la, lb):
            return (f"read for the locale ({who}); the runs resolved {la[0]} and {lb[0]}, "
                    "the same encoding and number format in every category (only collation "
                    "and message catalogues may differ): not a decision here")
        return None  # what it decides differs: another encoding or number format
    later = False  # read while the program ran, only in installed packages' code
    for f in runs:
        got = f.reads(name)
        if not got:
            continue
        if scanned_as(got):
            return None  # the program (or a package, in a function) read it for itself
        for site in got.sites:
            if _at_start_up(site, f):
                continue
            reader = next((fr for fr in frames_of(site.stack, f) if fr.origin != "stdlib"),
                          None)
            if decides != "threads" or reader is None or reader.origin != "package":
                return None  # the program (or a package, in a function) read it for itself
            later = True
    if later:
        # a thread count decides how many work at once whoever reads it, and when: a
        # library's read of it while the program ran (datasets' map handing tokenizers'
        # setting to its workers) is no decision either
        return (f"a setting of how many threads work ({who}), read by libraries only, at "
                f"start-up or while the program ran: not a decision of the program")
    return (f"read at start-up by nearly every process of the stack ({who}), for the "
            f"{decides} every process takes, not a decision of the program")


def _no_gpu(snap: Snapshot) -> bool:
    """Whether ``snap``'s host had no NVIDIA GPU to choose: the probe ran and found none (no
    kernel driver loaded, or a driver that lists no GPU), not a probe that failed."""
    gpu = snap.records.system.gpu
    return gpu.available is False and not gpu.devices and not gpu.count and not gpu.listed


def no_device_to_choose(name: str, runs: Sequence[RunFacts], a: Any, b: Any) -> str | None:
    """The sentence of ``incidental`` evidence when ``name`` chooses among NVIDIA GPUs
    (:data:`NVIDIA_CHOICE`), neither host had one, and no run read it from Python (the
    program's own use of the value, ``len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))``,
    decides whatever the host has): read natively by a library that looked for a GPU, on a
    host where there was none to choose; else None."""
    if name not in NVIDIA_CHOICE or a is None or b is None or not (_no_gpu(a) and _no_gpu(b)):
        return None
    got = [f.reads(name) for f in runs]
    if not any(got) or any(g is not None and (g.python or g.sites) for g in got):
        return None
    return ("it chooses among NVIDIA GPUs, and neither run's host had one (no NVIDIA GPU "
            "recorded): read natively by a library looking for one, it chose nothing")


def _in_every_process(got: VariableRead, f: RunFacts) -> bool:
    """Whether every Python process of run ``f`` read ``got``'s variable, a process forked from
    one that did counting as one that did (it inherits its parent's imports and what they
    read: a DataLoader's or ``datasets.map``'s forked workers import nothing again)."""
    covered = set(got.pids)
    if not covered:
        return False
    grew = True
    while grew:  # a child forked from a covered process, however deep
        grew = False
        for child, parent in f.forked:
            if parent in covered and child not in covered:
                covered.add(child)
                grew = True
    return set(f.pids) <= covered


def _under_import(site: ReadSite, f: RunFacts) -> str | None:
    """The package whose import read at ``site`` (its module body, or code it called, with no
    frame of the program's own code inside it), or None."""
    for fr in frames_of(site.stack, f):
        if fr.origin == "program":
            return None
        if fr.function == "<module>":
            return fr.top if fr.origin == "package" else None
    return None


def _startup_only(name: str, f: RunFacts) -> tuple[str, ...] | None:
    """How run ``f`` read ``name`` when every read of it, in every one of its Python
    processes, was at a start-up: natively while the interpreter started, a library was
    loaded or a module imported (``[runtime] native_startup``), or from Python in the body of
    a package's import; None when some read was not (or it was not read so)."""
    got = f.reads(name)
    if not got or scanned_as(got) or not _in_every_process(got, f):
        return None
    how: list[str] = []
    if got.native:
        if name not in f.native_startup:
            return None
        how.append("natively at start-up (the interpreter's, a library's load or an import)")
    sites = got.sites
    if got.python or sites:
        tops = [_under_import(s, f) for s in sites]
        if not sites or None in tops:
            return None
        how.append("while importing " + ", ".join(sorted({str(t) for t in tops})))
    return tuple(how) or None


def _native(f: RunFacts, name: str) -> bool:
    """Whether run ``f`` recorded a native read of ``name`` (read or not by the program)."""
    got = f.env.get(name)
    return bool(got and record(VariableRead, got).native)


def decides_otherwise(name: str, a: Any, b: Any) -> bool:
    """Whether what ``name`` decides, where the table says and the runs record it, differs
    between snapshots ``a`` and ``b``: ``PATH`` and the executables the runs resolved, a
    locale variable and the locale they resolved (:func:`locale_of`)."""
    rule = ambient_setting(name)
    if rule is not None and rule[0] == "locale":
        return locale_of(a) != locale_of(b)
    return rule is not None and rule[0] == "executable" and executables(a) != executables(b)


def startup_reads(name: str, runs: Sequence[RunFacts], a: Any = None, b: Any = None
                  ) -> str | None:
    """The sentence of ``incidental`` evidence when both runs read ``name`` natively and only
    at a start-up, in every process (told from the data: the interposer saw no read of it
    while the program ran), else None. Python reads at import, beside, leave it so; a variable
    read only from Python is not judged here."""
    if a is not None and decides_otherwise(name, a, b):
        return None  # read at start-up, and what it decided there differs: the executables
    hows = [_startup_only(name, f) for f in runs]
    if len(runs) < 2 or any(h is None for h in hows) or not all(
            _native(f, name) for f in runs):
        return None
    return (f"read only at start-up, in every process of both runs ({'; '.join(hows[0] or ())}): "
            "how the stack started, not a decision of the program")


def _importer(site: ReadSite, f: RunFacts) -> tuple[str, frozenset[str]] | None:
    """Whose import made the read at ``site``: (the package, or Python's own library, whose
    module body ran it; the parts of installed packages it belongs to), when no frame of the
    program's own code lies between the read and that module body; else None. A part is a
    module's folder (``torch/_functorch`` for ``torch/_functorch/config.py``; ``six`` for
    ``six.py``): the imported module's, and those of other packages' helpers on the way; a
    helper of the imported module's own package (``torch/utils/_config_module.py`` reading
    ``torch/_inductor/config.py``'s settings) is no part of the setting."""
    helpers: list[tuple[str, str]] = []  # (top-level package, folder) of each package frame
    for fr in frames_of(site.stack, f):
        if fr.origin == "program":
            return None
        if fr.origin == "package":
            folder = fr.path.replace("\\", "/").lstrip("/").rpartition("/")[0]
            helpers.append((fr.top, folder or fr.top))
        if fr.function == "<module>":
            if fr.origin != "package":
                return "Python's own library", frozenset(part for _top, part in helpers)
            imported = helpers[-1][1]  # this very frame's
            return fr.top, frozenset({imported} | {part for top, part in helpers[:-1]
                                                   if top != fr.top})
    return None


def _on_traceback(parts: frozenset[str], runs: Sequence[RunFacts]) -> bool:
    """Whether code of one of ``parts`` (a package's module folder, ``torch/_functorch``, or a
    single-module package) is on a failing traceback of either run (a failure the other run did
    not share: :meth:`RunFacts.views`): a read at the import of ``torch/_functorch/config.py``
    is no setting of ``torch/distributed/`` code that failed (as :mod:`.failingpath` rules)."""
    for view in (v for f in runs for v in f.views()):
        for frame in view.traceback.frames if view.traceback else ():
            file = str(frame.file or "").replace("\\", "/")
            if any(f"/{part}/" in file or file.endswith(f"/{part}.py") for part in parts):
                return True
    return False


def import_reads(name: str, runs: Sequence[RunFacts]) -> str | None:
    """The sentence for a variable every run that read it read only while a library was
    imported (the module body of an installed package or of Python's own library, or code it
    called, with no function of the program's own code on the way), in every one of that run's
    Python processes (natively only at a start-up, if at all), when no package of those
    imports is on a failing traceback; else None.

    Such a read is a library's start-up setting (a cache folder, a home, a locale, a logging
    switch), read by every process that imports the library whatever it goes on to do. Asked
    only where nothing ties the variable to the outcome (no failing path, no word of the
    runs): told from the data, not a list of names, it still counts as read, but below the
    program's own reads, launch options and config fields (:data:`CEILING`), and stays a
    candidate where the verdict is undecided."""
    who: set[str] = set()
    packages: set[str] = set()
    readers = [(f, got) for f in runs for got in (f.reads(name),) if got]
    for f, got in readers:
        sites = got.sites
        if scanned_as(got) or not sites or not _in_every_process(got, f):
            return None
        if got.native and name not in f.native_startup:
            return None  # native code read it while the program ran
        for site in sites:
            found = _importer(site, f)
            if found is None:
                return None
            who.add(found[0])
            packages.update(found[1])
    if not readers or _on_traceback(frozenset(packages), runs):
        return None
    return (f"read only while importing {', '.join(sorted(who))}, in every process of the run, "
            "on no failing path: a library's start-up setting, not a decision of the program")
