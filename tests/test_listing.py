"""Browsing snapshots: ``runsnap ls``, naming snapshots ``@N`` / ``@label`` wherever a path is
taken, ``show`` with no argument, ``show --format``, ``show --section``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import runsnap

Invoke = Callable[..., Any]


@pytest.fixture
def snaps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three real runs in ./.runsnap, oldest first: good (exit 0), bad (exit 3), a context."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUNSNAP_DIR", raising=False)
    env = {**os.environ, "KNOB": "1"}
    runsnap.run([sys.executable, "-c", "print('ok')"], env=env, label="good")
    runsnap.run([sys.executable, "-c", "raise SystemExit(3)"], env={**env, "KNOB": "2"},
                label="bad")
    runsnap.capture([sys.executable, "serve.py", "--tp", "8"], env=env, label="ctx",
                    output=tmp_path / ".runsnap" / "zzz-written-first-by-name.toml")
    return tmp_path / ".runsnap"


def test_ls_lists_newest_first_with_time_label_command_exit_and_host(snaps: Path,
                                                                     cli_invoke: Invoke) -> None:
    out = cli_invoke(["ls"]).stdout.splitlines()
    assert out[0].split()[:6] == ["#", "captured", "label", "exit", "host", "command"]
    rows = out[1:]
    assert [r.split()[0] for r in rows] == ["@1", "@2", "@3"]
    assert [r.split()[2] for r in rows] == ["ctx", "bad", "good"]
    assert rows[1].split()[3] == "3" and rows[2].split()[3] == "0" and rows[0].split()[3] == "-"
    assert "serve.py --tp 8" in rows[0]
    host = runsnap.load(next(snaps.glob("*good.toml"))).meta["host"]
    assert all(host in r for r in rows)


def test_ls_json_and_dir(snaps: Path, tmp_path: Path, cli_invoke: Invoke,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path.parent)
    data = json.loads(cli_invoke(["ls", "--dir", str(snaps), "--format", "json"]).stdout)
    assert [d["ref"] for d in data] == ["@1", "@2", "@3"]
    assert [d["label"] for d in data] == ["ctx", "bad", "good"]
    assert data[1]["exit_status"] == 3 and data[0]["exit_status"] is None
    assert data[2]["command"] == [sys.executable, "-c", "print('ok')"]
    assert all(Path(d["path"]).is_file() for d in data)
    assert {"captured_at", "host", "id"} <= set(data[0])


def test_ls_of_an_empty_or_missing_folder(tmp_path: Path, cli_invoke: Invoke) -> None:
    assert "no snapshots" in cli_invoke(["ls", "--dir", str(tmp_path)]).stdout
    result = cli_invoke(["ls", "--dir", str(tmp_path / "none")], expect=2)
    assert result.output.count("\n") == 1


def test_references_by_position_and_label_wherever_a_path_is_taken(snaps: Path,
                                                                   cli_invoke: Invoke) -> None:
    by_ref = cli_invoke(["diff", "@good", "@bad", "--format", "json"], expect=1).stdout
    by_pos = cli_invoke(["diff", "@3", "@2", "--format", "json"], expect=1).stdout
    paths = [str(p) for p in sorted(snaps.glob("*.toml"))]
    good = next(p for p in paths if p.endswith("-good.toml"))
    bad = next(p for p in paths if p.endswith("-bad.toml"))
    by_path = cli_invoke(["diff", good, bad, "--format", "json"], expect=1).stdout
    assert json.loads(by_ref)["differences"] == json.loads(by_path)["differences"]
    assert json.loads(by_pos)["differences"] == json.loads(by_path)["differences"]
    assert "[bad]" in cli_invoke(["show", "@bad"]).stdout
    assert runsnap.load("@good").label == "good"  # the library takes them too
    for wrong in ("@9", "@nosuch", "@0"):
        result = cli_invoke(["show", wrong], expect=2)
        assert result.output.count("\n") == 1 and wrong in result.output


def test_show_without_argument_is_the_newest(snaps: Path, cli_invoke: Invoke) -> None:
    assert "[ctx]" in cli_invoke(["show"]).stdout.splitlines()[0]


def test_show_formats(snaps: Path, cli_invoke: Invoke) -> None:
    data = json.loads(cli_invoke(["show", "@bad", "--format", "json"]).stdout)
    assert data["meta"]["label"] == "bad" and data["outcome"]["exit_status"] == 3
    md = cli_invoke(["show", "@bad", "--format", "markdown"]).stdout
    assert md.startswith("### runsnap snapshot") and "<details>" in md


def test_show_section_packages_lists_the_distributions(snaps: Path, cli_invoke: Invoke) -> None:
    snap = runsnap.load("@good")
    dists = snap.sections["packages"]["distributions"]
    out = cli_invoke(["show", "@good", "--section", "packages"]).stdout
    for name, d in dists.items():
        assert any(line.split()[:2] == [name, d["version"]] for line in out.splitlines()), name
    env = cli_invoke(["show", "@good", "--section", "env"]).stdout
    assert "KNOB=1" in env.splitlines()
    assert cli_invoke(["show", "@good", "--section", "nosuch"], expect=2).output.count("\n") == 1


def test_every_command_that_takes_a_snapshot_takes_at_n_and_at_label(snaps: Path) -> None:
    """``@N`` / ``@LABEL`` wherever a snapshot is taken, as ``ls --help`` promises: each
    command as a real process, resolving through the one resolver
    (:func:`runsnap.snapshot.store.resolve`)."""
    from tests.conftest import run_runsnap

    env = {**os.environ, "COLUMNS": "100"}
    cwd = snaps.parent
    commands = [
        (("show", "@good"), 0), (("check", "@2"), None), (("diff", "@good", "@bad"), 1),
        (("report", "@bad", "--format", "text"), 0), (("scrub", "@good"), 0),
        (("bisect", "@good", "@bad", "--dry-run", "--force"), None), (("replay", "@good"), 0),
    ]
    for args, status in commands:
        r = run_runsnap(*args, cwd=cwd, env=env)
        assert "no such file" not in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert r.returncode != 2, (args, r.stderr)
        if status is not None:
            assert r.returncode == status, (args, r.returncode, r.stderr)
    r = run_runsnap("replay", "@nosuch", cwd=cwd, env=env)
    assert r.returncode == 2 and "no snapshot labelled 'nosuch'" in r.stderr, r.stderr
    r = run_runsnap("bisect", "@9", "@1", cwd=cwd, env=env)
    assert r.returncode == 2 and "holds 4 snapshots" in r.stderr  # the replay added one, r.stderr


def test_diff_keeps_to_the_sections_asked_for(tmp_path: Path) -> None:
    """``diff --section env,packages`` lists only those sections; ``--no-runtime`` leaves out
    what each run read and imported; an unknown section is one line and exit 2."""
    from tests.conftest import run_runsnap

    cwd = tmp_path
    env = {**os.environ, "COLUMNS": "100"}
    code = "import os, sys; sys.exit(int(os.environ.get('KNOB', '0')))"
    for label, extra in (("good", {}), ("bad", {"KNOB": "3"})):
        r = run_runsnap("capture", "--label", label, "--", sys.executable, "-c", code,
                        cwd=cwd, env={**env, **extra})
        assert r.returncode == (3 if extra else 0), r.stderr

    def sections(*args: str) -> set[str]:
        r = run_runsnap("diff", "@good", "@bad", "--format", "json", "--all", *args,
                        cwd=cwd, env=env)
        assert r.returncode in (0, 1), r.stderr
        out: set[str] = set()
        for d in json.loads(r.stdout)["differences"]:
            out |= {d["section"], *(x["section"] for x in d.get("related") or [])}
        return out

    everything = sections()
    assert {"env", "outcome", "runtime"} <= everything, everything
    assert sections("--section", "env,packages") <= {"env", "packages"}
    assert "env" in sections("--section", "env", "--section", "packages")
    assert sections("--section", "outcome") == {"outcome"}
    assert "runtime" not in sections("--no-runtime")
    assert "env" in sections("--no-runtime")
    r = run_runsnap("diff", "@good", "@bad", "--section", "envv", cwd=cwd, env=env)
    assert r.returncode == 2 and "unknown section 'envv'" in r.stderr, r.stderr
    text = run_runsnap("diff", "@good", "@bad", "--section", "env", cwd=cwd, env=env).stdout
    assert "KNOB" in text and "exit_status" not in text, text


def test_show_section_prints_toml_as_the_snapshot_holds_it(snaps: Path) -> None:
    import tomllib

    from tests.conftest import run_runsnap

    cwd = snaps.parent
    for section in ("outcome", "command", "system", "meta"):
        r = run_runsnap("show", "@bad", "--section", section, cwd=cwd)
        assert r.returncode == 0, r.stderr
        doc = tomllib.loads(r.stdout)
        assert "{'" not in r.stdout and "True" not in r.stdout, r.stdout
        if section != "meta":
            assert doc[section] == runsnap.load("@bad")[section] or section == "system"
    assert tomllib.loads(run_runsnap("show", "@bad", "--section", "outcome",
                                     cwd=cwd).stdout)["outcome"]["exit_status"] == 3
