"""``runsnap check`` with no snapshot: the pre-launch guard's rules on the context a launch
from here would get (what ``capture --no-run`` would record), nothing written.

``runsnap check`` checks the current context, ``runsnap check -- COMMAND`` the context that
COMMAND would get (its interpreter's packages, its models). The rules are the guard's
(:data:`runsnap.checks.guard.GUARD_CHECKS`), and so is the verdict: exit 1 when it finds
anything, and 2 (as ``capture --strict`` refusing the launch) when ``--strict`` or
``[tool.runsnap.capture] strict = true`` is in force and a finding weighs
:data:`~runsnap.checks.guard.STRICT_WEIGHT` or more.
"""

from __future__ import annotations

import shlex

from runsnap.base.terminal import say
from runsnap.capturing import CaptureOptions, capture_context
from runsnap.capturing.settings import load_settings
from runsnap.checks import CheckReport
from runsnap.checks import check as check_snapshot
from runsnap.checks.guard import STRICT_WEIGHT, guard
from runsnap.commands import Result
from runsnap.diffing.static import readers_of
from runsnap.errors import FAILED, NO, OK, UsageError
from runsnap.render.check import render
from runsnap.views.names import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["check_context", "check_file", "refuse_both"]


def check_context(command: list[str], fmt: str, strict: bool, width: int) -> Result:
    """The guard's findings on the context ``command`` would get (the current context when
    empty), rendered as ``check`` renders a snapshot's, with the guard's verdict."""
    snap = capture_context(command, CaptureOptions())
    findings = tuple(guard(snap))
    what = f"the context of: {shlex.join(command)}" if command else "the current context"
    text = render(CheckReport(what, findings), fmt, width=width)
    heavy = [f for f in findings if f.score >= STRICT_WEIGHT]
    if heavy and (strict or load_settings(_cwd(snap)).strict):
        say(f"runsnap: capture --strict would not launch: {len(heavy)} finding"
            f"{'s' if len(heavy) != 1 else ''} of weight {STRICT_WEIGHT} or more\n")
        return Result(text, FAILED)
    return Result(text, NO if findings else OK)


def check_file(snapshot: str, snap_dir: str, fmt: str, width: int) -> Result:
    """``runsnap check SNAPSHOT``: the findings inside one snapshot (a file, ``@N`` or
    ``@LABEL`` of ``snap_dir``), with who reads each variable where its packages are installed
    here."""
    snap = load(snapshot, snap_dir)
    report = check_snapshot(snap, who_reads=readers_of(snap), installed=True)
    return Result(render(report, fmt, width=width), NO if report else OK)


def _cwd(snap: Snapshot) -> str | None:
    return snap.records.command.cwd


def refuse_both(snapshot: str | None, command: list[str] | None) -> None:
    """A usage error when both a SNAPSHOT and ``-- COMMAND`` are given, or ``--`` alone."""
    if command is not None and snapshot is not None:
        raise UsageError("check: give a SNAPSHOT or -- COMMAND, not both")
    if command == []:
        raise UsageError("check: -- needs a COMMAND after it")
