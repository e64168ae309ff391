"""Python tracebacks read from a child's output: frames, exception type and message.

A launch that fails usually prints a Python traceback; diagnosis needs its frames (which file,
line and function raised) to meet the run-time reads of a variable, and its message to see
which key it names. :class:`TracebackWatch` follows one output stream line by line and keeps
the *last* complete traceback (with chained exceptions, ``During handling of the above
exception ...``, the last one printed is the one that ended the program). It is fed from the
relaying thread, so it does no work on lines that cannot belong to a traceback.

The ``[outcome] traceback`` table (docs/schema.md)::

    traceback = {type = "ValueError", message = "...", frames = [
        {file = "/srv/app/model_config.py", line = 1314, function = "_derive_context_length",
         code = "raise ValueError("},
    ]}

Frames are outermost first, as Python prints them; ``code`` is the source line Python printed
under the frame (absent when it printed none). ``[outcome] earlier_tracebacks`` keeps up to
:data:`MAX_EARLIER` complete tracebacks printed before the last one, in the same form: a server
whose worker failed prints the worker's traceback, then the launcher's own. Lines a logger put in front of the
``Traceback (most recent call last):`` header (``[2026-...] Scheduler hit an exception: ``)
are allowed; the frames and the exception line are recognised by their shape.
"""

from __future__ import annotations

import re

from runsnap.launch.lines import LAUNCHER_PREFIX
from runsnap.snapshot.records import Traceback as TracebackRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from runsnap.snapshot.shapes import Frame, Traceback

__all__ = ["MAX_FRAMES", "TracebackWatch", "cut", "cut_text", "parse"]

#: Frames kept per traceback (the innermost ones when there are more: they raised).
MAX_FRAMES = 60
#: Characters of the exception message kept.
MAX_MESSAGE = 2000
#: Earlier tracebacks kept besides the last: a server's worker prints the one that matters,
#: then its launcher raises its own ("Initialization failed, see the errors above").
MAX_EARLIER = 4
#: Characters of a frame's source line kept.
MAX_CODE = 300
#: Lines a traceback may span before it is given up as not one.
MAX_LINES = 2000
#: Processes whose tracebacks are read at once, each behind its launcher's prefix.
MAX_PROCESSES = 64
#: Lines after the exception's own that may continue its message (``str(exc)`` with line
#: ends: pydantic's ValidationError lists each field and the input it refused there).
MAX_MESSAGE_LINES = 20

HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*(?:\|\s*)?File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
# "ValueError: msg", "torch.OutOfMemoryError: msg", "KeyboardInterrupt", "pkg.mod.Error"
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")


class TracebackWatch:
    """Follows lines of one stream and keeps the last complete traceback seen.

    A launcher that gathers several processes' output marks each line with the process
    (:data:`runsnap.launch.lines.LAUNCHER_PREFIX`: torchrun's ``[default0]:``, c10d's
    ``[rank0]: ``, Open MPI's ``[1,0]<stderr>:``, ``srun --label``'s ``0: ``): a traceback
    whose header carries such a prefix is read from the lines that carry the same one, the
    prefix taken off, while the other processes' lines interleave with it."""

    def __init__(self) -> None:
        self.last: Traceback | None = None
        self.earlier: list[Traceback] = []
        """Complete tracebacks before :attr:`last` (at most :data:`MAX_EARLIER`, the latest)."""
        self._readers: dict[str, _Reader] = {"": _Reader()}
        """By launcher prefix (``""``: lines without one); a prefixed reader is dropped once
        done."""

    @property
    def active(self) -> bool:
        """Whether a traceback is being read (every line then matters)."""
        return any(r.active for r in self._readers.values())

    def interrupt(self) -> None:
        """Lines were lost (not scanned): a traceback being read is given up, not joined
        with later lines."""
        for r in self._readers.values():
            r.interrupt()
        self._readers = {"": self._readers[""]}

    def line(self, text: str) -> None:
        """Take one output line (no line end, colours removed)."""
        key, rest = "", text
        at = text.find(HEADER)
        if at > 0:
            m = LAUNCHER_PREFIX.match(text, 0, at)
            if m is not None and not text[m.end():at].strip(" "):
                key, rest = m.group(), text[m.end():]
                if key not in self._readers and len(self._readers) <= MAX_PROCESSES:
                    self._readers[key] = _Reader(len(rest) - len(rest.lstrip(" ")))
        elif len(self._readers) > 1:
            m = LAUNCHER_PREFIX.match(text)
            if m is not None and m.group() in self._readers:
                key = m.group()
                rest = text[m.end():]
                space = self._readers[key].space
                if rest[:space] == " " * space:
                    rest = rest[space:]
        reader = self._readers.get(key)
        if reader is None:
            return
        before = reader.last
        reader.line(rest)
        if reader.last is not before and reader.last is not None:
            if self.last is not None:
                self.earlier = [*self.earlier, self.last][-MAX_EARLIER:]
            self.last = reader.last
        if key and reader.done:
            del self._readers[key]


class _Reader:
    """Reads the tracebacks of one process's lines (one launcher prefix, or none)."""

    def __init__(self, space: int = 0) -> None:
        self.space = space
        """Spaces the launcher put between its prefix and the line (c10d's ``[rank0]: ``)."""
        self.last: Traceback | None = None
        self._frames: list[Frame] | None = None
        self._lines = 0
        self._code_next = False
        self._more: list[str] | None = None
        """The message's continuation lines, while they may still come."""

    @property
    def active(self) -> bool:
        """Whether a traceback is being read (every line then matters)."""
        return self._frames is not None

    @property
    def done(self) -> bool:
        """Whether nothing being read needs more lines (no traceback, no message going on)."""
        return self._frames is None and self._more is None

    def interrupt(self) -> None:
        """Lines were lost (not scanned): a traceback being read is given up, not joined
        with later lines."""
        self._frames = None
        self._more = None

    def line(self, text: str) -> None:
        """Take one output line (no line end, colours removed)."""
        if HEADER in text:
            self._frames = []
            self._lines = 0
            self._code_next = False
            self._more = None
            return
        if self._more is not None:
            self._continue(text)
            return
        frames = self._frames
        if frames is None:
            return
        self._lines += 1
        if self._lines > MAX_LINES:
            self._frames = None
            return
        m = _FRAME.match(text)
        if m:
            frames.append({"file": m["file"], "line": int(m["line"]),
                           "function": (m["func"] or "<module>").strip()})
            if len(frames) > MAX_FRAMES:
                del frames[0]
            self._code_next = True
            return
        stripped = text.strip()
        if self._code_next and text[:1] in (" ", "\t") and stripped \
                and not stripped.startswith(("^", "~")):
            # the source line Python printed, whole: it is cut to MAX_CODE by :func:`cut` once
            # redaction has seen it (a token cut first would lose the length its rule needs)
            frames[-1]["code"] = stripped
            self._code_next = False
            return
        if not stripped or text[:1] in (" ", "\t") or stripped.startswith(("^", "~", "|", "+")):
            self._code_next = False  # carets, exception-group borders
            return
        if stripped.startswith("...") or stripped.startswith("[Previous line repeated"):
            return
        m = _EXC.match(stripped)
        if m and frames and _looks_like_type(m["type"]):
            self.last = {"type": m["type"], "message": m["msg"] or "", "frames": list(frames)}
            self._more = []
        self._frames = None

    def _continue(self, text: str) -> None:
        """A line after the exception's: part of its message until a blank line (once the
        message has a line), another traceback's first words, or :data:`MAX_MESSAGE_LINES`."""
        more, last = self._more, self.last
        if more is None or last is None:
            return
        stripped = text.strip()
        stop = (not stripped and (more or last["message"])) or stripped.startswith((
            "During handling of the above exception", "The above exception was the direct"))
        if stop or len(more) >= MAX_MESSAGE_LINES:
            self._more = None
            return
        if stripped or more:
            more.append(text.rstrip())
            head = last["message"]
            last["message"] = f"{head}\n{more[-1]}" if head else more[-1]


def cut(tb: Mapping[str, Any]) -> dict[str, Any]:
    """``tb`` with its message and frame source lines cut to :data:`MAX_MESSAGE` and
    :data:`MAX_CODE` characters: done after redaction, on redacted text."""
    read, out = TracebackRecord(tb), dict(tb)
    if read.message is not None:
        out["message"] = cut_text(read.message, MAX_MESSAGE)
    if read.has("frames"):
        out["frames"] = [{**f.raw, "code": cut_text(f.code, MAX_CODE)} if f.code is not None
                         else dict(f.raw) for f in read.frames]
    return out


_PLACEHOLDER = "<redacted:"


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, never inside a redaction placeholder (one that
    the cut would split is left out whole).

    >>> cut_text("abcdef", 4), cut_text("ab <redacted:hmac-sha256:0123456789abcdef> z", 10)
    ('abcd', 'ab ')
    """
    if len(text) <= limit:
        return text
    at = text.rfind("<", 0, limit)
    if at >= 0 and text.startswith(_PLACEHOLDER, at) and text.find(">", at) >= limit:
        return text[:at]
    return text[:limit]


def _looks_like_type(name: str) -> bool:
    """An exception class name: a capitalised last part, not a log level or a sentence.

    >>> _looks_like_type("ValueError"), _looks_like_type("torch.OutOfMemoryError")
    (True, True)
    >>> _looks_like_type("ERROR"), _looks_like_type("hello")
    (False, False)
    """
    last = name.rsplit(".", 1)[-1]
    return last[:1].isupper() and not last.isupper()


def parse(lines: Iterable[str]) -> dict[str, Any] | None:
    """The last complete Python traceback in ``lines``, or None.

    >>> tb = parse(['Traceback (most recent call last):',
    ...             '  File "/x/app.py", line 3, in <module>',
    ...             '    main()',
    ...             '  File "/x/app.py", line 2, in main',
    ...             '    raise ValueError("bad")',
    ...             'ValueError: bad'])
    >>> tb["type"], tb["message"], [f["function"] for f in tb["frames"]]
    ('ValueError', 'bad', ['<module>', 'main'])

    A message of several lines is kept whole, up to a blank line:

    >>> parse(['Traceback (most recent call last):', '  File "/x/app.py", line 3, in main',
    ...        'pydantic_core.ValidationError: 1 validation error for Settings', 'max_batch',
    ...        "  Input should be a valid integer [input_value='16k']", '',
    ...        'launcher: worker exited'])["message"].splitlines()
    ['1 validation error for Settings', 'max_batch', "  Input should be a valid integer [input_value='16k']"]
    """
    watch = TracebackWatch()
    for text in lines:
        watch.line(text)
    return cut(watch.last) if watch.last is not None else None

