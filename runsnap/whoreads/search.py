"""``who-reads``: where an interpreter's installed packages declare, read or mention a variable.

Static evidence for a run that was not traced: which installed code reads ``NAME``, in the
versions actually installed. Every distribution of the interpreter (listed by runsnap's package
probe) is searched: its ``.py`` files line by line, and the shared libraries it ships
(``libnccl.so`` of ``nvidia-nccl-*``) for the name as a string. Each place is a :class:`Hit`:

* ``declaration``: SGLang's ``NAME = EnvBool(False)`` (any ``Env*(...)`` class), vLLM's
  ``"NAME": lambda: ...`` table of variables;
* ``read``: the name in quotes on a line that reads the environment (``os.environ``,
  ``getenv``, ``environ.get``, a helper with ``env`` in its name), or an attribute read of a
  declared variable (``envs.NAME``, ``NAME.get()``, ``NAME.value``);
* ``mention``: anywhere else (messages, comments, documentation);
* ``library``: a string in a shared library (native code may read it with ``getenv``).

Speed: the first search indexes each distribution in one pass: every name shaped like an
environment variable (upper case with an underscore, ``OMP_NUM_THREADS``) in its ``.py``
files, and in the read-only data (``.rodata``) of its shared libraries, with the files that
hold it. The index is cached per distribution and version, so any later name, asked for the
first time or not, is a look-up that reads only the few files holding it (to find the lines).
A name of another shape (``HOME``, ``http_proxy``) is searched for by itself, as ``grep -F``
does, and its places cached. The cache lives in runsnap's cache folder (``RUNSNAP_CACHE_DIR``),
keyed by the distribution's name, version and location; ``RUNSNAP_NO_CACHE=1`` turns it off.
Measured against ``grep -rn`` over the same files in ``benchmarks/whoreads.py``.

Places in tests, examples and benchmarks (:func:`in_tests`) rank after the package's own code
(``runsnap who-reads --include-tests`` lists them; by default they are counted, not listed).
"""

from __future__ import annotations

import json
import os
import sys
import time

from runsnap.base import cache, programs
from runsnap.base.argv import is_python_name
from runsnap.base.cache import cache_dir
from runsnap.base.probeanswer import checked
from runsnap.base.pythons import check_python
from runsnap.errors import UsageError
from runsnap.whoreads.index import CACHED_NAMES, Index
from runsnap.whoreads.places import KINDS, Hit, classify, in_tests

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

__all__ = ["CACHED_NAMES", "KINDS", "Hit", "classify", "distributions", "in_tests", "who_reads"]


def distributions(python: str | None = None, cwd: str | None = None,
                  env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The distributions of interpreter ``python`` (default: the ``python`` or ``python3`` on
    ``PATH``), as runsnap's package probe lists them (``name``, ``version``, ``location``,
    ``metadata_dir``). Raises :class:`~runsnap.errors.UsageError` for a bad interpreter.

    The probe runs in "/": installed distributions do not depend on the working directory, and
    a stable folder keeps its cached answer (:mod:`runsnap.base.cache`) valid, where a busy cwd such
    as /tmp changes all the time. Run here rather than through a capture context, whose import
    would be most of a repeated search's cost.
    """

    cwd = cwd or os.getcwd()
    env = dict(os.environ if env is None else env)
    interpreter: str
    if python and not is_python_name(os.path.basename(python)):
        interpreter = check_python(python, cwd, env)
    elif python:
        given = python if os.sep not in python or os.path.isabs(python) \
            else os.path.join(cwd, python)
        found = programs.which(given, path=env.get("PATH", os.defpath))
        if found is None:
            raise UsageError(f"--python {python}: no such interpreter")
        interpreter = found
    else:
        interpreter = next((found for name in ("python", "python3") if (found := programs.which(
            name, path=env.get("PATH", os.defpath)))), sys.executable)
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probe",
                           "packages.py"),
              encoding="utf-8") as fh:
        source = fh.read()
    key = cache.probe_key(interpreter, os.sep, env, source) \
        if cache.probe_cacheable(interpreter) else None
    data = cache.load_probe(key, os.sep) if key else None
    if data is None:
        started = time.time_ns()
        result = programs.run([interpreter, "-c", source], cwd=os.sep, env=env, timeout=120)
        try:  # checked as the capture checks it: each distribution's texts there
            data = checked(json.loads(result.stdout)) if result.ok else None
        except ValueError:
            data = None
        if data is None:
            raise UsageError(f"the package probe in {interpreter} failed "
                             f"(exit status {result.returncode})")
        if key:
            cache.store_probe(key, os.sep, data, started)
    return [d for d in data["distributions"] if d["location"]]


def who_reads(
    names: str | Iterable[str],
    python: str | None = None,
    *,
    dists: Sequence[Mapping[str, Any]] | None = None,
    cache: bool = True,
    include_tests: bool = True,
) -> list[Hit]:
    """Every place the distributions of ``python`` declare, read or mention each of ``names``
    (a batch is answered in one pass), the package's own code first, by kind (declarations
    first), then tests, examples and benchmarks (:func:`in_tests`; left out unless
    ``include_tests``), then distribution, file and line.

    ``dists``: the distributions to search (default: :func:`distributions` of ``python``).
    """

    wanted = [names] if isinstance(names, str) else list(dict.fromkeys(names))
    folder = cache_dir() if cache else None
    out: list[Hit] = []
    given = None if dists is None else checked(
        {"distributions": [dict(d) for d in dists]})["distributions"]  # the texts filled in
    for dist in (given if given is not None else distributions(python)):
        index = Index(dist, folder)
        index.search(wanted)
        for name in wanted:
            if index.names.get(name):  # most names are read by no file of most distributions
                out += index.hits(name)
        index.save()
    rank = {k: i for i, k in enumerate(KINDS)}
    if not include_tests:
        out = [h for h in out if not in_tests(h.path)]
    out.sort(key=lambda h: (h.name, in_tests(h.path), rank.get(h.kind, 9), h.dist, h.path,
                            h.line or 0))
    return out
