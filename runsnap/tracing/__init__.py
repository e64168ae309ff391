"""Run-time evidence: trace what a Python child reads from its environment and imports.

The capture journey asks :func:`prepare` for the environment to *launch* with (the recorded
``[env]`` stays the user's): runsnap's hook folder first on ``PYTHONPATH``, the trace folder in
``RUNSNAP_TRACE_DIR``, the launch values of ``PYTHONPATH`` and ``LD_PRELOAD`` in
``RUNSNAP_TRACE_*`` (the hook gives them back to the program), and the getenv interposer in
``LD_PRELOAD`` when it could be built. After the child ends (killed included),
:meth:`Trace.finish` merges what every process wrote into ``[runtime]`` and removes the folder.

:func:`read_status` says, for one variable, what a ``[runtime]`` section tells about it
(:mod:`runsnap.tracing.status`, a reader of records: imported when first asked for).
"""

from __future__ import annotations

import os
import re
import threading
import time

from runsnap.base.lazy import lazy_names
from runsnap.base.programs import which
from runsnap.knowledge.readers import native_reader as reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = [
    "HOOK_DIR",
    "Trace",
    "native_reader",
    "not_traced",
    "prepare",
    "python_program",
    "read_status",
]

#: The folder runsnap puts first on the child's ``PYTHONPATH``: it holds only ``sitecustomize``.
HOOK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "probe", "hook")

_PYTHON_NAME = re.compile(r"^(python|pypy)[0-9.]*[a-z]?(-dbg)?$")


def _which(prog: str, env: Mapping[str, str], cwd: str) -> str | None:
    if os.sep in prog:
        path = prog if os.path.isabs(prog) else os.path.join(cwd, prog)
        return path if os.path.isfile(path) else None
    return which(prog, path=env.get("PATH", os.defpath))


def python_program(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> tuple[bool, str]:
    """Whether ``argv`` starts a Python interpreter, and what it is, in words.

    Python: an interpreter (``python3``, ``python3.11``, ``pypy3``), a console script or other
    script whose ``#!`` line names one (``torchrun``, ``sglang``), pip's ``/bin/sh`` trampoline
    for long interpreter paths, and ``env [VAR=x ...] python ...``.
    """
    if not argv:
        return False, "no command"
    prog = argv[0]
    if os.path.basename(prog) == "env":  # env [-i] [NAME=VALUE ...] python ...
        rest = [a for a in argv[1:] if not a.startswith("-") and "=" not in a]
        if rest:
            return python_program(rest, env, cwd)
    path = _which(prog, env, cwd)
    if path is None:
        return False, f"{prog} was not found"
    for name in (os.path.basename(path), os.path.basename(os.path.realpath(path))):
        if _PYTHON_NAME.match(name):
            return True, f"the Python interpreter {path}"
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError as exc:
        return False, f"{path} cannot be read ({exc.strerror})"
    if head.startswith(b"\x7fELF"):
        return False, f"{path} is a native program, not Python"
    if head.startswith(b"#!"):
        lines = head.split(b"\n")
        first = lines[0]
        words = first[2:].split()
        names = [os.path.basename(w.decode("utf-8", "replace")) for w in words[:2]]
        if any(_PYTHON_NAME.match(n) for n in names):
            return True, f"a Python script ({path})"
        if len(lines) > 1 and lines[1].startswith(b"'''exec'") and b"python" in lines[1]:
            return True, f"a Python script ({path})"
        return False, f"{path} is a script for {first[2:].decode('utf-8', 'replace').strip()}"
    return False, f"{path} is not a Python program"


def not_traced(reason: str) -> dict[str, Any]:
    """The ``[runtime]`` section of a run that was not traced."""
    return {"traced": False, "reason": reason, "native": "not observed: not traced",
            "processes": [], "modules": {}, "frames": [], "stacks": [], "vars": {}}


class Trace:
    """One traced launch: the folder its processes write to, and how native reads are seen."""

    def __init__(self, folder: str, native_lib: str | None, native_note: str) -> None:
        self.folder = folder
        self.native_lib = native_lib
        self.native_note = native_note
        self._index: Any = None
        self._indexing: Any = None
        self.started_ns = time.time_ns()  # a data file modified since is an output of the run

    def launch_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with what the hook needs; the program gets its own values back."""
        out = dict(env)
        pp = env.get("PYTHONPATH")
        out["RUNSNAP_TRACE_DIR"] = self.folder
        out["RUNSNAP_TRACE_PYTHONPATH"] = "" if pp is None else "=" + pp
        out["PYTHONPATH"] = HOOK_DIR + (":" + pp if pp else "")
        if self.native_lib:
            pre = env.get("LD_PRELOAD")
            out["RUNSNAP_TRACE_LIB"] = self.native_lib
            out["RUNSNAP_TRACE_LD_PRELOAD"] = "" if pre is None else "=" + pre
            out["LD_PRELOAD"] = self.native_lib + (" " + pre if pre else "")
        return out

    def warm(self, packages: Mapping[str, Any] | None = None) -> None:
        """Prepare what :meth:`finish` needs while the child runs (its module, and the index
        of the distributions in ``packages``, in a thread of its own): that time then does not
        come between the child's end and the outcome written."""
        # deferred: runsnap.tracing.merge, ~15 ms measured under load; only warm() needs it
        from runsnap.tracing.merge import package_index

        def build() -> None:
            try:
                self._index = package_index(packages or {})
            except Exception:  # noqa: BLE001 - finish() builds it then, and reports a failure
                self._index = None

        self._indexing = threading.Thread(target=build, name="runsnap-trace-index", daemon=True)
        self._indexing.start()

    def finish(self, packages: Mapping[str, Any] | None = None,
               env: Mapping[str, str] | None = None,
               outcome: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Merge what the processes wrote into ``[runtime]``; remove the folder. Never raises.

        ``packages``: the snapshot's ``[packages]`` (distributions of imported modules);
        ``env``: the environment the user gave; ``outcome``: the run's ``[outcome]`` (the
        config values a failed run's error quoted: :mod:`runsnap.tracing.quoted`).
        """
        # deferred: runsnap.tracing.merge, ~15 ms measured under load; only finish() needs it
        from runsnap.tracing.merge import build_section

        if self._indexing is not None:
            self._indexing.join()
        try:
            section = build_section(self.folder, packages or {}, self.native_note, env,
                                    self._index, self.started_ns, outcome)
        except Exception as exc:  # a broken trace never costs the outcome
            section = not_traced(f"the trace could not be read: {type(exc).__name__}: {exc}")
        _remove(self.folder)
        return section


def _remove(folder: str) -> None:
    """Remove ``folder`` and what is in it, ignoring errors (as ``shutil.rmtree(folder,
    ignore_errors=True)``, without importing :mod:`shutil`, which brings bz2, lzma and zlib:
    this runs between the child's end and the outcome written)."""
    for top, dirs, files in os.walk(folder, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(top, name))
            except OSError:  # noqa: PERF203 - gone already, or not ours to remove
                pass
        for name in dirs:
            path = os.path.join(top, name)
            try:
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    os.rmdir(path)
            except OSError:
                pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def prepare(
    argv: Sequence[str], env: Mapping[str, str], cwd: str, *, enabled: bool = True,
    native: bool = True,
) -> tuple[Trace | None, str]:
    """A :class:`Trace` for launching ``argv``, or ``(None, why it is not traced)``."""
    if not enabled:
        return None, "tracing was turned off (--no-trace)"
    is_python, what = python_program(argv, env, cwd)
    if not is_python:
        return None, f"not a Python program: {what}"
    lib, note = (None, "turned off") if not native else _native(os.environ)
    folder = _private_dir("runsnap-trace-")  # 0700: values are raw until merged
    return Trace(folder, lib, note), what


def _private_dir(prefix: str) -> str:
    """A new folder only this user can read, as :func:`tempfile.mkdtemp` makes it, in
    ``$TMPDIR`` or ``/tmp``; elsewhere (neither writable) by :func:`tempfile.mkdtemp` itself.

    Made here because importing :mod:`tempfile` (with :mod:`shutil`, :mod:`random`) would delay
    the child's start (benchmarks/RESULTS.md).
    """
    base = os.environ.get("TMPDIR") or "/tmp"
    for _ in range(8):
        path = os.path.join(base, prefix + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
        except OSError:
            break
    # deferred: tempfile, ~18 ms measured under load; only _private_dir() needs it
    import tempfile

    return tempfile.mkdtemp(prefix=prefix)


def _native(env: Mapping[str, str]) -> tuple[str | None, str]:
    # deferred: runsnap.tracing.native, ~11 ms measured under load; only _native() needs it
    from runsnap.tracing.native import interposer

    return interposer(env)


def native_reader(name: str) -> str | None:
    """Who reads ``name`` from native code (``NCCL_ALGO`` -> ``NCCL (libnccl.so)``), if known
    (:func:`runsnap.knowledge.readers.native_reader`; imported when asked, off the capture
    path)."""

    return reader(name)


#: Read off the capture path (the record classes it reads cost ~3.5 ms): imported when asked.
__getattr__ = lazy_names(__name__, {"read_status": f"{__name__}.status"}, globals())
