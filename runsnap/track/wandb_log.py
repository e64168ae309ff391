"""Log a snapshot to a W&B run with W&B's own client: run as
``python -m runsnap.track.wandb_log RUN_ID SNAPSHOT TAGS_JSON EXIT_STATUS TIMEOUT RESULT`` by
:meth:`runsnap.track.wandb.WandB.finish` (a process of its own: ``wandb.init`` starts a service,
installs handlers and threads, and can be stopped as a whole when it does not answer), and
:func:`attach` by ``runsnap.track.log_snapshot()`` inside a program that has a run.

What it writes to RESULT (JSON): ``id``, ``path`` (``entity/project/id``), ``online``,
``url``, ``folder`` (the run folder), or ``error``.
"""

from __future__ import annotations

import json
import os
import sys

from runsnap.track.base import ARTIFACT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["attach", "main"]


def attach(run: Any, text: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """Put the snapshot ``text`` into ``run`` as the file :data:`ARTIFACT` (saved now), its
    ``tags`` into the run's config under ``runsnap``, and the tag ``runsnap`` on the run."""
    target = os.path.join(run.dir, *ARTIFACT.split("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as fh:
        fh.write(text)
    run.save(target, base_path=run.dir, policy="now")
    run.config.update({"runsnap": dict(tags)}, allow_val_change=True)
    run.tags = tuple(sorted({*(run.tags or ()), "runsnap"}))
    online = not run.settings._offline  # noqa: SLF001 - the only way the client says it
    return {"id": run.id, "path": "/".join(p for p in (run.entity, run.project, run.id) if p),
            "online": online, "url": run.url or "", "folder": os.path.dirname(run.dir)}


def main(argv: Sequence[str]) -> int:
    """Resume run ``RUN_ID``, attach the snapshot, finish with the child's exit status."""
    run_id, snapshot, tags, exit_status, timeout, result = argv
    info: dict[str, Any]
    try:
        # deferred: the wandb client, ~2537 ms measured under load; only main() needs it
        import wandb
    except ImportError:
        info = {"error": "runsnap's Python has no wandb client (pip install 'runsnap[wandb]')"}
    else:
        try:
            with open(snapshot, encoding="utf-8") as fh:
                text = fh.read()
            run = wandb.init(id=run_id, resume="allow", settings=wandb.Settings(
                init_timeout=float(timeout), console="off", silent=True))
            info = attach(run, text, json.loads(tags))
            run.finish(exit_code=int(exit_status))
        except Exception as exc:  # the client's own errors, all of them one line for the user
            first = (str(exc).strip().splitlines() or [""])[0]
            info = {"error": f"{type(exc).__name__}: {first[:300]}"}
    with open(result, "w", encoding="utf-8") as fh:
        json.dump(info, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
