"""``runsnap/diff.html`` kept with a tracked run (``capture --track mlflow``): the page of this
run's diff against its reference, the newest earlier snapshot in the same folder of the same
command that ended well (exit status 0).

When: always for a run that failed (that is when someone opens the run in the tracker's UI to
learn why, and the diff is what answers; one diff at the end of a launch that failed costs about
a second), and for any run with ``--track-html``. A run that ended well is not diffed unless
asked: most launches end well, and a diff at each end would cost every one of them.
"""

from __future__ import annotations

import os

from runsnap.errors import RunsnapError
from runsnap.render import render
from runsnap.snapshot.store import list_snapshots
from runsnap.track import attach
from runsnap.views.compare import diff

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.store import Entry
    from runsnap.track import Session

__all__ = ["PAGE", "keep_diff_page", "reference"]

#: The page's name under the run's ``runsnap/`` artifacts.
PAGE = "diff.html"


def reference(path: str) -> Entry | None:
    """The snapshot the one at ``path`` is compared with: the newest other snapshot of its
    folder with the same command, captured before it, that ended with exit status 0."""
    entries = list_snapshots(os.path.dirname(os.path.abspath(path)) or ".")
    own = next((e for e in entries if os.path.samefile(e.path, path)), None)
    if own is None or not own.command:
        return None
    for e in entries:
        if (e.path != own.path and not e.error and e.command == own.command
                and e.exit_status == 0 and e.captured_at < own.captured_at):
            return e
    return None


def keep_diff_page(session: Session, snap: Snapshot, asked: bool) -> list[str]:
    """Log :data:`PAGE` to the tracked run of ``snap`` when it failed or ``asked``; the
    problems, one line each (said only when the page was asked for, or could not be kept)."""
    status = snap.records.outcome.exit_status
    if not asked and status in (0, None):
        return []
    if not session.tracker.takes_files:  # W&B: not yet; said only when asked
        return [f"no {PAGE}: runsnap cannot add files to {session.tracker.name} runs yet"] \
            if asked else []
    ref, path = session.started.ref, snap.path_text
    if not ref or not path:
        return ["no diff.html: the run or the snapshot file is missing"] if asked else []
    try:
        good = reference(path)
        if good is None:
            return [f"no diff.html: no earlier run of this command in {os.path.dirname(path)} "
                    "ended well"] if asked else []
        page = render(diff(good.path, path), "html")
        left = session.left()  # what --track-timeout leaves after the snapshot was logged
        if left <= 0:
            return [f"{PAGE} not kept with the run: no time left of --track-timeout "
                    f"{session.timeout:g} s"]
        attach(ref, PAGE, page.encode("utf-8"), session.env, left)
    except (RunsnapError, OSError) as exc:
        return [f"{PAGE} not kept with the run: {exc}"]
    return []
