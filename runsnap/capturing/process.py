"""``capture --pid``: the context of a process that is already running, read with psutil.

:func:`context_for_pid` turns a live process into the same :class:`CaptureContext` a launch
would have (its argv, environment and cwd), so every collector works unchanged (models and
repositories found from argv and cwd, packages listed from its interpreter), plus a
``[process]`` section: pid, executable, start time, user, children, and the shared libraries it
has mapped with versions parsed from their file names (``libnccl.so.2.21.5`` -> ``2.21.5``).

The environment is the one the process was *started* with (``/proc/PID/environ``); changes the
program made to its own environment later are not visible from outside.
"""

from __future__ import annotations

import os
import re

import psutil

from runsnap.base import programs
from runsnap.base.argv import is_python_name
from runsnap.base.timestamps import utc_timestamp
from runsnap.capturing.context import CaptureContext, Interpreter
from runsnap.errors import ProcessError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.options import CaptureOptions
    from runsnap.snapshot.shapes import ProcessChild, ProcessSection

__all__ = ["context_for_pid", "library_version", "process_section"]

# libnccl.so.2.21.5, libcudart.so.12, libcudart-d0da41ae.so.11.0 (wheel-vendored), libc.so.6
_SO_SUFFIX = re.compile(r"^(?P<name>.+?)\.so(?:\.(?P<version>\d+(?:\.\d+)*))?$")
# libLLVM-17.so, libpython3.11.so (a version before ".so" when none follows it)
_DASH_VERSION = re.compile(r"^(?P<name>.+?)-(?P<version>\d+(?:\.\d+)+)$")
# The hash pip's auditwheel puts into vendored library names: libcudart-d0da41ae
_WHEEL_HASH = re.compile(r"-[0-9a-f]{8}$")


def library_version(filename: str) -> tuple[str, str | None] | None:
    """(library name, version or None) for a shared-library file name; None if not one.

    >>> library_version("libnccl.so.2.21.5"), library_version("libcudart.so.12")
    (('libnccl', '2.21.5'), ('libcudart', '12'))
    >>> library_version("libcublas-3a1b2c3d.so.12"), library_version("libLLVM-17.0.so")
    (('libcublas', '12'), ('libLLVM', '17.0'))
    >>> library_version("_C.cpython-311-x86_64-linux-gnu.so"), library_version("model.bin")
    (('_C.cpython-311-x86_64-linux-gnu', None), None)
    """
    m = _SO_SUFFIX.match(filename)
    if not m:
        return None
    name, version = m["name"], m["version"]
    name = _WHEEL_HASH.sub("", name)
    if version is None:
        d = _DASH_VERSION.match(name)
        if d:
            name, version = d["name"], d["version"]
    return name, version


def _libraries(proc: Any, errors: list[str]) -> dict[str, Any]:

    try:
        maps = proc.memory_maps(grouped=True)
    except (psutil.Error, OSError, NotImplementedError) as exc:
        errors.append(f"mapped libraries unreadable: {type(exc).__name__}: {exc}")
        return {}
    libs: dict[str, Any] = {}
    for m in maps:
        path = m.path
        deleted = path.endswith(" (deleted)")
        if deleted:
            path = path[: -len(" (deleted)")]
        if not path.startswith("/"):
            continue
        base = os.path.basename(path)
        parsed = library_version(base)
        if parsed is None:
            continue
        entry = libs.get(base)
        if entry is not None:  # the same file name from two places: both are evidence
            entry.setdefault("other_paths", []).append(path)
            continue
        entry = {"path": path, "name": parsed[0]}
        if parsed[1] is not None:
            entry["version"] = parsed[1]
        if deleted:
            entry["deleted"] = True
        libs[base] = entry
    return {k: libs[k] for k in sorted(libs)}


def process_section(proc: Any) -> ProcessSection:
    """The ``[process]`` section for a :class:`psutil.Process` (fields it cannot read -> errors)."""

    errors: list[str] = []
    section: ProcessSection = {"pid": proc.pid}

    def get(key: str, fn: Any) -> None:
        try:
            section[key] = fn()  # type: ignore[literal-required]
        except (psutil.Error, OSError) as exc:
            errors.append(f"{key}: {type(exc).__name__}: {exc}")

    get("ppid", proc.ppid)
    get("name", proc.name)
    get("exe", proc.exe)
    get("status", proc.status)
    get("started_at", lambda: utc_timestamp(proc.create_time()))
    get("user", proc.username)
    get("num_threads", proc.num_threads)
    children: list[ProcessChild] = []
    try:
        for child in proc.children(recursive=True):
            entry: ProcessChild = {"pid": child.pid}
            try:
                with child.oneshot():
                    entry["ppid"] = child.ppid()
                    entry["name"] = child.name()
                    entry["argv"] = _proc_list(child.pid, "cmdline") or child.cmdline()
            except psutil.Error as exc:
                entry["error"] = f"{type(exc).__name__}"
            children.append(entry)
    except psutil.Error as exc:
        errors.append(f"children: {type(exc).__name__}: {exc}")
    section["children"] = children
    libs = _libraries(proc, errors)
    section["libraries_count"] = len(libs)
    section["libraries"] = libs
    section["errors"] = errors
    return section


def context_for_pid(
    pid: int,
    options: CaptureOptions,
) -> tuple[CaptureContext, ProcessSection]:
    """The capture context of the running process ``pid`` and its ``[process]`` section.

    Raises :class:`~runsnap.errors.ProcessError` (exit status 2) when there is no such process
    or its argv, environment or cwd cannot be read (another user's process without root).
    """

    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise ProcessError(f"--pid {pid}: not a process id (a positive whole number)")
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            argv = proc.cmdline()
            env = proc.environ()
            cwd = proc.cwd()
            exe = proc.exe()
        # psutil reads /proc in text mode, which turns a CR into a LF: read the bytes instead
        argv = _proc_list(pid, "cmdline") or argv
        raw_env = _proc_list(pid, "environ")
        if raw_env is not None:
            env = dict(item.partition("=")[::2] for item in raw_env if "=" in item)
    except (psutil.NoSuchProcess, OverflowError):
        raise ProcessError(f"no process with PID {pid}") from None
    except psutil.ZombieProcess:
        raise ProcessError(f"process {pid} has exited (a zombie): nothing left to read") from None
    except (psutil.AccessDenied, PermissionError):
        raise ProcessError(
            f"permission denied reading process {pid} (run runsnap as its user or as root)"
        ) from None
    if not argv:
        raise ProcessError(f"process {pid} has no command line (a kernel thread?)")
    interpreter = None
    if options.python is None and exe and is_python_name(os.path.basename(exe)):
        # the interpreter it really runs, in the virtual environment it runs in
        interpreter = running_interpreter(pid, argv, env, cwd, exe)
    ctx = CaptureContext(argv=tuple(argv), env=dict(env), cwd=cwd, options=options,
                         interpreter=interpreter)
    return ctx, process_section(proc)


def running_interpreter(pid: int, argv: list[str], env: dict[str, str], cwd: str,
                        exe: str) -> Interpreter:
    """The interpreter a running Python process is, with its virtual environment.

    ``/proc/PID/exe`` is the base binary (a venv's ``bin/python`` is a symlink to it), so the
    environment is found as Python itself found it at start-up (``sys.prefix``: a
    ``pyvenv.cfg`` beside the executable it was started as, or one folder up): from argv[0]
    (resolved in its cwd or along its ``PATH``), else from the ``site-packages`` folders its
    memory maps (its native extensions), else from ``VIRTUAL_ENV`` / ``CONDA_PREFIX`` when
    that environment's python is the same binary.
    """
    real = os.path.realpath(exe)
    tried: list[tuple[str | None, str]] = [(exe, "its executable is in it")]
    prog = argv[0] if argv else ""
    if prog:
        path = (os.path.join(cwd, prog) if os.sep in prog else
                programs.which(prog, path=env.get("PATH", os.defpath)))
        tried.append((path, f"its argv[0] ({prog}) is in the virtual environment"))
    for prefix in _mapped_prefixes(pid):
        tried.append((os.path.join(prefix, "bin", os.path.basename(prog) or "python"),
                      f"its memory maps {prefix}'s site-packages"))
        tried.append((os.path.join(prefix, "bin", "python"),
                      f"its memory maps {prefix}'s site-packages"))
    tried += [(os.path.join(env[var], "bin", "python"), f"its {var} is set")
              for var in ("VIRTUAL_ENV", "CONDA_PREFIX") if env.get(var)]
    for cand, why in tried:
        if not cand or not os.path.exists(cand) or os.path.realpath(cand) != real:
            continue
        venv = _venv_of(cand)
        if venv:
            return Interpreter(cand, f"the running process's interpreter: {why} ({venv})",
                               runs_child=True)
    return Interpreter(exe, "the running process's interpreter (/proc/PID/exe)",
                       runs_child=True)


def _venv_of(python: str) -> str:
    """The virtual environment whose interpreter ``python`` is (a ``pyvenv.cfg`` beside it or
    one folder up, as ``site`` looks for it); ``""`` when it is none's."""
    here = os.path.dirname(os.path.abspath(python))
    for folder in (here, os.path.dirname(here)):
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return folder
    return ""


def _mapped_prefixes(pid: int) -> list[str]:
    """Prefixes (``PREFIX/lib/pythonX.Y/site-packages``) of the files process ``pid`` maps."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return []
    out: list[str] = []
    for line in text.splitlines():
        at = line.find("/lib/python")
        if at < 0 or "/site-packages/" not in line:
            continue
        start = line.find("/", line.rfind(" ", 0, at) + 1)
        prefix = line[start:at] if start >= 0 else ""
        if prefix and prefix not in out and os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            out.append(prefix)
    return out


def _proc_list(pid: int, name: str) -> list[str] | None:
    """``/proc/PID/cmdline`` or ``environ`` as the NUL-separated strings they are, bytes
    decoded as the environment is (undecodable bytes kept), CR and all; None where there is
    no such file (not Linux) or it cannot be read."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    parts = data.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return [os.fsdecode(p) for p in parts]
