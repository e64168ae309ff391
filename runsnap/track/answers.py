"""A tracker's answers, read once where they arrive, into frozen records.

An MLflow server's JSON is a document runsnap did not write: each answer is checked against
what runsnap reads of it here, at the boundary, and turned into a record (:class:`MlflowRun`,
:class:`MlflowRunsPage`); a value of the wrong type is one
:class:`~runsnap.errors.TrackerError` naming the answer and the field, never an
``AttributeError`` deeper in. The code that uses an answer (``runsnap.track.mlflow``) reads
attributes only, and what it caches (the snapshot file a run holds) was validated before.
"""

from __future__ import annotations

from runsnap.base.records import FrozenRecord
from runsnap.errors import TrackerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["MlflowRun", "MlflowRunsPage", "WandbLogged", "experiment_of", "logged_of", "run_of",
           "runs_page_of", "summary_of"]

_KINDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
          list: "an array", dict: "an object", type(None): "null"}


def _kind(value: Any) -> str:
    """What a JSON value is, in the words of the error.

    >>> _kind([1]), _kind(None)
    ('an array', 'null')
    """
    return _KINDS.get(type(value), type(value).__name__)


def _wrong(where: str, field: str, expected: str, value: Any) -> TrackerError:
    return TrackerError(f"{where}: {field} is {_kind(value)}, not {expected}")


def _table(value: Any, where: str, field: str) -> Mapping[str, Any]:
    """``value`` when it is a JSON object; else the one error."""
    if not isinstance(value, dict):
        raise _wrong(where, field, "an object", value)
    return value


def _text(table: Mapping[str, Any], key: str, where: str, field: str,
          numbers: bool = False) -> str:
    """The string at ``key`` (empty when absent or null); an integer too when ``numbers``.

    >>> _text({"a": "x"}, "a", "w", "a"), _text({}, "a", "w", "a"), _text({"a": 7}, "a", "w", "a", True)
    ('x', '', '7')
    >>> _text({"a": 7}, "a", "runs/get", "run.info.a")
    Traceback (most recent call last):
    runsnap.errors.TrackerError: runs/get: run.info.a is an integer, not a string
    """
    value = table.get(key)
    if value is None:
        return ""
    if isinstance(value, str) or (numbers and type(value) is int):
        return str(value)
    raise _wrong(where, field, "a string", value)


def _array(table: Mapping[str, Any], key: str, where: str, field: str) -> list[Any]:
    """The array at ``key`` (empty when absent or null)."""
    value = table.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(where, field, "an array", value)
    return value


class MlflowRun(FrozenRecord):
    """What runsnap reads of an MLflow run (``runs/get``, ``runs/create``, one of a
    ``runs/search`` page): its ``info`` and its tags."""

    run_id: str
    """The run's id as answered (checked against MLflow's form by its user)."""
    experiment_id: str
    """Its experiment's id as answered (a string, or the integer an old server writes)."""
    artifact_uri: str
    """Where its artifacts are kept (empty when not said)."""
    status: str
    """``RUNNING``, ``FINISHED`` ... (empty when not said)."""
    run_name: str
    """The name MLflow shows (empty when not said)."""
    tags: Mapping[str, str]
    """Tag key -> value."""


def _run(value: Any, where: str, field: str, listed: bool = False) -> MlflowRun:
    """One run object (``{"info": {...}, "data": {"tags": [...]}}``) as its record; one of a
    listing (``listed``) may lack its ``info`` (its empty id leaves it out of the list)."""
    run = _table(value, where, field)
    info = _table(run.get("info") or {} if listed else run.get("info"), where, f"{field}.info")
    data = _table(run.get("data") or {}, where, f"{field}.data")
    tags: dict[str, str] = {}
    for i, tag in enumerate(_array(data, "tags", where, f"{field}.data.tags")):
        at = f"{field}.data.tags[{i}]"
        tag = _table(tag, where, at)
        tags[_text(tag, "key", where, f"{at}.key")] = _text(tag, "value", where, f"{at}.value")
    return MlflowRun(
        run_id=_text(info, "run_id", where, f"{field}.info.run_id"),
        experiment_id=_text(info, "experiment_id", where, f"{field}.info.experiment_id", True),
        artifact_uri=_text(info, "artifact_uri", where, f"{field}.info.artifact_uri"),
        status=_text(info, "status", where, f"{field}.info.status"),
        run_name=_text(info, "run_name", where, f"{field}.info.run_name"),
        tags=tags)


def run_of(answer: Any, where: str) -> MlflowRun:
    """The run of a ``runs/get`` or ``runs/create`` answer (``{"run": {...}}``).

    >>> run_of({"run": {"info": {"run_id": "ab", "experiment_id": 3},
    ...                 "data": {"tags": [{"key": "k", "value": "v"}]}}}, "runs/get")
    MlflowRun(run_id='ab', experiment_id='3', artifact_uri='', status='', run_name='', tags={'k': 'v'})
    >>> run_of({"run": {"info": []}}, "http://mlflow:5000 runs/get")
    Traceback (most recent call last):
    runsnap.errors.TrackerError: http://mlflow:5000 runs/get: run.info is an array, not an object
    """
    return _run(_table(answer, where, "the answer").get("run"), where, "run")


class MlflowRunsPage(FrozenRecord):
    """One page of a ``runs/search`` answer."""

    runs: tuple[MlflowRun, ...]
    """The runs of the page, in the server's order."""
    next_page_token: str
    """The token of the next page (empty: the last)."""


def runs_page_of(answer: Any, where: str) -> MlflowRunsPage:
    """A ``runs/search`` answer as its record.

    >>> runs_page_of({}, "runs/search")
    MlflowRunsPage(runs=(), next_page_token='')
    >>> runs_page_of({"runs": {"a": 1}}, "runs/search")
    Traceback (most recent call last):
    runsnap.errors.TrackerError: runs/search: runs is an object, not an array
    """
    page = _table(answer, where, "the answer")
    runs = tuple(_run(run, where, f"runs[{i}]", listed=True)
                 for i, run in enumerate(_array(page, "runs", where, "runs")))
    return MlflowRunsPage(runs=runs,
                          next_page_token=_text(page, "next_page_token", where, "next_page_token"))


def experiment_of(answer: Any, where: str, inside: str = "") -> str:
    """The ``experiment_id`` of an ``experiments/get-by-name`` answer (``inside``:
    ``experiment``) or of an ``experiments/create`` one (at the top); empty when absent.

    >>> experiment_of({"experiment": {"experiment_id": "12"}}, "get-by-name", "experiment")
    '12'
    >>> experiment_of({"experiment": "12"}, "get-by-name", "experiment")
    Traceback (most recent call last):
    runsnap.errors.TrackerError: get-by-name: experiment is a string, not an object
    """
    table = _table(answer, where, "the answer")
    if inside:
        table = _table(table.get(inside), where, inside)
    return _text(table, "experiment_id", where, f"{inside}.experiment_id" if inside
                 else "experiment_id", True)


class WandbLogged(FrozenRecord):
    """What runsnap's W&B helper (:mod:`runsnap.track.wandb_log`) answered about the run it
    logged to: an error, or the run's path and page."""

    error: str
    """Why nothing was logged (empty: it was)."""
    online: bool
    """Whether the run is on a server (else in ``./wandb`` only)."""
    path: str
    """``ENTITY/PROJECT/RUN_ID`` as the server named it."""
    url: str
    """The run's page (empty offline)."""


def logged_of(answer: Any, where: str) -> WandbLogged:
    """The helper's ``result.json`` as its record.

    >>> logged_of({"online": True, "path": "me/proj/ab12", "url": "https://wandb.ai/x"}, "w").path
    'me/proj/ab12'
    >>> logged_of({"online": "yes"}, "wandb result.json")
    Traceback (most recent call last):
    runsnap.errors.TrackerError: wandb result.json: online is a string, not true or false
    """
    table = _table(answer, where, "the answer")
    online = table.get("online")
    if online is not None and type(online) is not bool:
        raise _wrong(where, "online", "true or false", online)
    return WandbLogged(error=_text(table, "error", where, "error"), online=bool(online),
                       path=_text(table, "path", where, "path"), url=_text(table, "url", where, "url"))


def summary_of(value: Any, where: str) -> Mapping[str, str]:
    """The summary tags runsnap wrote into a run (W&B's ``config["runsnap"]``), each value
    as text (W&B may give back a number it was sent as text); empty when absent.

    >>> summary_of({"exit_status": 1, "label": "a"}, "w")
    {'exit_status': '1', 'label': 'a'}
    >>> summary_of(["a"], "wandb: proj: run ab12")
    Traceback (most recent call last):
    runsnap.errors.TrackerError: wandb: proj: run ab12: config.runsnap is an array, not an object
    """
    if value is None:
        return {}
    table = _table(value, where, "config.runsnap")
    out: dict[str, str] = {}
    for key, tag in table.items():
        if tag is not None and not isinstance(tag, (str, int, float)):
            raise _wrong(where, f"config.runsnap.{key}", "a string", tag)
        out[str(key)] = "" if tag is None else str(tag)
    return out
