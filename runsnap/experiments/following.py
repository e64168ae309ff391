"""Host differences that a launch's own variables decide: the toolchain the capture found.

``[system] toolchain`` is read from the launch's environment, not from the host alone: the CUDA
home is ``CUDA_HOME``, ``CUDA_PATH``, or the folder above the ``nvcc`` that ``PATH`` finds
(``cuda_home_from`` says which, :func:`runsnap.capturing.collectors.toolchain.cuda_home`); the
compilers and build tools are the first on ``PATH`` (``cc`` and ``c++`` named by ``CC`` and
``CXX`` when set); the libraries of ``LD_LIBRARY_PATH`` are that variable's. Where that variable
differs too, the toolchain difference follows it: applying the variable applies it, so it
neither blocks a bisection nor starts it with GOOD's launch alone, as another host would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["toolchain_variable"]

#: ``toolchain.cuda_home_from`` -> the variable it names.
_CUDA_FROM = {"CUDA_HOME": "CUDA_HOME", "CUDA_PATH": "CUDA_PATH", "nvcc on PATH": "PATH"}

#: Tools found on ``PATH``, with the variable that names the program first, if any.
_TOOLS = {"cc": "CC", "cxx": "CXX", "gcc": "", "clang": "", "ninja": "", "cmake": "",
          "nvcc": ""}


def toolchain_variable(good: Snapshot, bad: Snapshot, key: str,
                       moved: frozenset[str] | set[str]) -> str | None:
    """The variable among ``moved`` (those that differ and are applied) that decides
    ``[system]`` difference ``key`` (``toolchain.cuda_home``, ``toolchain.gcc.version``), or
    None: another host's, which no launch applies.

    >>> from runsnap.snapshot import Snapshot
    >>> a = Snapshot({}, {"system": {"toolchain": {"cuda_home_from": "nvcc on PATH"}}})
    >>> toolchain_variable(a, a, "toolchain.cuda_home", {"PATH"}), toolchain_variable(
    ...     a, a, "toolchain.gcc.version", {"LANG"})
    ('PATH', None)
    """
    parts = key.split(".")
    if len(parts) < 2 or parts[0] != "toolchain":
        return None
    field = parts[1]
    if field == "cuda_home":
        names = [_CUDA_FROM.get(str(s.records.system.toolchain.cuda_home_from or ""), "")
                 for s in (good, bad)]
    elif field in _TOOLS:
        names = [_TOOLS[field], "PATH"]
    elif field == "ld_library_path":
        names = ["LD_LIBRARY_PATH"]
    else:
        return None
    return next((n for n in names if n and n in moved), None)
