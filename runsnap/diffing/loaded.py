"""Which copy of a library the loader took (``[runtime] libraries_loaded``): evidence for a
``[system] toolchain.ld_library_path`` difference.

Two shells that set ``LD_LIBRARY_PATH`` otherwise (a CUDA container's ``/usr/local/cuda/
lib64``, a workstation with none) resolve ``libcudart.so`` to another file, or to none; capture
lists that as a difference of the toolchain. Whether it changed anything is whether a process
loaded the library: the tracing hook notes, as each traced process ends, the GPU and
interconnect libraries it has mapped (``/proc/self/maps``, by file name). Where both runs say
so and neither loaded the library under either name (its soname, or the file the link
resolves to), what the path decides never came up: ``incidental`` (torch's CPU build never
loads libcudart). Where a run loaded it, the program took it in: ``read``, with which file.
"""

from __future__ import annotations

from typing import Any

from runsnap.diffing.result import Difference

__all__ = ["library_evidence"]

_VIEW = "toolchain.ld_library_path."


def _names(value: Any, soname: str) -> set[str]:
    """The file names a toolchain value (``/usr/local/cuda/lib64/libcudart.so
    (libcudart.so.13.0.48)``) stands for: the soname, the path's name, the resolved file's."""
    text = str(value or "")
    path, _, resolved = text.partition(" (")
    return {n for n in (soname, path.rsplit("/", 1)[-1], resolved.rstrip(")")) if n}


def library_evidence(d: Difference, a: Any, b: Any) -> tuple[str, str] | None:
    """(kind, sentence) for a ``toolchain.ld_library_path.SONAME`` difference, from the
    libraries each run's processes had mapped; None when a run does not say."""
    if d.section != "system" or not d.key.startswith(_VIEW):
        return None
    loaded = [s.records.runtime.libraries_loaded for s in (a, b)]
    if any(x is None for x in loaded):
        return None
    soname = d.key[len(_VIEW):]
    names = _names(d.a, soname) | _names(d.b, soname)
    for label, got in zip("AB", loaded, strict=True):
        took = sorted(names & {str(x) for x in got})
        if took:
            return "read", f"{label}'s processes loaded {', '.join(took)}"
    return "incidental", (f"no process of either run loaded {soname} ([runtime] "
                          "libraries_loaded): which copy the path finds never came up")
