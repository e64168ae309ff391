"""The capture context: everything the collectors read, decided once.

A :class:`CaptureContext` holds the child's argv, its exact environment, its cwd, the interpreter
it will run, and the repositories and model paths in play: what is recorded. What is launched
is a :class:`~runsnap.launch.LaunchSpec` built from it (:func:`runsnap.capturing.launch_spec`).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time

from runsnap.base import cache, programs
from runsnap.base.argv import is_python_name
from runsnap.base.files import read_head
from runsnap.base.paths import current_dir, zip_refusal
from runsnap.base.probeanswer import checked, failed
from runsnap.base.pythons import add_direct_url, editable_source, first_error
from runsnap.base.records import FrozenRecord, Record
from runsnap.capturing.options import DEFAULT_MAX_DIFF_BYTES, CaptureOptions
from runsnap.errors import CaptureError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["DEFAULT_MAX_DIFF_BYTES", "CaptureContext", "Interpreter"]

#: Default cap on the stored uncommitted diff of one repository.


class Interpreter(FrozenRecord):
    """The Python interpreter whose packages matter, and why it was chosen."""

    path: str
    """The interpreter as it will be run (may be a symlink inside a virtual environment)."""

    reason: str
    """Why this one: ``--python``, ``argv[0]``, ``shebang of X``, ``VIRTUAL_ENV`` ..."""

    runs_child: bool = False
    """The child itself is this interpreter (``--python``, ``argv[0]`` or its ``#!`` line), as
    opposed to the environment's interpreter found for a child that may not be Python."""


class CaptureContext(Record):
    """What one capture is about. Collectors never change what is recorded (argv, env, cwd,
    label, repos, models, python, the diff cap); they share the work in flight through
    :attr:`started` (a starter puts its handle there, its collector takes it out) and the
    cached answers of :attr:`executable`, :attr:`interpreter` and :attr:`probe`."""

    __slots__ = (
        "argv", "env", "cwd", "label", "repos", "models", "python", "max_diff_bytes", "started",
        "_probe", "_probe_cached", "_probe_key", "_probe_started_ns",
        "_executable", "_executable_known", "_interpreter", "_probe_answer",
    )
    _repr_fields = ("argv", "env", "cwd", "label", "repos", "models", "python", "max_diff_bytes")
    # What the dataclass compared: every field but ``started`` (the cached answers were not fields).
    _eq_fields = (*_repr_fields, "_probe", "_probe_cached", "_probe_key", "_probe_started_ns")

    argv: tuple[str, ...]
    """The child's command line exactly as given (empty: snapshot the current context)."""

    env: Mapping[str, str]
    """The child's complete environment, exactly as it will be passed."""

    cwd: str
    """The child's working directory."""

    label: str
    """The run's name, chosen by the user."""

    repos: tuple[str, ...]
    """Extra repositories named with ``--repo``."""

    models: tuple[str, ...]
    """Model paths or Hugging Face repo ids named with ``--model``."""

    python: str | None
    """The interpreter named with ``--python``, if any."""

    max_diff_bytes: int
    """Cap on each repository's stored uncommitted diff."""

    started: dict[str, Any]
    """Work that collectors began early (see ``collectors.start``), for them to finish."""

    _probe: programs.Pending | None
    _probe_cached: dict[str, Any] | None
    _probe_key: str
    _probe_started_ns: int
    # The answers of :attr:`executable`, :attr:`interpreter` and :attr:`probe`, once known.
    _executable: str | None
    _executable_known: bool
    _interpreter: Interpreter | None
    _probe_answer: dict[str, Any] | None

    def __init__(
        self,
        argv: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        options: CaptureOptions | None = None,
        interpreter: Interpreter | None = None,
    ) -> None:
        """``env`` defaults to a copy of this process's environment, ``cwd`` to the current
        directory (both read when the context is made). ``options``: what the user asked for
        (label, repositories, models, interpreter, diff cap; its ``started``, work begun early
        for this capture and handed over, collector name -> its handle, e.g.
        ``runsnap.capturing.collectors.git.prestart``'s plan, which a collector checks suits
        before taking it over). ``interpreter``: the interpreter when it is already known, with
        its reason (a running process's own, read from the process by ``capture --pid``)."""
        o = CaptureOptions() if options is None else options
        self.argv = argv
        self.env = dict(os.environ) if env is None else env
        self.cwd = current_dir() if cwd is None else cwd
        self.label = o.label
        self.repos = o.repos
        self.models = o.models
        self.python = o.python
        self.max_diff_bytes = o.max_diff_bytes
        self.started = dict(o.started or {})
        self._probe = None
        self._probe_cached = None
        self._probe_key = ""
        self._probe_started_ns = 0
        self._executable = None
        self._executable_known = False
        self._interpreter = interpreter
        self._probe_answer = None

    # ------------------------------------------------------------------ executable

    @property
    def executable(self) -> str | None:
        """What the child's ``PATH`` makes of argv[0] (None when not found or no command)."""
        if not self._executable_known:
            self._executable = self._find_executable()
            self._executable_known = True
        return self._executable

    def _find_executable(self) -> str | None:
        if not self.argv:
            return None
        prog = self.argv[0]
        if os.sep in prog:
            path = prog if os.path.isabs(prog) else os.path.join(self.cwd, prog)
            return path if os.path.exists(path) else None
        return programs.which(prog, path=self.env.get("PATH", os.defpath))

    def first_path_entry(self) -> str | None:
        """The first ``sys.path`` entry the child's interpreter will have, as CPython sets it.

        ``""`` (the working directory, as ``python -c`` and ``-m`` have it) for no command, a
        command with ``-c``/``-m``/``-`` or none; the folder of the script (symlinks resolved)
        for ``python script.py`` and for a console script; ``None`` when ``-I`` or ``-P`` leave
        it out, or ``PYTHONSAFEPATH`` does (unless ``-E`` has the interpreter ignore it). A
        program that is not Python keeps ``""``: its interpreter, if any, is unknown.

        >>> import os
        >>> CaptureContext(argv=("python3", "-u", "x/run.py"), env={}, cwd="/w").first_path_entry()
        '/w/x'
        >>> CaptureContext(argv=("python3", "-m", "pkg"), env={}, cwd="/w").first_path_entry()
        ''
        >>> CaptureContext(argv=("python3", "-I", "x.py"), env={}, cwd="/w").first_path_entry()
        >>> CaptureContext(argv=("python3", "x.py"), env={"PYTHONSAFEPATH": "1"},
        ...                cwd="/w").first_path_entry()
        >>> CaptureContext(argv=("python3", "-E", "x.py"), env={"PYTHONSAFEPATH": "1"},
        ...                cwd="/w").first_path_entry()
        '/w'
        """
        if not self.argv or self.python:
            return ""
        safe = bool(self.env.get("PYTHONSAFEPATH"))
        prog = os.path.basename(self.argv[0])
        if not is_python_name(prog):
            exe = self.executable
            if exe and _shebang_python(exe, self.env):
                return None if safe else os.path.dirname(os.path.realpath(exe))
            return ""
        args = iter(self.argv[1:])
        entry = ""
        for arg in args:
            if arg in ("-c", "-m", "-") or arg.startswith(("-c", "-m")):
                break
            if arg == "--":
                arg = next(args, "")
                entry = arg and os.path.dirname(os.path.realpath(os.path.join(self.cwd, arg)))
                break
            if arg in ("-W", "-X", "--check-hash-based-pycs"):
                next(args, None)
                continue
            if arg.startswith(("-W", "-X")):
                continue
            if arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
                if "I" in arg[1:] or "P" in arg[1:]:
                    return None
                if "E" in arg[1:]:
                    safe = False  # -E: PYTHON* variables are ignored
                continue
            if arg.startswith("--"):
                continue
            entry = os.path.dirname(os.path.realpath(os.path.join(self.cwd, arg)))
            break
        return None if safe else entry

    @property
    def interpreter(self) -> Interpreter:
        """The interpreter the child will run (docs/launch.md, "Which interpreter's packages")."""
        if self._interpreter is None:
            self._interpreter = self._find_interpreter()
        return self._interpreter

    def _find_interpreter(self) -> Interpreter:
        if self.python:
            found = self._find(self.python)
            return Interpreter(found or self.python, "--python", runs_child=True)
        exe = self.executable
        if exe:
            if is_python_name(os.path.basename(exe)) or is_python_name(
                os.path.basename(os.path.realpath(exe))
            ):
                return Interpreter(exe, "argv[0] is a Python interpreter", runs_child=True)
            shebang = _shebang_python(exe, self.env)
            if shebang:
                return Interpreter(shebang, f"the shebang of {os.path.basename(exe)} names it",
                                   runs_child=True)
        for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
            prefix = self.env.get(var)
            if prefix:
                for name in ("python", "python3"):
                    cand = os.path.join(prefix, "bin", name)
                    if os.access(cand, os.X_OK):
                        return Interpreter(cand, f"{var} is set (the active environment)")
        for name in ("python", "python3"):
            found = programs.which(name, path=self.env.get("PATH", os.defpath))
            if found:
                return Interpreter(found, f"'{name}' on the child's PATH")
        return Interpreter(sys.executable, "no interpreter on the child's PATH: runsnap's own")

    def _find(self, prog: str) -> str | None:
        if os.sep in prog:
            return prog if os.path.isabs(prog) else os.path.join(self.cwd, prog)
        return programs.which(prog, path=self.env.get("PATH", os.defpath))

    # ------------------------------------------------------------------ probe

    def start_probe(self) -> None:
        """Start the package probe in the child's interpreter, so it runs beside other work.

        A cached answer that still holds (see :mod:`runsnap.base.cache`) is used instead.
        """
        if self._probe is not None or self._probe_cached is not None:
            return

        source = _probe_source()
        first = self.first_path_entry()
        if self.env.get("PYTHONSAFEPATH"):
            # the probe's `python -c` puts nothing first (PYTHONSAFEPATH); the child may still
            # have an entry (-E ignores the variable)
            if first is not None:
                source = f"import sys; sys.path[0:0] = {[first]!r}\n" + source
        elif first != "":
            # `python -c` puts the working directory first on sys.path; the child does not
            # (a script's folder, or nothing): list what the child will import, not what -c sees.
            source = f"import sys; sys.path[0:1] = {[first] if first else []!r}\n" + source
        if cache.probe_cacheable(self.interpreter.path):
            self._probe_key = cache.probe_key(self.interpreter.path, self.cwd, self.env, source)
            cached = cache.load_probe(self._probe_key, self.cwd)
            if cached is not None:
                self._probe_cached = cached
                return
        self._probe_started_ns = time.time_ns()
        self._probe = programs.start([self.interpreter.path, "-c", source], cwd=self.cwd,
                                  env=self.env)

    def probe_ready(self) -> bool:
        """Whether the probe's answer is at hand without waiting (a cached answer that holds)."""
        return self._probe_cached is not None or self._probe_answer is not None

    @property
    def probe(self) -> dict[str, Any]:
        """What the probe reported, checked where it arrived (:func:`runsnap.base.probeanswer.checked`:
        every field present and of its type); ``error`` beside the fields of an empty answer
        when it could not run, or answered wrongly.

        ``probe_from`` says whether the probe ran (``"run"``) or a cached answer that still
        holds was used (``"cache"``).
        """
        if self._probe_answer is None:
            self._probe_answer = self._read_probe()
        return self._probe_answer

    def _read_probe(self) -> dict[str, Any]:
        self.start_probe()
        if self._probe_cached is not None:
            data = self._probe_cached
            data["probe_from"] = "cache"
            for dist in [*data["distributions"], *data["shadowed"]]:
                # direct_url.json is looked for again: cheap, and the cache need not know it
                dist["direct_url_json"] = os.path.exists(os.path.join(
                    dist["location"], dist["metadata_dir"], "direct_url.json"))
        else:
            assert self._probe is not None
            result = self._probe.wait(timeout=120)
            if not result.ok:
                # never result.error_line(): its argv is the probe's whole source
                return failed(f"package probe in {self.interpreter.path} failed with "
                              f"{first_error(result)}", result.returncode)
            try:
                data = json.loads(result.stdout)
            except ValueError as exc:
                return failed(f"package probe in {self.interpreter.path} printed no JSON: {exc}")
            try:
                data = checked(data)
            except ValueError as exc:
                return failed(f"package probe in {self.interpreter.path} answered wrongly: {exc}")

            if self._probe_key:
                cache.store_probe(self._probe_key, self.cwd, data, self._probe_started_ns)
            data["probe_from"] = "run"
        for dist in [*data["distributions"], *data["shadowed"]]:
            if dist.pop("direct_url_json", False):
                add_direct_url(dist)
        return data

    def editable_sources(self) -> list[str]:
        """Source directories of the editable installs in the child's environment."""
        return [source for d in self.probe["distributions"] if (source := editable_source(d))]


@functools.lru_cache(maxsize=1)
def _probe_source() -> str:
    """The probe's source text, read from ``runsnap/probe/`` with :func:`open` (importlib.resources
    would be one more import on every capture)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    refusal = zip_refusal(package)  # the library's face, used from a zip archive
    if refusal:
        raise CaptureError(f"not launched: {refusal}")
    path = os.path.join(package, "probe", "packages.py")
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _shebang_python(exe: str, env: Mapping[str, str]) -> str | None:
    """The Python interpreter a script's ``#!`` line names, if it names one."""
    try:
        head = read_head(exe, 512)
    except OSError:  # a FIFO or a device named as the program is never opened
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    parts = line.split()
    if not parts:
        return None
    if os.path.basename(parts[0]) == "env":
        args = [p for p in parts[1:] if not p.startswith("-") and "=" not in p]
        if not args or not is_python_name(os.path.basename(args[0])):
            return None
        return programs.which(args[0], path=env.get("PATH", os.defpath)) or args[0]
    if is_python_name(os.path.basename(parts[0])):
        return parts[0]
    return None
