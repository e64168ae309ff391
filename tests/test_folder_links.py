"""Folder walks stay in the folder they were given (issue 37, class 4): real snapshots, real
symbolic links (to ``/``, a loop, a sibling project's snapshots) and a real ``runsnap``
process for ``ls``, ``gc``, ``@N`` and ``diff DIR/``."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import run_runsnap


def _env() -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("RUNSNAP_DIR", None)
    return env




@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``proj/.runsnap`` (two snapshots) beside ``other/.runsnap`` (two), and in ``proj``'s
    folder a link to ``/``, a loop to itself, one to its parent, and links to the other
    project's folder and to one of its files."""
    base = tmp_path_factory.mktemp("links")
    r = run_runsnap("capture", "-o", "one.toml", "--", sys.executable, "-c", "pass",
                    cwd=base, env=_env())
    assert r.returncode == 0, r.stderr
    for project in ("proj", "other"):
        (base / project / ".runsnap").mkdir(parents=True)
        for i in (1, 2):
            shutil.copy(base / "one.toml", base / project / ".runsnap" / f"{project}-{i}.toml")
    mine = base / "proj" / ".runsnap"
    (mine / "root").symlink_to("/")
    (mine / "loop").symlink_to(".")
    (mine / "up").symlink_to("..")
    (mine / "theirs").symlink_to("../../other/.runsnap")
    (mine / "theirs-1.toml").symlink_to("../../other/.runsnap/other-1.toml")
    return base


def test_ls_and_at_n_list_only_the_folder_and_say_what_they_left(projects: Path) -> None:
    proj = projects / "proj"
    r = run_runsnap("ls", "--format", "json", cwd=proj, env=_env())
    assert r.returncode == 0, r.stderr
    listed = sorted(os.path.basename(e["path"]) for e in json.loads(r.stdout))
    assert listed == ["proj-1.toml", "proj-2.toml"], r.stdout
    said = [line for line in r.stderr.splitlines() if "not followed" in line]
    assert said == [f"runsnap: .runsnap/theirs-1.toml -> "
                    f"{projects.resolve()}/other/.runsnap/other-1.toml: link out of .runsnap, "
                    f"not followed"], r.stderr
    r = run_runsnap("show", "@3", cwd=proj, env=_env())
    assert r.returncode == 2 and "holds 2 snapshots" in r.stderr, r.stderr


def test_diff_of_the_folder_walks_it_alone(projects: Path) -> None:
    proj = projects / "proj"
    r = run_runsnap("diff", ".runsnap/", "--format", "json", cwd=proj, env=_env(), timeout=60)
    assert r.returncode in (0, 1), r.stderr
    assert "proj-1.toml" in r.stdout and "proj-2.toml" in r.stdout and "other-" not in r.stdout
    said = [line for line in r.stderr.splitlines() if "not followed" in line]
    assert len(said) == 1, r.stderr
    assert said[0].startswith("runsnap: .runsnap/") and "and 3 more: links out of .runsnap/" \
        in said[0], said  # the root, the parent, the other project's folder and file


def test_gc_removes_nothing_through_a_link(projects: Path, tmp_path: Path) -> None:
    other = sorted((projects / "other" / ".runsnap").glob("*.toml"))
    r = run_runsnap("gc", "--keep", "0", "--dry-run", cwd=projects / "proj", env=_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("would remove") == 2 and "other-" not in r.stdout, r.stdout
    assert sorted((projects / "other" / ".runsnap").glob("*.toml")) == other


@pytest.mark.parametrize("target", ["/", ".", ".."])
def test_a_folder_that_links_to_what_holds_it_is_refused(projects: Path, tmp_path: Path,
                                                         target: str) -> None:
    (tmp_path / ".runsnap").symlink_to(target)
    for args in (["diff", ".runsnap/"], ["ls"], ["gc", "--keep", "0"], ["diff", "@1", "@2"]):
        r = run_runsnap(*args, cwd=tmp_path, env=_env(), timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and "which holds the link itself: not followed" \
            in r.stderr, (args, r.stderr)


def test_a_folder_named_through_a_link_elsewhere_is_followed(projects: Path,
                                                             tmp_path: Path) -> None:
    (tmp_path / ".runsnap").symlink_to(projects / "other" / ".runsnap")
    r = run_runsnap("ls", "--format", "json", cwd=tmp_path, env=_env())
    assert r.returncode == 0, r.stderr
    listed = sorted(os.path.basename(e["path"]) for e in json.loads(r.stdout))
    assert listed == ["other-1.toml", "other-2.toml"], r.stdout
    assert "not followed" not in r.stderr
