"""Unmet requirements, as ``pip check`` finds them: each installed distribution's
``Requires-Dist`` against the versions installed beside it.

The snapshot lists the distributions and where they are installed; their metadata is read where
they are installed on this machine (the same machine, or the same image), so ``runsnap check``
finds what ``pip check`` would have said in the run's environment. A requirement whose
environment marker is false for the run's Python (an ``extra``, another platform) is skipped, as
pip does. The capture path never runs this (it would read every installed distribution's
metadata): the pre-launch guard leaves it to ``runsnap check``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from runsnap.checks.finding import Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["requires_dist", "unmet_requirements"]

#: ``(location, name, version) -> Requires-Dist lines``, or None when not installed here.
Requires = Callable[[str, str, str], "list[str] | None"]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requires_dist(location: str, name: str, version: str) -> list[str] | None:
    """The ``Requires-Dist`` lines of ``name`` ``version`` installed under ``location`` (its
    ``.dist-info/METADATA`` header, :func:`_metadata_requires`; for a legacy ``.egg-info``
    install, its ``requires.txt`` said the same way), or None when absent here."""
    want = _norm(name)
    try:
        entries = os.listdir(location)
    except OSError:
        return None
    for entry in entries:
        egg = entry.endswith(".egg-info")  # name-version[-pyX.Y].egg-info
        if egg:
            dist, _, ver = entry[: -len(".egg-info")].partition("-")
            ver = ver.partition("-py")[0]
        elif entry.endswith(".dist-info"):
            dist, _, ver = entry[: -len(".dist-info")].rpartition("-")
        else:
            continue
        if _norm(dist) != want or ver != version:
            continue
        if egg:
            return _egg_requires(os.path.join(location, entry))
        return _metadata_requires(os.path.join(location, entry, "METADATA"))
    return None


def _metadata_requires(path: str) -> list[str] | None:
    """The ``Requires-Dist`` fields of a ``METADATA`` file read as ``importlib.metadata`` (and
    so pip) reads it: an email header parsed by :mod:`email.parser`, where a line that starts
    with a space or a tab continues the field above, even one that holds nothing else (a
    license text's blank line written as ``"       "``), and only an empty line ends the
    header. A folded field's lines are joined with single spaces."""
    from email.parser import HeaderParser  # only `check` reads METADATA; the capture never

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            header = HeaderParser().parse(fh)
    except OSError:
        return None
    return [" ".join(str(v).split()) for v in header.get_all("Requires-Dist") or ()]


def _egg_requires(folder: str) -> list[str] | None:
    """An ``.egg-info``'s ``requires.txt`` as ``Requires-Dist`` lines: a ``[extra]``,
    ``[:marker]`` or ``[extra:marker]`` section puts its condition on the lines under it, as
    :mod:`importlib.metadata` reads it. No ``requires.txt``: no requirement; an ``.egg-info``
    that is a file (distutils) has none either.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "requires.txt").write_text('b>=1\\n\\n[:python_version < "3"]\\nc\\n'
    ...                                     '[gpu:sys_platform == "linux"]\\ne\\n')
    >>> _egg_requires(str(d))
    ['b>=1', 'c; python_version < "3"', 'e; (sys_platform == "linux") and extra == "gpu"']
    """
    if not os.path.isdir(folder):
        return []
    out: list[str] = []
    condition = ""
    try:
        with open(os.path.join(folder, "requires.txt"), encoding="utf-8",
                  errors="replace") as fh:
            for raw in fh:
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("[") and line.endswith("]"):
                    extra, _, marker = line[1:-1].partition(":")
                    parts = [f"({marker})" if extra and marker else marker,
                             f'extra == "{extra}"' if extra else ""]
                    condition = " and ".join(p for p in parts if p)
                    continue
                out.append(f"{line}; {condition}" if condition else line)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    return out


def _or(found: str | None) -> str:
    """A recorded version, ``""`` when none was written."""
    return "" if found is None else found


def _marker_env(snap: Snapshot) -> dict[str, str]:
    # deferred: packaging, ~153 ms measured under load; only _marker_env() needs it
    from packaging.markers import default_environment

    env = {k: str(v) for k, v in default_environment().items()}
    version = str(snap.records.packages.python_version or "")
    if re.fullmatch(r"\d+\.\d+(\.\d+)?.*", version):
        env["python_full_version"] = version
        env["python_version"] = ".".join(version.split(".")[:2])
    env["extra"] = ""
    return env


def unmet_requirements(snap: Snapshot, requires: Requires = requires_dist) -> list[Finding]:
    """What ``pip check`` reports for the snapshot's interpreter, one finding per line of it
    (``X 1.0 requires Y, which is not installed.``, ``X 1.0 has requirement Y>=2, but you have
    Y 1.5.``)."""
    # deferred: packaging, ~140 ms measured under load; only unmet_requirements() needs it
    from packaging.requirements import InvalidRequirement, Requirement

    dists = snap.records.packages.distributions
    installed = {_norm(n): (n, str(_or(d.version))) for n, d in dists.items()}
    env = _marker_env(snap)
    out: list[Finding] = []
    for name, d in sorted(dists.items()):
        if not d.location:
            continue
        version = str(_or(d.version))
        lines = requires(d.location, str(name), version)
        for line in lines or ():
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            have = installed.get(_norm(req.name))
            if have is None:
                out.append(Finding("unmet-requirement", 86, (
                    f"{name} {version} requires {req.name}, which is not installed."),
                    ("packages", str(name)), (f"Requires-Dist: {line}",)))
            elif req.specifier and not req.specifier.contains(have[1], prereleases=True):
                out.append(Finding("unmet-requirement", 84, (
                    f"{name} {version} has requirement {req}, but you have "
                    f"{have[0]} {have[1]}."), ("packages", str(name)),
                    (f"Requires-Dist: {line}",)))
    return out
