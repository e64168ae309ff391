"""A bisection's search trial with only what its verdict needs: the launch and its outcome.

    python -I -m runsnap.experiments.quicktrial --fd N --kill-after S -- ARGV...

Run by :func:`runsnap.experiments.trials.run_trial` in the trial's environment and working
directory, in place of a full ``runsnap capture``: the program runs exactly as a capture would
run it (:func:`runsnap.launch.run`: same signals, same relay of its output, same outcome), but
no context is collected, nothing is traced and no snapshot is written. The outcome's fields
that judge a trial (``status``, ``exit_status``, ``signal``, ``first_error``, the last
``traceback``, ...), redacted as a capture redacts them (the environment's secrets first, so a
secret the program prints is hidden as it would be in a snapshot), are written as one JSON
object to file descriptor N.

The trials that decide the answer (the re-checks of the cause and of GOOD's launch) are full
captures, so the snapshots a bisection leaves are those of the runs its answer rests on.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["VERDICT_KEYS", "main", "verdict_fields"]

#: The outcome's fields a trial is judged by (:class:`runsnap.experiments.trials.OutcomeJudge`).
VERDICT_KEYS = ("status", "exit_status", "signal", "first_error", "metrics", "duration_s",
                "peak_rss_bytes", "warnings", "traceback")


def verdict_fields(section: Mapping[str, Any], env: Mapping[str, str], cwd: str) -> dict[str, Any]:
    """``section`` (an ``[outcome]``) cut to :data:`VERDICT_KEYS`, redacted as a capture in
    ``env`` and ``cwd`` would redact it."""
    # deferred: runsnap.capturing.collect, runsnap.redact, ~84 ms measured under load; only verdict_fields()
    # needs it
    from runsnap.capturing.collect import capture_redactor
    from runsnap.redact import load_key

    redactor = capture_redactor(load_key(), cwd)
    kept = {k: section[k] for k in VERDICT_KEYS if k in section}
    # with the environment, as in a capture: its secrets are hidden wherever they reappear
    return dict(redactor.sections({"env": {"vars": dict(env)}, "outcome": kept})["outcome"])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command after ``--``; write its verdict fields to ``--fd``; exit with its
    status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print("runsnap: quicktrial: give the command after --", file=sys.stderr)
        return 2
    at = args.index("--")
    opts, command = args[:at], args[at + 1:]
    fd, grace = -1, 5.0
    try:
        for i in range(0, len(opts), 2):
            if opts[i] == "--fd":
                fd = int(opts[i + 1])
            elif opts[i] == "--kill-after":
                grace = float(opts[i + 1])
            else:
                raise ValueError(opts[i])
    except (IndexError, ValueError):
        print(f"runsnap: quicktrial: bad options {opts!r}", file=sys.stderr)
        return 2
    if not command:
        print("runsnap: quicktrial: give the command after --", file=sys.stderr)
        return 2
    # deferred: runsnap.launch, runsnap.launch.outcome, ~52 ms measured under load; only main() needs it
    from runsnap.launch import LaunchSpec, Watch, run
    from runsnap.launch.outcome import build

    spec = LaunchSpec.of(command)
    result = run(spec, Watch(kill_grace=grace))
    fields = verdict_fields(build(result), spec.env, spec.cwd)
    if fd >= 0:
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(fields, out)
        except OSError:
            pass
    return int(result.exit_status or 0)


if __name__ == "__main__":
    sys.exit(main())
