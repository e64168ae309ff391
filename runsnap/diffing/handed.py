"""What a launch hands the program by name: a file its option parser set an option to (given,
or the option's default: ``[runtime] parsed_options``), or a word of its command line.

A library that opens a file from native code (onnxruntime's ``InferenceSession``, a C++
reader) leaves no trace of Python's ``open()``; the option that names the file says the
program was handed it (:func:`runsnap.diffing.datafiles.edit_read`)."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["handed"]


def _unquoted(text: str) -> str:
    """A parsed option's value as its text records it (``'model/x.onnx'``), unquoted."""
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text


def handed(full: str, snap: Snapshot) -> str | None:
    """How run ``snap``'s launch names the file ``full``: an option its parser set to the
    file's path (``[runtime] parsed_options``: given, or its default), or a word of its command
    line, resolved against its working directory; None when nothing names it."""
    command = snap.records.command
    cwd = str(command.cwd or "")
    if not cwd:
        return None

    def names(value: str) -> bool:
        return bool(value) and os.path.normpath(os.path.join(cwd, value)) == full

    for option, got in snap.records.runtime.parsed_options.items():
        value = _unquoted(str(got.value or ""))
        if names(value):
            return f"its option {option} is {value!r}" + ("" if got.given else " (its default)")
    word = next((str(w) for w in command.argv[1:] if names(str(w))), None)
    return f"its command line names it ({word!r})" if word is not None else None

