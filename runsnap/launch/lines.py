"""One line of a child's output read as a log line: cleaned as a terminal shows it, whether it
is an error or a warning, and cut to a bound.

Pure functions over text and bytes; :class:`runsnap.launch.streams.StreamWatch` applies them to
the output as it streams by (the time stamp a logger put in front of a line is taken off by
:func:`runsnap.base.timestamps.without_timestamp`, which the diff and the renderers use too).
"""

from __future__ import annotations

import re

from runsnap.base.patterns import on_use

__all__ = [
    "ANSI_ESCAPES",
    "ERROR_PATTERN",
    "ERROR_WORDS",
    "LAUNCHER_PREFIX",
    "LONGEST_TOKEN",
    "MAX_LINE_BYTES",
    "TRACEBACK",
    "CXX_REPORT",
    "WARNING_PATTERN",
    "WARNING_WORDS",
    "bounded",
    "clean_line",
    "cut_line",
    "is_error_line",
    "is_warning_line",
    "without_launcher_prefix",
]

#: A line longer than this is cut, so one endless line cannot exhaust memory.
MAX_LINE_BYTES = 4096

# ANSI escape sequences (colours, cursor moves) and OSC titles: stripped from kept lines, since a
# coloured "WARNING" in a terminal run must compare equal to a plain one in a piped run.
ANSI_ESCAPES = on_use(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# The first line that looks like an error. Python exception lines ("ValueError: ...",
# "torch.OutOfMemoryError: ..."), log levels, and what shells and the C runtime print.
ERROR_PATTERN = on_use(
    rb"(?:^|[\s\]\[:(])(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::|$)"
    rb"|\b(?:ERROR|FATAL|CRITICAL|PANIC|Error|Fatal|fatal)\b"
    rb"|\berror:"
    rb"|Segmentation fault|core dumped|Traceback \(most recent call last\)"
    # a dotted exception class that opens the line, whatever its name ends with
    # ("packaging.version.InvalidVersion: ...", "yaml.scanner.ScannerError: ...")
    rb"|^(?:[A-Za-z_]\w*\.)+[A-Z]\w*[a-z]\w*:(?=\s|$)",
    re.MULTILINE,
)
# "Traceback (most recent call last)" is matched above only to let a chunk through the fast
# check; the line recorded is the exception line that ends the traceback when one follows.
TRACEBACK = b"Traceback (most recent call last)"

# A library's load report is a warning in words of its own: transformers logs a table at
# warning level (utils/loading_report.py, log_state_dict_report: "{Model} LOAD REPORT from: ..."
# then "lm_head.weight | MISSING |" rows), with no level word on its lines.
WARNING_PATTERN = on_use(rb"\b(?:WARNING|WARN|Warning|warning|[A-Z]\w*Warning)\b"
                         rb"|\bLOAD REPORT\b"
                         rb"|\| (?:\x1b\[[0-9;]*m)?(?:MISSING|UNEXPECTED|MISMATCH)\b")

# Words without which neither pattern can match: ``in`` checks (C speed) decide whether a chunk
# needs the regular expressions at all, and which of its lines do.
ERROR_WORDS = (b"Error", b"Exception", b"ERROR", b"FATAL", b"Fatal", b"fatal", b"CRITICAL",
               b"PANIC", b"error:", b"Segmentation fault", b"core dumped", TRACEBACK, b"what():")
# libstdc++'s report of an uncaught C++ exception (torch's c10::Error): the message is on the
# ``what():`` line (group 1); the announcement above it and torch's ``frame #N:`` stack lines
# below it are not errors of their own.
CXX_REPORT = on_use(rb"\s*what\(\):\s+(\S)|terminate called after throwing an instance of "
                    rb"|\s*frame #\d+: ")

# A launcher's mark in front of each line of one process, nested where launchers are
# (``[default0]:[rank0]: ``): torchrun's ``[{role}{local_rank}]:`` (torch/distributed/elastic/
# multiprocessing/tail_log.py, TailLog.start, with --tee or --redirects), the ``[rank{N}]`` that
# init_process_group's excepthook puts before each line of a traceback with one space after the
# colon (torch/distributed/distributed_c10d.py, _distributed_excepthook), Open MPI's
# ``--tag-output`` ``[jobid,rank]<stdout>:``, MPICH's ``-prepend-rank`` and Intel MPI's ``-l``
# ``[rank] ``, and Slurm's ``srun --label`` ``rank: `` (right-aligned). The spaces after the
# mark are not part of it.
_PREFIX = (r"^(?:\[[A-Za-z_]*\d+\]:|\[\d+,\d+\]<std(?:out|err|diag)>:|\[\d+\](?= )"
           r"| *\d+:(?= ))+")
LAUNCHER_PREFIX = on_use(_PREFIX)
_PREFIX_BYTES = on_use(_PREFIX.encode())

WARNING_WORDS = (b"WARN", b"Warning", b"warning", b"LOAD REPORT", b"MISSING", b"UNEXPECTED",
                 b"MISMATCH")


def clean_line(raw: bytes) -> str:
    """One output line as a terminal would show it: no colours, no line end, last ``\\r`` part.

    >>> clean_line(b"\\x1b[33mWARNING\\x1b[0m  almost done\\r\\n")
    'WARNING  almost done'
    >>> clean_line(b" 10%|#   \\r 50%|#####   \\r")
    ' 50%|#####   '
    """
    line = raw.rstrip(b"\r\n")
    if b"\x1b" in line:
        line = ANSI_ESCAPES.sub(b"", line)
    if b"\r" in line:
        line = line.rsplit(b"\r", 1)[-1]
    return line.decode("utf-8", "replace")


def is_error_line(line: str) -> bool:
    """Whether ``line`` looks like an error.

    >>> is_error_line("ValueError: Warning: Target model's context_length (262144) ...")
    True
    >>> is_error_line("[2026-01-01 10:00:00] ERROR scheduler.py:120: NCCL timeout")
    True
    >>> is_error_line("loaded 61 layers (0 errors)")
    False

    A C++ exception's report (libstdc++'s ``terminate``, torch's ``c10::Error``) is its
    ``what():`` line, never the announcement above it or the stack frames below:

    >>> is_error_line("  what():  Unrecognized key 'expandable_segment' in CUDA allocator config.")
    True
    >>> is_error_line("terminate called after throwing an instance of 'c10::Error'")
    False
    >>> is_error_line("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98")
    False
    """
    data = line.encode("utf-8", "replace")
    cxx = CXX_REPORT.match(data)
    if cxx is not None:
        return cxx.group(1) is not None
    if not any(word in data for word in ERROR_WORDS) and not (b"." in data and b":" in data):
        return False  # no branch of ERROR_PATTERN can match: every one needs a word or a dotted name
    return bool(ERROR_PATTERN.search(data)) and TRACEBACK not in data


def without_launcher_prefix(raw: bytes) -> bytes:
    """``raw`` without the launcher's mark in front (:data:`LAUNCHER_PREFIX`) and the one space
    after it, when it has one.

    >>> without_launcher_prefix(b"[default0]:[rank0]: ValueError: bad")
    b'ValueError: bad'
    >>> without_launcher_prefix(b"[1,0]<stderr>:  File \\"/x/a.py\\", line 2")
    b' File "/x/a.py", line 2'
    >>> without_launcher_prefix(b" 3: error: x"), without_launcher_prefix(b"[W1204 10:00] hi")
    (b'error: x', b'[W1204 10:00] hi')
    """
    m = _PREFIX_BYTES.match(raw)
    if m is None:
        return raw
    rest = raw[m.end():]
    return rest[1:] if rest[:1] == b" " else rest


def is_warning_line(line: str) -> bool:
    """Whether ``line`` looks like a warning (and not an error).

    >>> is_warning_line("[2026-01-01 10:00:00] WARNING model_config.py:1: Warning: ...")
    True
    >>> is_warning_line("ValueError: Warning: Target model's context_length ...")
    False
    >>> is_warning_line("lm_head.weight | MISSING | "), is_warning_line("MISSING values: 3")
    (True, False)
    """
    data = line.encode("utf-8", "replace")
    return bool(WARNING_PATTERN.search(data)) and not is_error_line(line)



_TOKEN_END = on_use(rb"[^\s\"'`,;()<>\[\]{}]+$")


def bounded(line: bytes) -> bytes:
    """``line`` as the tail keeps it: cut by :func:`cut_line` when too long."""
    return cut_line(line) if len(line) > MAX_LINE_BYTES else line


def cut_line(line: bytes) -> bytes:
    """A line longer than :data:`MAX_LINE_BYTES` cut to it, less the word the cut went through
    when that word could be a token (up to :data:`LONGEST_TOKEN` bytes): a part of a token is
    no token any rule knows, and must not be kept in clear.

    >>> cut_line(b"x " * 2046 + b"ghp_" + b"a" * 36) == b"x " * 2046
    True
    >>> len(cut_line(b"x" * 10_000))  # one endless word: no token shape, kept as it is
    4096
    """
    head = line[:MAX_LINE_BYTES]
    if not line[MAX_LINE_BYTES:MAX_LINE_BYTES + 1].isspace():
        word = _TOKEN_END.search(head)
        if word is not None and len(word.group()) <= LONGEST_TOKEN:
            head = head[:word.start()]
    return head


#: The longest token shape the rules know (1Password service account tokens, ~1,100 bytes).
LONGEST_TOKEN = 1200
