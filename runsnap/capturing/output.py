"""Where snapshots go: the default file name, ``-o`` and ``--dir``, and the snapshot folder
runsnap creates (with a ``.gitignore``, so runsnap never sees its own output)."""

from __future__ import annotations

import os

from runsnap.base.options import DEFAULT_DIR
from runsnap.base.paths import current_dir, path_str
from runsnap.base.patterns import on_use
from runsnap.base.records import FrozenRecord
from runsnap.capturing import naming
from runsnap.capturing.naming import file_stamp, short_host
from runsnap.errors import CaptureError, UsageError
from runsnap.snapshot import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["GITIGNORE", "Target", "default_output", "ensure_snapshot_dir", "resolve_output", "run_name",
           "save_first"]

_UNSAFE = on_use(r"[^A-Za-z0-9._-]+")


def default_output(snapshot: Snapshot, cwd: str | os.PathLike[str] | None = None) -> str:
    """``.runsnap/<UTC timestamp>-<label or command name>.toml`` under ``cwd``.

    >>> from runsnap.snapshot import Snapshot
    >>> default_output(Snapshot(meta={"captured_at": "2026-11-29T16:14:35.123+00:00",
    ...     "label": "good run"}, sections={}), "/w")
    '/w/.runsnap/20261129T161435.123Z-good-run.toml'
    """
    stamp = file_stamp(snapshot.captured_at)
    name = run_name(snapshot)
    launcher = snapshot.launcher
    if launcher is not None and "rank" in launcher:  # ranks start in the same instant
        name += f"-{short_host(snapshot.host)}-rank{launcher['rank']}"
    base = os.fspath(cwd) if cwd is not None else current_dir()
    return path_str(os.path.join(base, DEFAULT_DIR, f"{stamp}-{name}.toml"))


def run_name(snapshot: Snapshot) -> str:
    """The run's name for file names: its label, else the command's (``python -m pkg.mod``:
    ``pkg.mod``), with anything but letters, digits, ``.``, ``_`` and ``-`` made ``-``."""
    argv = snapshot.get("command", {}).get("argv") or []
    name = snapshot.label or (os.path.basename(argv[0]) if argv else "context")
    if not snapshot.label and len(argv) > 2 and argv[1] == "-m":
        name = argv[2]  # python -m sglang.launch_server -> sglang.launch_server
    return _UNSAFE.sub("-", name).strip("-")[:60] or "run"


def resolve_output(
    snapshot: Snapshot,
    output: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> Target:
    """Where to write ``snapshot`` (:class:`Target`): ``output`` if given, its placeholders (``{host}``,
    ``{rank}``, ``{job}``... :data:`runsnap.capturing.naming.PLACEHOLDERS`) filled from the
    launcher's variables, else :func:`default_output`'s name in ``out_dir`` (or
    ``./.runsnap``), that folder made ready by :func:`ensure_snapshot_dir`.

    When the name is runsnap's own (no ``output``), has placeholders, or a launcher started
    several ranks, the file is claimed
    exclusively (:func:`runsnap.capturing.naming.claim`): ranks that would share a name get
    ``.1``, ``.2``... instead of overwriting each other. Raises
    :class:`~runsnap.errors.UsageError` for an unknown placeholder.
    """
    launcher = snapshot.launcher
    templated = bool(output) and naming.has_placeholders(os.fspath(output or ""))
    if output:
        target = os.fspath(output)
        if templated:
            values = naming.values_for(launcher, host=snapshot.host, time=snapshot.captured_at,
                                       label=run_name(snapshot))
            try:
                target = naming.fill(target, values)
            except ValueError as exc:
                raise UsageError(f"-o {os.fspath(output)}: {exc}") from None
        target = path_str(target)
    else:
        target = default_output(snapshot)
        if out_dir:
            target = path_str(os.path.join(out_dir, os.path.basename(target)))
        ensure_snapshot_dir(os.path.dirname(target), ours=not out_dir)
    # A name runsnap made (the default name, a template) is claimed exclusively when first
    # saved (save_first): two captures with the same label in the same millisecond get
    # NAME.toml and NAME.1.toml, never one file.
    ranks = launcher is not None and int(launcher.get("world_size", 1) or 1) > 1
    exclusive = bool(templated or not output or ranks)
    # One rank of a job among thousands writing into one (often shared) folder: the folder is
    # not listed to sweep dead writers' temporaries (a listing per rank is quadratic in the
    # job's size on the file system's metadata server; benchmarks/manyranks.py).
    return Target(target, exclusive, bool(templated or ranks))


class Target(FrozenRecord):
    """Where a snapshot goes: the path, and whether its name must be claimed exclusively
    (a record of runsnap's own: ``typing.NamedTuple`` would import typing on every capture)."""

    path: str
    """The snapshot's path."""

    exclusive: bool
    """Whether the name is runsnap's own and must be claimed, never replaced."""

    shared: bool = False
    """Whether many ranks write into the folder (a template, or a launcher's ranks): its
    writes do not list it (:func:`runsnap.base.atomic.sweep_temporaries`), and a wrapped
    capture's first save waits for the child to outlive a short delay
    (:mod:`runsnap.capturing.firstsave`)."""


def save_first(snapshot: Snapshot, target: Target) -> Snapshot:
    """The first save of a capture: to a claimed name when the name is runsnap's own (see
    :func:`runsnap.capturing.naming.claim`), else atomically replacing the path; later saves
    replace the file the first one made. Raises :class:`~runsnap.errors.CaptureError`."""
    if not target.exclusive:
        return snapshot.save(target.path, sweep=not target.shared)

    try:
        path = naming.claim(target.path, dumps(snapshot).encode("utf-8"), sweep=not target.shared)
    except OSError as exc:
        raise CaptureError(f"cannot write {target.path}: {exc.strerror or exc}") from None
    return snapshot.replace(path=path)


#: What runsnap writes into a snapshot folder it creates: git, and tools that read
#: ``.gitignore``, then never see snapshots (the convention of virtualenv and pytest's cache).
GITIGNORE = "# created by runsnap: snapshots are not part of the project\n*\n"


def ensure_snapshot_dir(folder: str, ours: bool = False) -> None:
    """Create ``folder`` with a ``.gitignore`` holding ``*`` when runsnap creates it; the
    default ``.runsnap`` folder (``ours``) gets one even when it already exists without."""
    created = not os.path.isdir(folder)
    if created:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return  # the save reports it, with the file's name
    ignore = os.path.join(folder, ".gitignore")
    if (created or ours) and not os.path.lexists(ignore):
        try:
            with open(ignore, "x", encoding="utf-8") as fh:
                fh.write(GITIGNORE)
        except OSError:
            pass  # a read-only folder still takes no snapshot; the save says why
