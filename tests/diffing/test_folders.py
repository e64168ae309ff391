"""A folder variable with what one run found under it (runsnap/diffing/folders.py): two real
traced launches of a program that reads its defaults from ``~/.config/fit/defaults.ini`` (as
jsonargparse, pip and git read a user's defaults from their home) in two shells whose HOME
differs, one of which holds such a file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.diffing.conftest import write_script

FIT = """
    import configparser, os, sys

    defaults = configparser.ConfigParser()
    defaults.read(os.path.expanduser("~/.config/fit/defaults.ini"))
    options = dict(defaults["fit"]) if defaults.has_section("fit") else {}
    unknown = sorted(set(options) - {"epochs", "scheduler"})
    if unknown:
        sys.exit(f"error: Option '{unknown[0]}' is not accepted")
    print("epochs", options.get("epochs", "80"))
    """


def _launches(tmp_path: Path, base_env: dict[str, str], defaults: str
              ) -> tuple[list[Any], dict[str, Path], Path]:
    """Two traced launches of FIT, each with a home of its own; B's holds ``defaults``."""
    app = write_script(tmp_path, "fit.py", FIT)
    homes = {"a": tmp_path / "home-a", "b": tmp_path / "home-b"}
    for home in homes.values():
        home.mkdir()
    conf = homes["b"] / ".config" / "fit" / "defaults.ini"
    conf.parent.mkdir(parents=True)
    conf.write_text(defaults)
    snaps = [run([sys.executable, str(app)], env={**base_env, "HOME": str(home)}, cwd=tmp_path,
                 output=tmp_path / f"{name}.toml").snapshot for name, home in homes.items()]
    return snaps, homes, conf


def test_a_file_one_run_found_under_its_home_goes_under_home(tmp_path: Path,
                                                             base_env: dict[str, str]) -> None:
    """B's home holds defaults.ini with an option renamed since: B alone opened it. The file
    is no consequence folded away: it is what B's HOME brought in, shown under HOME."""
    snaps, homes, conf = _launches(tmp_path, base_env, "[fit]\nepochs = 80\nlr_schedule = cosine\n")
    assert snaps[1]["outcome"]["exit_status"] == 1
    report = compare(*snaps)
    home = next(d for d in report.counted if d.key == "HOME")
    # A looked for its own (configparser skips a missing file): that one goes with it too
    files = {r.key for r in home.related if r.key.startswith("file ")}
    assert files == {f"file {conf}", f"file {homes['a'] / '.config/fit/defaults.ini'}"}, files
    assert report.counted[0].key == "HOME", report.verdict()


def test_the_key_the_error_quotes_ties_the_file_and_its_home_to_the_failure(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """The same two launches: B's error quotes ``lr_schedule``, a key of the defaults file only
    B opened (``[runtime.data_files] keys``: names, never values). What the file brought in
    reached the code that raised, and HOME, under which it lies, with it: confident on HOME,
    the file shown under it."""
    snaps, _, conf = _launches(tmp_path, base_env, "[fit]\nepochs = 80\nlr_schedule = cosine\n"
                               "[hub]\ntoken = hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345\n")
    keys = snaps[1]["runtime"]["data_files"][str(conf)]["keys"]
    assert keys == ["epochs", "fit", "hub", "lr_schedule", "token"], keys
    entry = str(snaps[1]["runtime"]["data_files"][str(conf)])
    assert "cosine" not in entry and "hf_a" not in entry, entry  # names only, never values
    report = compare(*snaps)
    home = report.counted[0]
    assert home.key == "HOME" and home.evidence_kind == "failing-path", (home.evidence_kind, home.reason)
    assert "quotes lr_schedule, a key only B's copy of the file holds" in home.reason, home.reason
    assert report.confidence == "confident", report.verdict()
