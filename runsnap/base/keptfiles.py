"""Kept files: copies of the small config files a run read, by their sha256, so that an
experiment can put GOOD's content back after the file was rewritten.

A git-ignored ``settings.local.toml``, a ``params.local.json`` beside the code: a run reads it,
the user edits it, the next run goes bad. The snapshot records only the file's digest (contents
never go into a snapshot: it is shared), so no launch could read GOOD's content again, and
bisect could only ask the user to put it back. The capture therefore keeps a copy of each
such file here, in the user's own cache (never in a snapshot), named by its sha256:

* only files the snapshot lists with a whole-file digest, of a config suffix and at most
  :data:`runsnap.tracing.datafiles.KEYS_SIZE` (the capture chooses:
  :mod:`runsnap.capturing.keptcopies`), and only where redaction's rules find no secret in
  them: a file with a secret is not copied, and bisect blocks on it as before;
* a copy is used only when its content still hashes to its name (:func:`kept`), looked up in
  this process's store and in the stores of the captures that made the two snapshots (their
  recorded ``HOME``: two shells of one machine, a ``sudo`` one among them, keep apart);
* the newest :data:`KEEP` are kept (each file's time is renewed when it is kept again).

``RUNSNAP_NO_CACHE=1`` turns it off with the other caches; ``RUNSNAP_CACHE_DIR`` moves it
(:func:`runsnap.base.cache.cache_dir`). A store that cannot be read or written is not used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from runsnap.base.atomic import atomic_write
from runsnap.base.cache import cache_dir
from runsnap.base.digest import sha256

__all__ = ["KEEP", "keep", "kept"]

#: Copies kept at most, the newest.
KEEP = 512
_FOLDER = "kept"
_NAME = re.compile(r"[0-9a-f]{64}")


def _folder(env: Mapping[str, str] | None) -> str | None:
    base = cache_dir(env)
    return None if base is None else os.path.join(base, _FOLDER)


def keep(data: bytes, env: Mapping[str, str] | None = None) -> str | None:
    """Keep a copy of ``data`` under its sha256, which it returns (None: not kept)."""
    folder = _folder(env)
    if folder is None:
        return None
    digest = str(sha256(data).hexdigest())
    path = os.path.join(folder, digest)
    try:
        if os.path.isfile(path) and os.path.getsize(path) == len(data):
            os.utime(path)  # kept again: the newest
            return digest
        os.makedirs(folder, exist_ok=True)
        atomic_write(path, data, durable=False)
    except OSError:
        return None
    _trim(folder)
    return digest


def kept(digest: str, recorded: Sequence[Mapping[str, str]] = ()) -> bytes | None:
    """The content kept under ``digest`` (a sha256 in hex), when it still hashes to it: in
    this process's store, else in the store of a capture whose environment ``recorded`` holds
    (a snapshot's ``[env]``: the run another shell captured, under another ``HOME``)."""
    if not _NAME.fullmatch(digest or ""):
        return None
    folders = [_folder(None), *(_folder(env) for env in recorded)]
    for folder in dict.fromkeys(f for f in folders if f is not None):
        try:
            with open(os.path.join(folder, digest), "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if sha256(data).hexdigest() == digest:
            return data
    return None


def _trim(folder: str) -> None:
    """All but the :data:`KEEP` newest copies removed (best effort)."""
    try:
        names = [n for n in os.listdir(folder) if _NAME.fullmatch(n)]
        if len(names) <= KEEP:
            return
        paths = sorted((os.path.join(folder, n) for n in names),
                       key=lambda p: os.stat(p).st_mtime_ns, reverse=True)
        for old in paths[KEEP:]:
            os.unlink(old)
    except OSError:
        pass
