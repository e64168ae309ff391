"""Every launch test runs in its own scratch directory with its own fingerprint key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch.launch_helpers import reap_started


@pytest.fixture(autouse=True)
def no_orphans() -> Iterator[None]:
    """A test that fails half-way leaves no runsnap waiting for a child that waits for a file."""
    yield
    reap_started()


@pytest.fixture(autouse=True)
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run every test in its own directory (not a git repo) with its own fingerprint key."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUNSNAP_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.delenv("RUNSNAP_DIR", raising=False)
    return tmp_path
