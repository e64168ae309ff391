"""``runsnap diff`` through click's CliRunner and as a real ``python -m runsnap`` process;
the three renderers."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from runsnap.cli.app import DIFF_FORMATS
from runsnap.diffing import compare, compare_many
from runsnap.render.diff import FORMATS, RENDERERS, render
from tests.conftest import run_runsnap

FLAG = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
NOISE_A = {"PWD": "/a", "SHLVL": "1", "TERM": "xterm"}
NOISE_B = {"PWD": "/b", "SHLVL": "2", "TERM": "screen"}


@pytest.fixture
def pair(cap, tmp_path):
    """good.toml (flag set), bad.toml (flag unset), same.toml (like good but for noise)."""
    good = cap({**NOISE_A, FLAG: "1"}, label="good").save(tmp_path / "good.toml")
    bad = cap(NOISE_B, label="bad").save(tmp_path / "bad.toml")
    same = cap({**NOISE_B, FLAG: "1"}, label="same").save(tmp_path / "same.toml")
    return str(good.path), str(bad.path), str(same.path)


def test_every_format_has_a_renderer_and_renders_both_kinds(cap):
    assert FORMATS == DIFF_FORMATS == tuple(RENDERERS)
    two = compare(cap({FLAG: "1"}), cap())
    many = compare_many([cap({FLAG: "1"}), cap(), cap()])
    for fmt in FORMATS:
        for report in (two, many):
            text = render(report, fmt)
            assert FLAG in text and text.endswith("\n")


def test_text_report(cli_invoke, pair):
    good, bad, _ = pair
    out = cli_invoke(["diff", good, bad], expect=1).stdout
    lines = out.splitlines()
    assert lines[0] == (f"runsnap diff: 1 difference (3 noise hidden); the only candidate, "
                        f"without evidence from the runs: "
                        f"env {FLAG} (set to 1 in A only)")
    assert lines[1].startswith("  A: good  ") and good in lines[1]
    assert lines[2].startswith("  B: bad  ")
    assert lines[3:9] == [
        "",
        "Most likely causes",
        f"   1. env {FLAG}  set in A only  [86]",
        "        A: 1",
        "        B: (unset)",
        f"        why: SGLANG_* variables switch SGLang server and scheduler behaviour "
        f"({FLAG} is a name they declare)",
    ]
    assert lines[-1] == "3 noise differences hidden (--all shows them): PWD, SHLVL, TERM"
    assert "\x1b[" not in out


def test_all_shows_noise_but_exit_status_ignores_it(cli_invoke, pair):
    good, _, same = pair
    out = cli_invoke(["diff", "--all", good, same], expect=0).stdout
    assert "Noise and ignored (3, not counted)" in out
    assert "SHLVL" in out
    out = cli_invoke(["diff", good, same], expect=0).stdout
    assert out.splitlines()[0] == "runsnap diff: no differences that count (3 noise hidden)"


def test_ignore_option(cli_invoke, pair):
    good, bad, _ = pair
    out = cli_invoke(["diff", "--ignore", "SGLANG_*", good, bad], expect=0).stdout
    assert out.splitlines()[0] == "runsnap diff: no differences that count (4 noise hidden)"


def test_json_report(cli_invoke, pair):
    good, bad, _ = pair
    doc = json.loads(cli_invoke(["diff", "--format", "json", good, bad], expect=1).stdout)
    assert doc["format"] == "runsnap-diff/1"
    assert doc["a"]["path"] == good and doc["a"]["label"] == "good"
    assert set(doc["a"]) == {"path", "id", "label", "time", "host", "rank", "local_rank", "job"}
    assert doc["hidden"] == 3 and doc["count"] == 1 and doc["differ"] is True
    assert doc["differences"] == [{
        "section": "env", "key": FLAG, "change": "removed", "a": "1", "b": None, "score": 86,
        "reason": "SGLANG_* variables switch SGLang server and scheduler behaviour "
                  f"({FLAG} is a name they declare)",
        "evidence": [], "hidden": False, "evidence_kind": "name", "related": [],
        "path": ["env", FLAG], "corroborated": False, "quoted": False}]
    full = json.loads(cli_invoke(["diff", "--format", "json", "--all", good, bad],
                                 expect=1).stdout)
    assert [d["hidden"] for d in full["differences"]] == [False, True, True, True]


def test_format_from_environment(cli_invoke, pair, monkeypatch):
    good, bad, _ = pair
    monkeypatch.setenv("RUNSNAP_FORMAT", "json")
    assert json.loads(cli_invoke(["diff", good, bad], expect=1).stdout)["count"] == 1


def test_markdown_report(cli_invoke, pair, cap, tmp_path, base_env):
    good, bad, _ = pair
    md = cli_invoke(["diff", "--format", "markdown", good, bad], expect=1).stdout
    assert md.startswith("### runsnap diff: 1 difference (3 noise hidden)")
    assert f"| 1 | env | `{FLAG}` | removed | `1` | *(unset)* | 86 |" in md
    assert "<details><summary>3 noise differences hidden</summary>" in md
    # Long reports fold the tail and the evidence into <details>.
    many_a = cap({f"SGLANG_OPT_{i}": "1" for i in range(20)}
                 | {"PATH": "/x/bin:" + base_env["PATH"]})
    many_b = cap({f"SGLANG_OPT_{i}": "2" for i in range(20)}
                 | {"PATH": base_env["PATH"] + ":/x/bin"})
    md = render(compare(many_a, many_b), "markdown")
    assert "<details><summary>6 more differences</summary>" in md
    assert "<details><summary>Evidence" in md and "moved: /x/bin" in md


def test_colour_switches(cli_invoke, pair, monkeypatch):
    good, bad, _ = pair
    assert "\x1b[1m" in cli_invoke(["diff", "--color", good, bad], expect=1).stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in cli_invoke(["diff", good, bad], expect=1).stdout
    assert "\x1b[" in cli_invoke(["diff", "--color", good, bad], expect=1).stdout
    assert "\x1b[" not in cli_invoke(["diff", "--no-color", good, bad], expect=1).stdout


def test_output_file(cli_invoke, pair, tmp_path):
    good, bad, _ = pair
    target = tmp_path / "report.md"
    result = cli_invoke(["diff", "--format", "markdown", "-o", str(target), good, bad], expect=1)
    assert result.stdout == ""
    assert target.read_text().startswith("### runsnap diff: 1 difference")


def test_newest_two_in_dir(cli_invoke, cap, tmp_path, monkeypatch):
    folder = tmp_path / "snaps"
    cap({FLAG: "1"}, label="old").save(folder / "1-old.toml")
    os.utime(folder / "1-old.toml", ns=(1, 1_000_000_000))
    cap({}, label="new").save(folder / "2-new.toml")
    monkeypatch.setenv("RUNSNAP_DIR", str(folder))
    out = cli_invoke(["diff"], expect=1).stdout
    assert "A: old" in out and "B: new" in out and FLAG in out
    monkeypatch.setenv("RUNSNAP_DIR", str(tmp_path / "none"))
    result = cli_invoke(["diff"], expect=2)
    assert "no such directory" in result.stderr


def test_n_way_cli(cli_invoke, cap, tmp_path):
    paths = [str(cap({"NCCL_IB_HCA": "mlx5_0"} if i != 2 else {"NCCL_IB_HCA": "mlx5_9"},
                     label=f"node{i}").save(tmp_path / f"n{i}.toml").path) for i in range(3)]
    out = cli_invoke(["diff", *paths], expect=1).stdout
    assert out.splitlines()[0] == ("runsnap diff: 3 snapshots, 1 key not the same everywhere; "
                                   "odd one out: node2 (alone in 1 key)")
    assert "        node2 has mlx5_9\n        the other 2 have mlx5_0\n" in out


def test_bad_input_is_one_line_and_status_2(cli_invoke, tmp_path, pair, monkeypatch):
    good, _, _ = pair
    missing = tmp_path / "missing.toml"
    result = cli_invoke(["diff", good, str(missing)], expect=2)
    assert result.stderr == f"runsnap: {missing}: no such file\n"
    broken = tmp_path / "broken.toml"
    broken.write_text("schema = 1\n[meta\n")
    result = cli_invoke(["diff", good, str(broken)], expect=2)
    assert result.stderr.startswith(f"runsnap: {broken}: not valid TOML")
    assert len(result.stderr.splitlines()) == 1
    (tmp_path / ".runsnap.toml").write_text("[diff]\nignore = 3\n")
    monkeypatch.chdir(tmp_path)
    result = cli_invoke(["diff", good, good], expect=2)
    assert "'ignore' must be a list of strings" in result.stderr


def run(*args: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return run_runsnap("diff", *args, cwd=cwd, timeout=120)


def test_real_process_exit_statuses(pair, tmp_path):
    good, bad, same = pair
    differ = run(good, bad, cwd=str(tmp_path))
    assert differ.returncode == 1 and differ.stdout.startswith("runsnap diff: 1 difference")
    assert differ.stderr == ""
    equal = run(good, same, cwd=str(tmp_path))
    assert equal.returncode == 0 and "no differences that count" in equal.stdout
    error = run(good, str(tmp_path / "nope.toml"), cwd=str(tmp_path))
    assert error.returncode == 2 and error.stdout == ""
    assert error.stderr == f"runsnap: {tmp_path / 'nope.toml'}: no such file\n"
    usage = run("--format", "yaml", good, bad, cwd=str(tmp_path))
    assert usage.returncode == 2 and "Invalid value for '--format'" in usage.stderr
