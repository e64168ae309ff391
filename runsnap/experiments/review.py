"""Before ``replay`` or ``bisect`` runs what a snapshot recorded: can it be launched at all, is
it this machine's and this user's, and what exactly will run.

A snapshot is a file anyone can hand over, and replaying it runs its argv in its working
directory with its environment: ``touch PWNED``, an ``sh -c`` hidden behind ``\\r\\e[2K``, a
``BASH_ENV`` script that ``show`` never mentions. So:

* :func:`check_launchable`: text no process can be given (a NUL anywhere, ``=`` in a variable
  name) is one clear error (exit 2) instead of a traceback from ``exec``.
* :func:`foreign`: why the snapshot is not this machine's and this user's (``[meta] host``,
  and ``fingerprint_key``, which names the user's own key file).
* :func:`cwd_refused`: the root and the system's own folders are never a working directory
  runsnap launches in (docs/bisect.md).
* :func:`what_runs`: the argv, the working directory and the variables that make a shell,
  the loader or an interpreter run code before the program does
  (``knowledge/startup-variables.tsv``), each made visible with its escapes shown.

The command line decides with these whether to ask, refuse or go on (``--yes``).
"""

from __future__ import annotations

import fnmatch
import functools
import os

from runsnap.base.terminal import neutralise
from runsnap.errors import SnapshotError, UsageError
from runsnap.knowledge import rule_lines
from runsnap.redact import load_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from runsnap.snapshot import Snapshot

__all__ = ["SYSTEM_DIRS", "check_launchable", "cwd_refused", "foreign", "must_ask", "refuse_cwd",
           "startup_variables", "what_runs"]

#: Folders (and everything under them) never used as a launch's working directory.
SYSTEM_DIRS = ("/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/usr", "/lib",
               "/lib32", "/lib64", "/libx32", "/run", "/var/lib", "/var/run")


def check_launchable(snapshot: Snapshot) -> None:
    """Raise :class:`~runsnap.errors.SnapshotError` when the recorded launch holds text no
    process can be started with: a NUL in an argument, the working directory or a variable,
    ``=`` in a variable name, an empty name."""
    where = snapshot.path_text or "snapshot"
    cmd = snapshot.records.command
    for i, arg in enumerate(cmd.argv):
        if isinstance(arg, str) and "\0" in arg:
            raise SnapshotError(f"{where}: argv[{i}] holds a NUL byte, which no program can "
                                f"be given ({neutralise(arg[:80])!s})")
    cwd = cmd.cwd
    if isinstance(cwd, str) and "\0" in cwd:
        raise SnapshotError(f"{where}: the working directory holds a NUL byte")
    for name, value in snapshot.records.env.vars.items():
        shown = neutralise(str(name)[:80])
        if not name or "=" in name or "\0" in name:
            raise SnapshotError(f"{where}: [env] variable name {shown!r} cannot be set "
                                "(empty, or holding '=' or a NUL byte)")
        if isinstance(value, str) and "\0" in value:
            raise SnapshotError(f"{where}: [env] {shown} holds a NUL byte, which no variable "
                                "can hold")


def foreign(snapshot: Snapshot) -> list[str]:
    """Why ``snapshot`` did not come from this machine and this user ([] when it did)."""

    meta = snapshot.records.meta
    reasons = []
    host = meta.host
    here = os.uname().nodename
    if host != here:
        reasons.append(f"captured on host {neutralise(str(host))!r}, this is {here!r}"
                       if host else "it records no host")
    key = meta.fingerprint_key
    if key != load_key().id:
        reasons.append("made with another user's fingerprint key" if key
                       else "it records no fingerprint key")
    return reasons


def cwd_refused(cwd: str) -> str | None:
    """Why runsnap will not launch in ``cwd`` (None: it will).

    >>> cwd_refused("/"), cwd_refused("/etc/ssh"), cwd_refused("/home/me/w")
    ('the root folder', 'a system folder (/etc)', None)
    """
    path = os.path.normpath(cwd) if cwd else "/"
    if path in ("/", "//"):
        return "the root folder"
    for top in SYSTEM_DIRS:
        if path == top or path.startswith(top + "/"):
            return f"a system folder ({top})"
    return None


@functools.lru_cache(maxsize=1)
def startup_variables() -> tuple[tuple[str, str], ...]:
    """(name or ``PREFIX*``, what it does) from ``knowledge/startup-variables.tsv``."""

    return tuple((row[0], row[1] if len(row) > 1 else "") for row in rule_lines(
        "startup-variables.tsv"))


def _startup(name: str) -> str | None:
    for pattern, what in startup_variables():
        if name == pattern or (pattern.endswith("*") and fnmatch.fnmatchcase(name, pattern)):
            return what
    return None


def what_runs(argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> list[str]:
    """Lines saying exactly what a launch runs: every argument on its own line, the working
    directory, and each variable that runs code before the program, with its value; all with
    their control characters shown as escapes (a ``\\r`` cannot hide the line before it)."""
    lines = [f"  argv[{i}] = {neutralise(arg)}" for i, arg in enumerate(argv)]
    lines.append(f"  cwd = {neutralise(cwd)}")
    for name in sorted(env):
        what = _startup(name)
        if what is not None:
            lines.append(f"  {neutralise(name)} = {neutralise(env[name])}  ({what})")
    return lines


def must_ask(snapshots: Sequence[Snapshot], yes: bool, interactive: bool) -> list[str]:
    """Why the user must be asked before these snapshots run ([]: go on): each foreign
    snapshot's reasons; with a terminal on stdin, asking is the rule (``--yes`` skips it)."""
    if yes:
        return []
    reasons = [f"{s.path_text or 'snapshot'}: {r}" for s in snapshots for r in foreign(s)]
    if interactive and not reasons:
        reasons.append("stdin is a terminal")
    return reasons


def refuse_cwd(cwd: str) -> None:
    """Raise :class:`~runsnap.errors.UsageError` when :func:`cwd_refused` says so."""
    why = cwd_refused(cwd)
    if why is not None:
        raise UsageError(f"the snapshot's working directory {neutralise(cwd)} is {why}: runsnap "
                         "does not launch there (docs/bisect.md); run it by hand if you mean it")
