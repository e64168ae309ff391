"""The native read recorder: an ``LD_PRELOAD`` library built from ``probe/native/getenv_trace.c``.

It is compiled once, at first use, with the C compiler found on ``PATH`` (``cc``, ``gcc`` or
``clang``; ``CC`` overrides), under a name that carries the hash of its source and the machine,
so an upgrade of runsnap rebuilds it, into runsnap's cache folder (``native/``; a temporary
folder of the user's when the cache is off), never into the install: pip does not know such a
file and its folder would outlive an uninstall. A library a packager ships in
``probe/native/build/`` is used instead of building one. The build is written beside its final
name and renamed into place (:func:`~runsnap.base.atomic.atomic_build`). Without a compiler (a
pure-Python install) runsnap works as before and the snapshot says native reads were not
observed, and why. ``RUNSNAP_NO_NATIVE=1`` turns it off.

``runsnap capture -- COMMAND`` calls :func:`prebuild` first thing: the library is looked for,
and built when missing, in a thread while the collectors work, so that its first build (about
half a second of ``cc -O2``) does not all come before the child's start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from runsnap.base.atomic import atomic_build
from runsnap.base.cache import cache_dir
from runsnap.base.digest import sha256
from runsnap.base.programs import which

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["SOURCE", "interposer", "prebuild"]

#: The C source of the interposer.
SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "probe", "native", "getenv_trace.c")


def _compiler(env: Mapping[str, str]) -> str | None:
    wanted = env.get("CC")
    for name in ((wanted,) if wanted else ("cc", "gcc", "clang")):
        found = which(name, path=env.get("PATH"))
        if found:
            return found
    return None


#: The build :func:`prebuild` began: ``{"thread", "env", "result"}``.
_EARLY: dict[str, Any] = {}


def prebuild(env: Mapping[str, str] | None = None) -> None:
    """Begin :func:`interposer` for ``env`` (this process's by default) in a thread; the
    next :func:`interposer` call for the same environment takes its answer."""
    env = dict(os.environ if env is None else env)

    def run() -> None:
        try:
            _EARLY["result"] = _interposer(env)
        except Exception as exc:  # noqa: BLE001  # the later call says it in its own words
            _EARLY["result"] = None, f"building the getenv interposer failed: {exc}"

    thread = threading.Thread(target=run, name="runsnap-interposer", daemon=True)
    _EARLY.update(thread=thread, env=env)
    thread.start()


def interposer(env: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """``(path of the built library, "")``, or ``(None, why native reads are not observed)``."""
    env = os.environ if env is None else env
    early = _EARLY.pop("thread", None)
    if early is not None:
        early.join()
        if _EARLY.pop("env") == dict(env) and "result" in _EARLY:
            result: tuple[str | None, str] = _EARLY.pop("result")
            return result
    return _interposer(env)


def _interposer(env: Mapping[str, str]) -> tuple[str | None, str]:
    if env.get("RUNSNAP_NO_NATIVE"):
        return None, "RUNSNAP_NO_NATIVE is set"
    if not sys.platform.startswith("linux"):
        return None, f"LD_PRELOAD interposition is only built on Linux (this is {sys.platform})"
    try:
        with open(SOURCE, "rb") as fh:
            source = fh.read()
    except OSError as exc:
        return None, f"the interposer's source is missing ({exc.strerror})"
    tag = sha256(source + os.uname().machine.encode()).hexdigest()[:16]
    name = f"getenv-trace-{tag}.so"
    base = cache_dir(env)
    # Built into runsnap's cache folder, never into the install: pip does not know such a file,
    # leaves its folder behind on uninstall, and that folder then shadows an editable install
    # of runsnap as a namespace package. One a packager ships beside the install is used.
    folder = (os.path.join(base, "native") if base is not None
              else os.path.join(_tempdir(), f"runsnap-native-{os.getuid()}"))
    for found in (os.path.join(os.path.dirname(SOURCE), "build", name),
                  os.path.join(folder, name)):
        if os.path.exists(found):
            return found, ""
    lib = os.path.join(folder, name)
    cc = _compiler(env)
    if cc is None:
        return None, "no C compiler (cc, gcc or clang) to build the getenv interposer"
    failed: list[str] = []

    def build(tmp: str) -> None:
        done = subprocess.run(
            [cc, "-shared", "-fPIC", "-O2", "-o", tmp, SOURCE, "-ldl", "-lpthread"],
            capture_output=True, text=True, timeout=60, check=False,
        )
        if done.returncode != 0:
            failed.append((done.stderr.strip().splitlines() or ["no message"])[0])
            raise OSError(f"{cc} failed")

    try:
        atomic_build(lib, build)
    except (OSError, subprocess.SubprocessError) as exc:
        if failed:
            return None, f"building the getenv interposer with {cc} failed: {failed[0]}"
        return None, f"building the getenv interposer failed: {exc}"
    return lib, ""


def _tempdir() -> str:
    import tempfile  # only without a cache folder (RUNSNAP_NO_CACHE)

    return tempfile.gettempdir()
