"""Locale variables (runsnap/diffing/ambient.py ``locale_of``, ``locale_reads``): every process
reads them at start-up (the C library's ``setlocale(LC_ALL, "")``); they decide the locale each
category resolves to, by POSIX's order ``LC_ALL``, ``LC_<category>``, ``LANG``. Where both runs
resolved the same locale they decided nothing; where they resolved another, they stay a
candidate, below the program's own inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import runsnap
from runsnap.capturing import run

#: Fails on the option, and uses the locale's collation on the way (as sorting code does).
APP = """
import argparse, locale
locale.setlocale(locale.LC_ALL, "")
p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=8)
words = sorted(["b", "a"], key=locale.strxfrm)
if p.parse_args().batch > 64:
    raise SystemExit(3)
"""


def _two(tmp_path: Path, base_env: dict[str, str], a: dict[str, str], b: dict[str, str],
         batch: str = "8") -> runsnap.Report:
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = {k: v for k, v in base_env.items() if not k.startswith(("LC_", "LANG"))}
    run([sys.executable, str(app)], env={**env, **a}, cwd=tmp_path, output=tmp_path / "a.toml")
    run([sys.executable, str(app), "--batch", batch], env={**env, **b}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    return runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))


def test_another_locale_ranks_below_the_option(tmp_path: Path,
                                                base_env: dict[str, str]) -> None:
    """C and C.UTF-8: two locales every glibc host has (C.UTF-8 built in since 2.35). Python
    keeps C's ASCII only where ``LC_ALL`` stops its coercion and ``PYTHONUTF8=0`` its UTF-8
    mode, as this shell does."""
    report = _two(tmp_path, base_env, {"LC_ALL": "C", "PYTHONUTF8": "0"},
                  {"LC_ALL": "C.UTF-8", "PYTHONUTF8": "0"}, batch="128")
    counted = [d for d in report.differences if not d.hidden and d.section != "outcome"]
    assert counted[0].key == "--batch", [(d.key, d.score) for d in counted]
    lang = next(d for d in counted if d.key == "LC_ALL")
    assert lang.score < counted[0].score and "other locales" in lang.reason, lang.reason
    # listed, but not a candidate beside the option the program was launched with
    assert report.to_dict()["candidates"] == ["command --batch"], report.to_dict()["candidates"]
    assert report.to_dict()["confidence"] == "undecided"


def test_the_same_locale_written_otherwise_decided_nothing(tmp_path: Path,
                                                          base_env: dict[str, str]) -> None:
    report = _two(tmp_path, base_env, {"LANG": "C.UTF-8"},
                  {"LANG": "C.UTF-8", "LC_ALL": "C.utf8"}, batch="128")
    lc_all = next(d for d in report.differences if d.key == "LC_ALL")
    assert lc_all.evidence_kind == "incidental" and "same locale" in lc_all.reason, lc_all
    assert report.differences[0].key == "--batch"


def test_a_locale_that_encodes_and_writes_numbers_alike_decided_nothing(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """en_US.UTF-8 and C.UTF-8: both UTF-8, both write ``1.5``; only collation and message
    catalogues may differ, which the runs do not tie to anything: incidental, and the option
    is the only input the program took in. (Whether en_US.UTF-8 is installed here does not
    matter: the program never asks for it, and the diff reads the names.)"""
    app = tmp_path / "app.py"
    app.write_text("import argparse\np = argparse.ArgumentParser()\n"
                   "p.add_argument('--batch', type=int, default=8)\n"
                   "raise SystemExit(3 if p.parse_args().batch > 64 else 0)\n")
    env = {k: v for k, v in base_env.items() if not k.startswith(("LC_", "LANG"))}
    run([sys.executable, str(app)], env={**env, "LANG": "en_US.UTF-8"}, cwd=tmp_path,
        output=tmp_path / "a.toml")
    run([sys.executable, str(app), "--batch", "128"],
        env={**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    for name in ("LANG", "LC_ALL"):
        d = next(d for d in report.differences if d.key == name)
        assert d.evidence_kind == "incidental" and "same encoding and number format" in \
            d.reason, d
    assert report.to_dict()["candidates"] == ["command --batch"]
    assert report.to_dict()["confidence"] == "confident", report.verdict()


def test_a_shell_without_any_locale_variable_decided_nothing_for_python(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """A cron job's environment sets no ``LANG``: its processes resolve ``C``. Python coerces
    that ``LC_CTYPE`` to ``C.UTF-8`` (PEP 538), and ``C`` writes numbers as ``C.UTF-8`` does,
    so against a shell with ``LANG=C.UTF-8`` the locale decided nothing, and the option is the
    only input the program took in."""
    report = _two(tmp_path, base_env, {"LANG": "C.UTF-8"}, {}, batch="128")
    lang = next(d for d in report.differences if d.key == "LANG")
    assert lang.evidence_kind == "incidental" and "same encoding and number format" in \
        lang.reason, lang
    assert report.to_dict()["candidates"] == ["command --batch"]
    assert report.to_dict()["confidence"] == "confident", report.verdict()
