"""Part of runsnap's tracing hook (``sitecustomize.py`` beside it, which imports it at start-up
and takes it out of ``sys.modules`` again): the data files the program opens. Standard library
only.

``open`` (``builtins.open``, which is ``io.open``: ``pathlib``, ``codecs.open`` and most readers
call it) and ``os.open`` are wrapped: the wrapper notes the path, then calls the real function
with the very arguments it was given. For each path, once per process, it writes:

* ``("O", path, stack)``: a file opened for reading (the open may still fail: a missing file the
  program tried is a fact too), ``path`` absolute, ``stack`` the opening frames (innermost
  first, as a read site's);
* ``("o", path)``: a file opened for writing (an output of the run, never an input);
* ``("Q", n)``: at the end, how many more files were opened than :data:`MAX_FILES` kept.

Left out: file descriptors, ``os.open`` relative to a ``dir_fd``, the interpreter's own files
(under ``sys.prefix``, ``sys.base_prefix``, ``sys.exec_prefix``: the standard library,
site-packages, the venv), the user's site-packages, runsnap's own files and the trace folder,
``/proc``, ``/sys``, ``/dev``, compiled and native code (``.pyc``, ``.so``, ``.pth``), and
``.py`` files opened by the standard library (``linecache`` reads sources for tracebacks;
imports are ``[runtime.modules]``). Not seen: opens from C (``fopen``, ``mmap`` in an extension:
tokenizers, safetensors, sentencepiece) and ``io.FileIO`` called directly.

Why wrappers and not an audit hook (``sys.addaudithook``, which sees ``open`` events from C
too): a Python audit hook runs for *every* audit event of the process, and ``id()`` and
``sys._getframe()`` raise one each; measured (benchmarks/RESULTS-datafiles.md), a hook that
returns at once for all but ``open`` took ``id()`` from 41 to 287 ns (``copy.deepcopy``,
pytrees), and a traced ``os.environ.get`` pays that three times (its read-site key takes two
``id()`` and one ``_getframe``). A wrapper costs only the opens. A failure inside it is
swallowed, never raised into the program.
"""

import os
import sys

#: Files kept per process (reads and writes each); more are counted, not listed.
MAX_FILES = 256
_CODE = (".pyc", ".so", ".pth", ".pyo", ".pyd")
_SYSTEM = ("/proc/", "/sys/", "/dev/")


def install(emit, stack, own):
    """Wrap the openers. ``emit(record)`` writes one record, ``stack(frame)`` gives a read
    site's frames, ``own``: folders of runsnap's (the hook, the trace folder)."""
    builtins, io = sys.modules["builtins"], sys.modules["io"]  # both loaded before site runs
    state = _State(emit, stack, own)
    real = builtins.open
    wrapped = _wrap_open(real, state)
    builtins.open = wrapped
    if io.open is real:
        io.open = wrapped
    os.open = _wrap_os_open(os.open, state)
    return state


def _wrap_open(real, state):
    getframe = sys._getframe
    seen = state.seen

    def open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None,
             closefd=True, opener=None):
        try:
            if file.__class__ is not int and file not in seen:
                state.judge(file, "w" in mode or "a" in mode or "x" in mode or "+" in mode,
                            getframe(1))
        except Exception:
            pass
        return real(file, mode, buffering, encoding, errors, newline, closefd, opener)

    open.__doc__ = real.__doc__
    open.__wrapped__ = real
    return open


def _wrap_os_open(real, state):
    getframe = sys._getframe
    seen = state.seen

    def open(path, flags, mode=0o777, *, dir_fd=None):
        try:
            if dir_fd is None and path.__class__ is not int and path not in seen:
                state.judge(path, flags & 3 != 0, getframe(1))
        except Exception:
            pass
        return real(path, flags, mode, dir_fd=dir_fd)

    open.__doc__ = real.__doc__
    open.__wrapped__ = real
    return open


class _State:
    def __init__(self, emit, stack, own):
        self.emit = emit
        self.stack = stack
        self.seen = set()  # raw paths already judged (kept or left out), reads and writes alike
        self.reads = 0
        self.writes = 0
        self.dropped = 0
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix,
                    getattr(sys, "base_exec_prefix", sys.prefix)}
        site = sys.modules.get("site")  # imported already: it is what runs this hook
        user = getattr(site, "USER_SITE", None) if getattr(site, "ENABLE_USER_SITE", 0) else None
        if isinstance(user, str):
            prefixes.add(user)
        self.stdlib = os.path.dirname(os.__file__) + os.sep
        self.skip = tuple(p.rstrip(os.sep) + os.sep for p in list(prefixes) + list(own) if p) \
            + _SYSTEM

    def judge(self, raw, write, frame):
        self.seen.add(raw)
        path = os.fspath(raw)
        if not isinstance(path, str):
            path = os.fsdecode(path)
        if path.endswith(_CODE):
            return
        if not os.path.isabs(path):
            path = os.path.join(os.getcwd(), path)
        path = os.path.normpath(path)
        if path.startswith(self.skip):
            return
        if path.endswith(".py") and not write and frame.f_code.co_filename.startswith(
                (self.stdlib, "<frozen")):
            return  # linecache, tokenize: code read for a traceback, not data
        if write:
            if self.writes >= MAX_FILES:
                self.dropped += 1
                return
            self.writes += 1
            self.emit(("o", path))
            return
        if self.reads >= MAX_FILES:
            self.dropped += 1
            return
        self.reads += 1
        self.emit(("O", path, self.stack(frame)))

    def end(self):
        if self.dropped:
            self.emit(("Q", self.dropped))

    def forked(self):
        """In a forked child: its own log starts empty, so every file is new to it."""
        self.seen.clear()
        self.reads = self.writes = self.dropped = 0
