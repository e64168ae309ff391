"""Re-launch what a snapshot recorded: ``runsnap replay SNAPSHOT``.

    plan = prepare(load("good.toml"))          # spec, secrets taken, what cannot be restored
    record = replay(plan)                      # captured like any wrapped launch

The launch specification is the snapshot's argv, cwd and environment, exactly: variables the
snapshot lacks are removed, and a secret (stored as a fingerprint) is taken from this process's
environment when its fingerprint under this user's key matches the stored one. What a launch
cannot restore (another commit, other packages, another model revision, another host or GPU)
is found by capturing the live context for the same launch and diffing it with the snapshot.
:mod:`runsnap.experiments.bisecting` builds its trials from :func:`restore` too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runsnap.base.records import FrozenRecord
from runsnap.diffing import compare
from runsnap.diffing.result import describe_change
from runsnap.errors import UsageError
from runsnap.experiments.applying import Plan, Skipped
from runsnap.launch import LaunchSpec
from runsnap.redact import Redactor, load_key

if TYPE_CHECKING:
    from runsnap.capturing import RunRecord
    from runsnap.diffing import Difference
    from runsnap.redact import FingerprintKey
    from runsnap.snapshot import Snapshot

__all__ = [
    "ReplayPlan",
    "Restored",
    "cannot_restore",
    "prepare",
    "replay",
    "restore",
]

#: Sections whose differences with the live context a launch cannot undo.
UNRESTORABLE_SECTIONS = ("git", "packages", "models", "system")


class Restored(FrozenRecord):
    """A launch specification rebuilt from a snapshot, and how its secrets were found."""

    spec: LaunchSpec
    taken: tuple[str, ...] = ()
    """Where a secret was taken from this environment (``env HF_TOKEN``, ``argv[4]``)."""

    missing: tuple[str, ...] = ()
    """Where a secret could not be restored, each with why (``env HF_TOKEN: not set here``)."""


class _Secrets:
    """Finds, in this environment, the values behind a snapshot's fingerprints."""

    def __init__(self, snapshot: Snapshot, environ: Mapping[str, str], key: FingerprintKey):

        self.redactor = Redactor(key)
        self.environ = environ
        self.same_key = str(snapshot.records.meta.fingerprint_key or "") == key.id
        blank = self.redactor.fingerprint("")
        self.placeholder = re.compile(re.escape(blank[: blank.rindex(":") + 1]) + r"[0-9a-f]+>")
        self._by_print: dict[str, str] | None = None

    def why_not(self, name: str) -> str:
        if not self.same_key:
            return "the snapshot was fingerprinted with another key (another user or machine)"
        if name and name not in self.environ:
            return "not set here"
        return "the value here does not match the snapshot's fingerprint"

    def variable(self, name: str, stored: str) -> str | None:
        """This environment's value of ``name`` when it redacts exactly to ``stored``."""
        value = self.environ.get(name)
        if value is None or not self.same_key:
            return None
        return value if self.redactor.value_for(name, value, "") == stored else None

    def text(self, stored: str) -> str | None:
        """``stored`` with every fingerprint replaced by a value of this environment that has
        that fingerprint; None when one is not found."""
        if not self.same_key:
            return None
        if self._by_print is None:
            self._by_print = {self.redactor.fingerprint(v): v for v in self.environ.values()}
        found = self._by_print
        if any(m[0] not in found for m in self.placeholder.finditer(stored)):
            return None
        return self.placeholder.sub(lambda m: found[m[0]], stored)

    def has(self, value: Any) -> bool:
        return isinstance(value, str) and self.placeholder.search(value) is not None


def restore(
    snapshot: Snapshot,
    *,
    environ: Mapping[str, str] | None = None,
    key: FingerprintKey | None = None,
) -> Restored:
    """The launch ``snapshot`` recorded, with its secrets taken from ``environ`` (default: this
    process's environment) where their fingerprints match under ``key`` (default: this user's).

    A secret that cannot be restored is listed in :attr:`Restored.missing`; its variable is left
    out of the environment (an argv entry keeps its placeholder). Raises
    :class:`~runsnap.errors.UsageError` when the snapshot recorded no command.
    """

    cmd = snapshot.records.command
    argv = [str(a) for a in cmd.argv]
    if not argv:
        raise UsageError(f"{snapshot.path_text or 'snapshot'}: it recorded no command to launch")
    environ = os.environ if environ is None else environ
    secrets = _Secrets(snapshot, environ, key or load_key())
    taken: list[str] = []
    missing: list[str] = []
    env: dict[str, str] = {}
    for name, stored in snapshot.records.env.vars.items():
        if not isinstance(stored, str):
            continue
        if not secrets.has(stored):
            env[name] = stored
            continue
        value = secrets.variable(name, stored) or secrets.text(stored)
        if value is None:
            missing.append(f"env {name}: {secrets.why_not(name)}")
        else:
            env[name] = value
            taken.append(f"env {name}")
    for i, arg in enumerate(argv):
        if secrets.has(arg):
            value = secrets.text(arg)
            if value is None:
                missing.append(f"argv[{i}]: no variable here has the snapshot's fingerprint")
            else:
                argv[i] = value
                taken.append(f"argv[{i}]")
    packages = snapshot.records.packages
    python = packages.interpreter if packages.reason == "--python" else None
    cwd = str(cmd.cwd or os.getcwd())
    spec = LaunchSpec(tuple(argv), os.path.abspath(cwd), env, python)
    return Restored(spec, tuple(taken), tuple(missing))


def unknown_secrets(the_plan: Plan, missing: Sequence[str], bad: Snapshot
                    ) -> tuple[Plan, tuple[str, ...]]:
    """GOOD's secrets not restored here (:attr:`Restored.missing`) that BAD's launch did not
    have at all: BAD ran without them, so every trial runs without them, as BAD did (GOOD's
    own launch too: a CI job's token where BAD ran in a notebook). Each becomes a difference
    no trial applies (blocking: GOOD's launch here may no longer be GOOD's, and the first
    trial says so); the plan so changed, and the secrets still missing (BAD had them too)."""
    lacked: dict[str, str] = {}
    rest = []
    for entry in missing:
        where, _, why = entry.partition(": ")
        if where.startswith("env ") and where[4:] not in bad.records.env.vars:
            lacked[where[4:]] = why
        else:
            rest.append(entry)
    moved = [c for c in the_plan.changes if c.path[:1] == ("env",) and str(c.path[1]) in lacked]
    skipped = tuple(Skipped(c.section, c.key, tuple(c.path), c.a, c.b,
                            f"GOOD's secret, not known here ({lacked[str(c.path[1])]}): every "
                            "trial runs without it, as BAD did", True) for c in moved)
    return the_plan.replace(changes=tuple(c for c in the_plan.changes if c not in moved),
                            skipped=(*the_plan.skipped, *skipped)), tuple(rest)


def secret_from(snapshot: Snapshot, name: str, stored: str, *,
                environ: Mapping[str, str] | None = None,
                key: FingerprintKey | None = None) -> str | None:
    """The value in ``environ`` behind ``stored`` (a redacted value of variable ``name``), or
    None. Plain values come back as they are."""

    secrets = _Secrets(snapshot, os.environ if environ is None else environ, key or load_key())
    if not secrets.has(stored):
        return stored
    return secrets.variable(name, stored) or secrets.text(stored)


def cannot_restore(snapshot: Snapshot, live: Snapshot) -> list[Difference]:
    """What differs between ``snapshot`` and ``live`` (the context captured now for the same
    launch) that re-launching cannot undo: commits and dirty state, packages and interpreter,
    models, host and GPU. Most likely cause first; noise left out."""

    report = compare(snapshot, live, git_log=False)
    return [d for d in report.counted
            if d.section in UNRESTORABLE_SECTIONS
            or (d.section == "command" and d.key == "executable")]


class ReplayPlan(FrozenRecord):
    """A replay ready to launch: what is launched and what could not be brought back."""

    snapshot: Snapshot
    restored: Restored
    cannot: tuple[Difference, ...]
    """Differences with the live context that the replay cannot undo."""

    @property
    def spec(self) -> LaunchSpec:
        return self.restored.spec


def prepare(
    snapshot: Snapshot,
    extra_args: Sequence[str] = (),
    *,
    environ: Mapping[str, str] | None = None,
    allow_missing_secrets: bool = False,
    strict: bool = False,
    compare_live: bool = True,
) -> ReplayPlan:
    """Rebuild ``snapshot``'s launch (with ``extra_args`` appended) and compare it with now.

    Raises :class:`~runsnap.errors.UsageError` when a secret is missing (unless
    ``allow_missing_secrets``) or, with ``strict``, when anything cannot be restored.
    """
    restored = restore(snapshot, environ=environ)
    if restored.missing and not allow_missing_secrets:
        raise UsageError("cannot restore the snapshot's secrets: " + "; ".join(restored.missing)
                         + " (set them here, or give --allow-missing-secrets)")
    spec = restored.spec
    if extra_args:
        spec = spec.replace(argv=(*spec.argv, *extra_args))
        restored = restored.replace(spec=spec)
    cannot: list[Difference] = []
    if compare_live:
        # deferred: runsnap.capturing.like, ~12 ms measured under load; only prepare() needs it
        from runsnap.capturing.like import capture_like

        live = capture_like(snapshot, env=spec.env)
        cannot = cannot_restore(snapshot, live)
    if strict and cannot:
        first = cannot[0]
        raise UsageError(f"--strict: {len(cannot)} difference{'s' if len(cannot) != 1 else ''} "
                         f"with now cannot be restored, first {first.where} "
                         f"{describe_change(first)}")
    return ReplayPlan(snapshot, restored, tuple(cannot))


def replay(
    plan: ReplayPlan,
    *,
    label: str | None = None,
    output: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    kill_grace: float | None = None,
    on_saved: Any = None,
) -> RunRecord:
    """Launch ``plan`` and capture it like any wrapped launch (snapshot, then outcome)."""
    # deferred: runsnap.capturing, ~29 ms measured under load; only replay() needs it
    from runsnap.capturing import run

    spec = plan.spec
    name = label if label is not None else f"replay-{plan.snapshot.label or 'run'}"
    return run(spec.argv, env=spec.env, cwd=spec.cwd, python=spec.python, label=name,
               output=output, out_dir=out_dir, kill_grace=kill_grace, on_saved=on_saved)
