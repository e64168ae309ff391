"""An exception raised while handling another (runsnap/diffing/failingpath.py ``_chain``): the
failing path starts where the first exception was raised, not in the function that wrapped it.
(transformers' ``cached_files`` catches huggingface_hub's ``LocalEntryNotFoundError`` and
raises ``OSError ... from e``; the token the download fetched on its way was "read in the
function that raised" and named with confidence, while the cache folder it did not find the
model under was the cause.)

A real package installed into a real venv, a real program, two real captures."""

from __future__ import annotations

from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.conftest import venv_with_package

LIB = '''
import os

#: where models are kept, read at import (as huggingface_hub's constants.py does)
CACHE = os.environ.get("HUBLIB_CACHE", os.path.expanduser("~/.cache/hublib"))


class NotCached(Exception):
    pass


def _token():
    return os.environ.get("HUBLIB_TOKEN")


def download(name):
    headers = {"authorization": _token()}  # fetched on the way, as any download does
    return _lookup(name, headers)


def _lookup(name, headers):
    path = os.path.join(CACHE, name)
    if not os.path.exists(path):
        raise NotCached(f"{name} is not in the disk cache")
    return path


def load(name):
    try:
        return download(name)
    except NotCached as e:
        mirror = os.environ.get("HUBLIB_MIRROR", "the hub")
        raise OSError(f"could not load {name} from {mirror} or the cache") from e
'''

APP = """
import hublib


def main():
    print(hublib.load("tiny-model"))


main()
"""


def _runs(tmp_path: Path, base_env: dict[str, str], b_env: dict[str, str]) -> runsnap.Report:
    python = venv_with_package(tmp_path, "hublib", LIB)
    app = tmp_path / "app.py"
    app.write_text(APP)
    cached = tmp_path / "cache-ubuntu"
    (cached / "tiny-model").mkdir(parents=True)
    empty = tmp_path / "cache-svc"
    empty.mkdir()
    run([str(python), str(app)], cwd=tmp_path, output=tmp_path / "a.toml", env={
        **base_env, "HUBLIB_CACHE": str(cached), "HUBLIB_TOKEN": "hl_4f9c2e7d1a8b3c6e5f0a"})
    run([str(python), str(app)], cwd=tmp_path, output=tmp_path / "b.toml", env={
        **base_env, "HUBLIB_CACHE": str(empty), **b_env})
    a, b = runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml")
    assert a.records.outcome.exit_status == 0 and b.records.outcome.exit_status == 1
    assert b.records.outcome.earlier_tracebacks  # the NotCached traceback, printed first
    report = runsnap.diff(a, b)
    assert isinstance(report, runsnap.Report)
    return report


def test_a_value_fetched_inside_the_call_that_raised_is_not_the_wrappers_own_read(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    report = _runs(tmp_path, base_env, {})
    token = next(d for d in report.differences if d.key == "HUBLIB_TOKEN")
    # read in download, below the call of load's try: as deep as that call, not in the
    # function that raised OSError
    assert "the function that raised" not in token.reason, token.reason
    assert "NotCached" in token.reason, token.reason
    assert not (report.confidence == "confident" and report.counted[0].key == "HUBLIB_TOKEN"), \
        [(d.key, d.score, d.reason) for d in report.counted[:3]]
    cache = next(d for d in report.differences if d.key == "HUBLIB_CACHE")
    assert cache.evidence_kind == "failing-path", cache.reason


def test_a_value_the_handler_itself_read_is_still_read_in_the_function_that_raised(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    report = _runs(tmp_path, base_env, {"HUBLIB_MIRROR": "https://mirror.internal"})
    mirror = next(d for d in report.differences if d.key == "HUBLIB_MIRROR")
    assert "in load, the function that raised" in mirror.reason, mirror.reason
