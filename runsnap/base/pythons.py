"""Python interpreters and installed distributions as the capture and who-reads see them: the
interpreter ``--python`` names (checked before anything is launched), and what a
distribution's ``direct_url.json`` (PEP 610) says about where it came from."""

from __future__ import annotations

import json
import os
import re

from runsnap.base import programs
from runsnap.base.argv import is_python_name
from runsnap.base.records import FrozenRecord
from runsnap.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["DirectUrl", "add_direct_url", "check_python", "editable_source", "file_url_path",
           "first_error"]


def check_python(prog: str, cwd: str, env: Mapping[str, str]) -> str:
    """The interpreter ``--python prog`` names, or :class:`~runsnap.errors.UsageError` when it
    is missing or is not Python, so that nothing is launched on a mistaken ``--python``.

    A name Python interpreters have (``python3.11``, a venv's ``bin/python``) is taken as is;
    anything else is asked, in one short run, what it is.
    """

    if os.sep in prog:
        path: str | None = prog if os.path.isabs(prog) else os.path.join(cwd, prog)
    else:
        path = programs.which(prog, path=env.get("PATH", os.defpath))
    if path is None or not os.path.exists(path):
        raise UsageError(f"--python {prog}: no such interpreter")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise UsageError(f"--python {prog}: not an executable file")
    if is_python_name(os.path.basename(path)) or is_python_name(
            os.path.basename(os.path.realpath(path))):
        return path
    answer = programs.run([path, "-c", "import sys; print(sys.implementation.name)"], cwd=cwd,
                       env=dict(env), timeout=30)
    if not answer.ok or not answer.text().strip().isidentifier():
        raise UsageError(f"--python {prog}: not a Python interpreter ({first_error(answer)})")
    return path


def first_error(result: programs.Result) -> str:
    """The line that says what went wrong, and the exit status.

    The first line of the error output, except for a traceback, whose last line says it.
    """
    lines = [ln.strip() for ln in result.stderr.decode("utf-8", "replace").splitlines()
             if ln.strip()]
    if not lines:
        out = result.stdout.decode("utf-8", "replace").strip().splitlines()
        lines = [f"printed {out[0][:80]!r}"] if out and result.ok else []
    line = (lines[-1] if lines[0].startswith("Traceback") else lines[0]) if lines else ""
    status = f"exit status {result.returncode}"
    return f"{status}: {line[:300]}" if line else status


class DirectUrl(FrozenRecord):
    """What a distribution's ``direct_url.json`` (PEP 610) says, read once where it is found:
    a document the PEP does not allow is one :class:`ValueError` naming the field, never a
    value of another type passed on (``"editable": "false"`` is no editable install)."""

    url: str
    editable: bool = False
    """``dir_info.editable``: installed with ``pip install -e``."""
    vcs: str | None = None
    """``vcs_info.vcs`` (``git`` ...); ``None``: not installed from a version control URL."""
    commit_id: str = ""
    requested_revision: str = ""

    @classmethod
    def parse(cls, data: Any) -> DirectUrl:
        """The record of a parsed ``direct_url.json``.

        >>> DirectUrl.parse({"url": "file:///src/x", "dir_info": {"editable": True}}).editable
        True
        >>> DirectUrl.parse({"url": "https://h/x.git", "vcs_info": {"vcs": "git", "commit_id": 7}})
        Traceback (most recent call last):
        ValueError: vcs_info.commit_id is not a string
        """
        top = _table(data, "the document")
        dir_info = _table(top.get("dir_info", {}), "dir_info")
        editable = dir_info.get("editable", False)
        if not isinstance(editable, bool):
            raise ValueError("dir_info.editable is not true or false")
        if "vcs_info" not in top:
            return cls(_text(top, "url", ""), editable)
        vcs = _table(top["vcs_info"], "vcs_info")
        return cls(_text(top, "url", ""), editable, _text(vcs, "vcs", "vcs_info."),
                   _text(vcs, "commit_id", "vcs_info."),
                   _text(vcs, "requested_revision", "vcs_info.", optional=True))


def _table(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{name} is not an object")
    return value


def _text(table: Mapping[str, Any], key: str, where: str, optional: bool = False) -> str:
    value = table.get(key, "" if optional else None)
    if not isinstance(value, str):
        raise ValueError(f"{where}{key} is {'not a string' if key in table else 'missing'}")
    return value


def add_direct_url(dist: dict[str, Any]) -> None:
    """Fill ``direct_url`` (and ``editable``, ``source``) from the dist-info's direct_url.json;
    one that is not JSON, or not what PEP 610 allows, is an ``error`` there.

    Read here rather than in the probe, so the probe needs no JSON parser (PEP 610 files exist
    only for the few editable, VCS and local-path installs).
    """
    path = os.path.join(dist.get("location", ""), dist.get("metadata_dir", ""), "direct_url.json")
    try:
        with open(path, encoding="utf-8") as fh:
            found = DirectUrl.parse(json.load(fh))
    except OSError:
        return
    except ValueError as exc:  # json's JSONDecodeError is one too
        what = "is not JSON" if isinstance(exc, json.JSONDecodeError) else "does not follow PEP 610"
        dist["direct_url"] = {"error": f"direct_url.json {what}: {exc}"}
        return
    out: dict[str, Any] = {"url": found.url}
    if found.editable:
        out["editable"] = True
    if found.vcs is not None:
        out.update(vcs=found.vcs, commit_id=found.commit_id)
        if found.requested_revision:
            out["requested_revision"] = found.requested_revision
    dist["direct_url"] = out
    if found.editable:
        dist["editable"] = True
    if found.url.startswith("file://"):
        dist["source"] = file_url_path(found.url)


def editable_source(dist: Mapping[str, Any]) -> str:
    """The source folder of ``dist`` when it is an editable install of a local folder (what
    :func:`add_direct_url` records: ``editable`` and ``source``), else ``""``; a probe's
    distribution and one of ``[packages] distributions`` alike.

    >>> editable_source({"editable": True, "source": "/src/x"}), editable_source({"source": "/s"})
    ('/src/x', '')
    """
    return str(dist.get("source") or "") if dist.get("editable") else ""


def file_url_path(url: str) -> str:
    """The local path of a ``file://`` URL, as ``unquote(urlsplit(url).path)`` gives it.

    Written out because :mod:`urllib.parse` (with :mod:`ipaddress`) would be imported by every
    capture for the editable installs only (its cost: benchmarks/RESULTS.md).

    >>> file_url_path("file:///home/me/src/sgl%20ang?x=1#frag")
    '/home/me/src/sgl ang'
    >>> file_url_path("file://localhost/opt/vllm")
    '/opt/vllm'
    """
    rest = url[len("file://"):]
    for stop in ("#", "?"):
        rest = rest.partition(stop)[0]
    slash = rest.find("/")
    path = rest[slash:] if slash >= 0 else ""
    if "%" not in path:
        return path
    # As unquote does: each run of ASCII characters has its %XX escapes decoded as UTF-8
    # (undecodable bytes replaced); other characters stay as they are.
    runs = re.split("([\x00-\x7f]+)", path)
    for i in range(1, len(runs), 2):
        raw = bytearray()
        pieces = runs[i].split("%")
        raw += pieces[0].encode("ascii")
        for piece in pieces[1:]:
            code = piece[:2]
            if len(code) == 2 and all(c in "0123456789abcdefABCDEF" for c in code):
                raw.append(int(code, 16))
                raw += piece[2:].encode("ascii")
            else:
                raw += b"%" + piece.encode("ascii")
        runs[i] = raw.decode("utf-8", "replace")
    return "".join(runs)
