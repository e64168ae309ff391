"""Everything the command line does is reachable from ``import runsnap``, without private
modules: capture, run, load (also ``@1``/``@label``), diff, ls, and rendering any report as
text, Markdown or JSON, giving what the CLI prints."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

import runsnap
from tests.conftest import run_runsnap


def test_every_public_name_resolves_from_a_public_module() -> None:
    for name in runsnap.__all__:
        value = getattr(runsnap, name)
        module = getattr(value, "__module__", None) or "runsnap"
        if isinstance(value, (str, int, tuple)):
            continue
        assert not any(part.startswith("_") for part in module.split(".")), (name, module)
        assert value.__doc__, name
    for name in ("capture", "run", "capture_pid", "load", "diff", "list_snapshots",
                 "render_text", "render_markdown", "render_json", "FORMATS"):
        assert name in runsnap.__all__, name


@pytest.mark.slow
def test_the_library_gives_what_the_cli_prints(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUNSNAP_DIR", raising=False)
    env = {**os.environ, "RUNSNAP_KEY_FILE": os.environ["RUNSNAP_KEY_FILE"]}
    env.pop("COLUMNS", None)
    for label, code in (("good", "print('ok')"), ("bad", "raise SystemExit(3)")):
        record = runsnap.run([sys.executable, "-c", code], label=label)
        assert record.exit_status == (0 if label == "good" else 3)
    report = runsnap.diff("@good", "@bad")
    assert bool(report)
    for fmt, render in (("text", runsnap.render_text), ("markdown", runsnap.render_markdown),
                        ("json", runsnap.render_json)):
        assert fmt in runsnap.FORMATS
        cli = run_runsnap("diff", "@good", "@bad", "--format", fmt, cwd=tmp_path, env=env)
        assert cli.returncode == 1
        assert _same(cli.stdout, render(report)), fmt
        shown = run_runsnap("show", "@bad", "--format", fmt, cwd=tmp_path, env=env)
        assert shown.stdout == render(runsnap.load("@bad")), fmt
    listed = run_runsnap("ls", "--format", "json", cwd=tmp_path, env=env).stdout
    assert listed == runsnap.render_json(runsnap.list_snapshots())
    assert run_runsnap("ls", cwd=tmp_path, env=env).stdout == runsnap.render_text(
        runsnap.list_snapshots())
    with pytest.raises(runsnap.RunsnapError):
        runsnap.render_text(object())


def _same(cli: str, lib: str) -> bool:
    """Equal but for the JSON report's own paths (the CLI resolved @refs the same way)."""
    return cli == lib


def test_no_private_module_is_needed_for_the_cli_s_work() -> None:
    face = Path(importlib.import_module("runsnap.cli").__file__ or "").parent
    for module in sorted(face.glob("*.py")):
        assert "._" not in "".join(line for line in module.read_text().splitlines()
                                   if line.lstrip().startswith(("from runsnap", "import runsnap"))), module


def test_dir_lists_the_public_names_in_a_fresh_interpreter() -> None:
    """``dir(runsnap)`` is what IPython and editors complete from; lazy names count too."""
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", "import runsnap, json; print(json.dumps(dir(runsnap)))"],
        capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]},
        cwd=Path(runsnap.__file__).parents[1])
    import json

    listed = set(json.loads(out.stdout))
    assert set(runsnap.__all__) <= listed, set(runsnap.__all__) - listed
