"""``[runtime] parsed_options``: what the program's option parser made of its command line, from
the tracing hook's ``("A", prog, from_argv, options)`` records (one per ``parse_known_args``
that returned; ``runsnap/probe/hook/_runsnap_trace_args.py``).

Option string -> ``{dest, value}``, ``value`` the text the hook wrote (``repr`` of a number,
string, bool, ``None`` or a list of those; ``<type name>`` for anything else; cut past 200
characters and ending with ``...``); ``given = true`` where that parse read the string among
its words (it received the option); ``custom = true`` where the option's action is not one of
argparse's own classes (the program's ``Action`` subclass: its call may do more than set the
dest). Every option string of an action is listed (``-n`` and ``--node-rank`` both), so an
option is found under whichever spelling a command line used.

Several parses (a parser for a config file first, subcommands, a launcher and the program it
starts, each process of a job): an option string takes the value of the first parse that
received it, else of the first that declares it, in this order: the launched process (whose
parent was not traced) before its children, then a parse of the process's own ``sys.argv``
before one of a list the program built, then the order the parses ended in. The values are
kept as the hook wrote them; the capture's redaction pass judges each by its option's name and
dest, as ``[command.options]``' values are, before the section is written.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_OPTIONS", "parsed_options"]

#: Option strings kept per run.
MAX_OPTIONS = 2000


def parsed_options(python: list[list[tuple[Any, ...]]]) -> dict[str, dict[str, Any]]:
    """Option string -> ``{"dest": ..., "value": ...}`` from the processes' records (one list
    per process, its ``P`` record first, as :func:`runsnap.tracing.merge.read_logs` reads them).

    >>> got = parsed_options([[("P", 7, 1), ("A", "x", False, [(["--lr"], "lr", "0.1", True, [])]),
    ...     ("A", "x", True, [(["-l", "--lr"], "lr", "0.001", True, ["-l"]),
    ...                       (["--seed"], "seed", "None", False, [])])]])
    >>> got["-l"], got["--lr"]
    ({'dest': 'lr', 'value': '0.001', 'given': True}, {'dest': 'lr', 'value': '0.001'})
    >>> got["--seed"]
    {'dest': 'seed', 'value': 'None', 'custom': True}
    """
    pids = {records[0][1] for records in python if len(records[0]) > 2}
    parses: list[tuple[bool, bool, int, list[Any]]] = []
    for records in python:
        root = len(records[0]) > 2 and records[0][2] not in pids
        for rec in records[1:]:
            if rec[0] == "A" and len(rec) >= 4 and isinstance(rec[3], list):
                parses.append((not root, rec[2] is not True, len(parses), rec[3]))
    out: dict[str, dict[str, Any]] = {}
    for *_order, options in sorted(parses, key=lambda p: p[:3]):
        for row in options:
            if not (isinstance(row, tuple) and len(row) >= 3 and isinstance(row[0], list)
                    and isinstance(row[1], str) and isinstance(row[2], str)):
                continue
            given = row[4] if len(row) > 4 and isinstance(row[4], list) else []
            for option in row[0]:
                if not isinstance(option, str) or (
                        option in out and (out[option].get("given") or option not in given)):
                    continue  # kept: a parse that received it, or one before and neither did
                entry: dict[str, Any] = {"dest": row[1], "value": row[2]}
                if option in given:
                    entry["given"] = True
                if row[3:4] == (False,):
                    entry["custom"] = True
                if option in out or len(out) < MAX_OPTIONS:
                    out[option] = entry
    return out
