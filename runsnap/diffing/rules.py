"""What ranking needs besides the differences: the user's ignore and priority rules (from
``--ignore`` and the nearest config file), evidence from the runs, and facts about the pair.

User rules come from ``--ignore PATTERN`` and from ``[tool.runsnap.diff]`` in
``pyproject.toml`` or ``[diff]`` in ``.runsnap.toml`` (``ignore = [...]``, ``priority = [...]``,
``metric-tolerance = 0.001`` or ``{ loss = 0, "eval_*" = 0.001 }``).
A pattern is a shell-style glob matched against a difference's locator written with dots
(``env.NCCL_*``, ``models.*.config.*``, ``packages.torch``), and, as before, against its
``KEY`` and ``SECTION.KEY`` (docs/diff.md).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runsnap.base.projectfile import may_hold_runsnap_table
from runsnap.base.records import FrozenRecord, field
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.result import Difference
from runsnap.errors import UsageError
from runsnap.snapshot import toml_parser

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["RankContext", "Verdict", "find_config", "load_user_rules", "matches",
           "parse_tolerance"]

Verdict = tuple[int, str, bool]
"""What a scorer returns: (score, reason, hidden)."""


class RankContext(FrozenRecord):
    """What ranking needs besides the difference itself: the user's rules (``ignore``,
    ``priority``) and what the runs showed (``evidence``), with facts about the pair."""

    ignore: tuple[str, ...] = ()
    """Globs of differences to hide (``--ignore``, config ``ignore``)."""

    priority: tuple[str, ...] = ()
    """Globs of differences to rank at the top (config ``priority``)."""

    evidence: Mapping[tuple[str, str], Evidence] = field(default_factory=dict)
    """The strongest evidence from the runs per ``(section, key)``
    (:func:`runsnap.diffing.evidence.gather`)."""

    fingerprints_comparable: bool = True
    """False when the two snapshots' secrets were fingerprinted with different keys."""

    metric_tolerance: tuple[tuple[str, float], ...] = ()
    """(glob, relative tolerance) per metric, the first match wins (``--metric-tolerance``,
    then config ``metric-tolerance``): how far a metric may move and still be noise."""

    same_models: frozenset[str] = frozenset()
    """Options (``--model-path``) whose model differs only in its directory: config, weights
    and side files are equal, so another path there is not another model."""

    job_evidence: Mapping[tuple[str, str], Evidence] = field(default_factory=dict)
    """Evidence the other ranks of the same two jobs saw, each sentence naming its rank
    (:func:`runsnap.diffing.rank_evidence`): merged into the pair's own where stronger
    (:func:`runsnap.diffing.evidence.merged`)."""

    own_families: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Name prefixes of no known family (``FIT_``) with members both runs were launched with at
    the same value (``FIT_STEPS``): the program's own settings, which its launches carry; the
    prefix maps to those members (:func:`runsnap.diffing.sections.env.own_families`)."""

    inert_misspellings: frozenset[str] = frozenset()
    """Variables that look like a misspelling of a name both runs hold at one value (or
    neither sets): what they keep from taking effect is the same in both runs
    (:func:`runsnap.diffing.sections.env.inert_misspellings`)."""

    hand_set: frozenset[str] = frozenset()
    """Launcher variables, noise by name, that a run holds with no launcher having set them
    (``RANK=1`` left exported): not noise (:func:`runsnap.diffing.sections.env.hand_set`)."""

    same_prefix: str = ""
    """The Python environment (``[packages] prefix``) both runs ran in, when it is one; ``""``
    otherwise."""

    outputs: Mapping[str, str] = field(default_factory=dict)
    """Options whose value is where a run wrote its output, with what it wrote, in words
    (:func:`runsnap.diffing.datafiles.output_options`): a destination, not an input."""

    parsed_alike: Mapping[str, str] = field(default_factory=dict)
    """Options that differ on the command lines but that both runs' parsers set to the same
    value, with the reason to give (:func:`runsnap.diffing.sections.command.parsed_alike`)."""

    own_dirs_only: bool = False
    """The runs' ``sys.path`` differ only in each run's own script directory, first
    (:func:`runsnap.diffing.searchpaths.own_dirs_only`)."""

    ran_out: bool = False
    """A run failed as one that ran out of a resource does (memory, files, processes:
    :func:`runsnap.diffing.consequences.ran_out`), where how many work at once may be why."""

    exact_metrics: bool = False
    """Both runs computed on the CPU alone, with the same threads (:func:`runsnap.diffing.
    loaded.exact_metrics`): a metric that moved at all tells (0 for :func:`~runsnap.diffing.
    sections.outcome.tolerance`; the user's tolerances still win). Set by the experiments'
    judge, whose launches show whether the program gives its metric exactly again; the diff
    only says so (:func:`runsnap.diffing.loaded.moved_exactly`)."""

    def with_ignore(self, patterns: Iterable[str]) -> RankContext:
        """These rules with more ignore patterns."""
        return self.replace(ignore=(*self.ignore, *patterns))

    def with_metric_tolerance(self, specs: Iterable[str]) -> RankContext:
        """These rules with ``--metric-tolerance`` specs first (they win over the config's);
        UsageError when one is malformed (:func:`parse_tolerance`)."""
        given = tuple(parse_tolerance(s) for s in specs)
        return self.replace(metric_tolerance=(*given, *self.metric_tolerance))


def parse_tolerance(spec: str, what: str = "--metric-tolerance") -> tuple[str, float]:
    """``NAME=TOL`` (``NAME`` a metric or a glob), or ``TOL`` alone for every metric, as
    (glob, relative tolerance); ``TOL`` is a fraction of the larger value (``0.001``) or a
    percent (``0.1%``), 0 for bit-exact runs.

    >>> parse_tolerance("loss=0"), parse_tolerance("0.5%"), parse_tolerance("eval_*=1e-4")
    (('loss', 0.0), ('*', 0.005), ('eval_*', 0.0001))
    >>> parse_tolerance("loss=fast")
    Traceback (most recent call last):
    ...
    runsnap.errors.UsageError: --metric-tolerance loss=fast: expected [NAME=]TOL, TOL a ...
    """
    name, eq, raw = spec.rpartition("=")
    name = name.strip() if eq else "*"
    text = raw.strip()
    scale = 100.0 if text.endswith("%") else 1.0
    try:
        value = float(text.removesuffix("%")) / scale
    except ValueError:
        value = -1.0
    if not name or not value >= 0 or value == float("inf"):
        raise UsageError(f"{what} {spec}: expected [NAME=]TOL, TOL a relative change of 0 or "
                         "more (0.001 or 0.1%; 0 for bit-exact runs)")
    return name, value


def matches(patterns: Sequence[str], d: Difference) -> str | None:
    """The first pattern that matches the difference's locator (its :attr:`~Difference.path`
    joined with dots), its ``KEY`` or ``SECTION.KEY``.

    >>> matches(["env.WANDB_*"], Difference("env", "WANDB_MODE", "added", None, "x"))
    'env.WANDB_*'
    >>> d = Difference("models", "--model-path: text_config.rope_theta", "changed", 1, 2,
    ...                path=("models", "--model-path", "config", "text_config", "rope_theta"))
    >>> matches(["models.*.config.*"], d), matches(["packages.*"], d) is None
    ('models.*.config.*', True)
    """
    names = (".".join(d.path), d.key, f"{d.section}.{d.key}")
    for p in patterns:
        if any(fnmatch.fnmatchcase(name, p) for name in names):
            return p
    return None


def _config_table(path: str) -> Mapping[str, Any] | None:
    """The diff settings of ``path`` (``None``: it has none). A ``pyproject.toml`` without a
    runsnap table is not parsed: most projects have one, a diff run in them need not import
    :mod:`tomllib` for it, and a broken one that is not runsnap's is not runsnap's error."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    pyproject = os.path.basename(path) == "pyproject.toml"
    if pyproject and not may_hold_runsnap_table(raw):
        return None
    tomllib = toml_parser()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    if pyproject:
        table = data.get("tool", {}).get("runsnap", {}).get("diff")
    else:
        table = data.get("diff")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: the runsnap diff settings must be a table")
    return table


def find_config(
    start: str | os.PathLike[str] | None = None,
) -> tuple[Path, Mapping[str, Any]] | None:
    """The nearest ``.runsnap.toml`` ``[diff]`` or ``pyproject.toml`` ``[tool.runsnap.diff]``,
    looking in ``start`` (default: the current directory) and its parents."""
    # os.path, not pathlib, for the search: pathlib (with urllib.parse) is a tenth of
    # ``diff A B``'s start-up, and most pyproject.toml files hold no runsnap settings
    folder = os.path.realpath(os.fspath(start) if start is not None else os.getcwd())
    while True:
        for fname in (".runsnap.toml", "pyproject.toml"):
            path = os.path.join(folder, fname)
            if os.path.isfile(path):
                table = _config_table(path)
                if table is not None:
                    # deferred: pathlib, ~9 ms measured under load; only find_config() needs it
                    from pathlib import Path

                    return Path(path), table
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load_user_rules(start: str | os.PathLike[str] | None = None) -> RankContext:
    """The user's ignore and priority rules from the nearest config file (none: no rules)."""
    found = find_config(start)
    if found is None:
        return RankContext()
    path, table = found
    out: dict[str, tuple[str, ...]] = {}
    for key in ("ignore", "priority"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{path}: '{key}' must be a list of strings (glob patterns)")
        out[key] = tuple(value)
    unknown = sorted(set(table) - {"ignore", "priority", "metric-tolerance"})
    if unknown:
        raise UsageError(f"{path}: unknown runsnap diff setting {unknown[0]!r} "
                         f"(known: ignore, priority, metric-tolerance)")
    return RankContext(ignore=out["ignore"], priority=out["priority"],
                       metric_tolerance=_tolerances(path, table.get("metric-tolerance")))


def _tolerances(path: Path, value: Any) -> tuple[tuple[str, float], ...]:
    """Config ``metric-tolerance``: one number for every metric, or a table of metric (or
    glob) to number (``{ loss = 0, "eval_*" = 0.001 }``)."""
    if value is None:
        return ()
    table = value if isinstance(value, dict) else {"*": value}
    out = []
    for name, tol in table.items():
        if isinstance(tol, bool) or not isinstance(tol, (int, float, str)):
            raise UsageError(f"{path}: 'metric-tolerance' must be a number or a table of "
                             "metric names to numbers (0 for bit-exact runs)")
        out.append(parse_tolerance(f"{name}={tol}", f"{path}: metric-tolerance"))
    # exact names before globs, so that {"*" = 0.01, loss = 0} means what it says
    return tuple(sorted(out, key=lambda kv: any(c in kv[0] for c in "*?[")))
