"""``runsnap.cli``: capture's own fast parser agrees with click, and a capture never imports click."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runsnap.capturing.options import CAPTURE_OPTIONS
from runsnap.cli.app import capture as click_capture
from runsnap.cli.fast import parse_capture
from tests.conftest import run_runsnap

FLAGS = sorted({f for o in CAPTURE_OPTIONS for f in o.flags})


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    base = tmp_path_factory.mktemp("places")
    (base / "a-file").write_text("x")
    (base / "a-dir").mkdir()
    return str(base / "a-file"), str(base / "a-dir")


def _click_params(args: list[str]) -> dict[str, object] | None:
    try:
        ctx = click_capture.make_context("capture", list(args))
    except click.ClickException:
        return None
    return dict(ctx.params)


def _tokens(places: tuple[str, str]) -> st.SearchStrategy[str]:
    values = ["", "x", "-x", "--", "5", "-3", "0", "1.5", "nan", " 7", "1_000", "out.toml",
              "python", "-c", "pass", *places]
    flags = [*FLAGS, "-h", "--help", "--bogus", "-ox", "--exec=1", "--no-run=yes"]
    attached = [f"{f}={v}" for f in FLAGS if f.startswith("--") for v in ("", "7", "-1", places[1])]
    return st.sampled_from(flags + values + attached)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_command_line_the_fast_parser_takes_gets_what_click_gives(
    data: st.DataObject, places: tuple[str, str]
) -> None:
    args = data.draw(st.lists(_tokens(places), max_size=8), label="args")
    runsnap_dir = data.draw(st.sampled_from([None, "", "snaps", *places]), label="RUNSNAP_DIR")
    env = {k: v for k, v in os.environ.items() if k != "RUNSNAP_DIR"}
    if runsnap_dir is not None:
        env["RUNSNAP_DIR"] = runsnap_dir
    with mock.patch.dict(os.environ, env, clear=True):
        fast = parse_capture(args)
        if fast is not None:
            assert fast == _click_params(args), args


@pytest.mark.parametrize("args", [
    [],
    ["--no-run"],
    ["-o", "out.toml", "--", "python", "-c", "pass"],
    ["--label=good", "--repo", ".", "--repo", "..", "--model", "m", "--", "python", "-V"],
    ["--max-diff-bytes", "0", "--tail-lines=5", "--kill-after", "2.5", "--exec", "--", "true"],
    ["--pid", "1", "--python", "/usr/bin/python3", "--dir", "snaps"],
    ["--", "--label", "x"],  # after --, everything is the command's
])
def test_the_usual_command_lines_take_the_fast_path(args: list[str]) -> None:
    fast = parse_capture(args, environ={})
    assert fast is not None
    with mock.patch.dict(os.environ, {}, clear=False):
        os.environ.pop("RUNSNAP_DIR", None)
        assert fast == _click_params(args)


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["python", "-c", "pass"], ["--labl", "x"], ["--label"],
    ["--tail-lines", "-1"], ["--pid", "abc"], ["--exec=1"],
])
def test_anything_doubtful_is_left_to_click(args: list[str]) -> None:
    assert parse_capture(args, environ={}) is None


def test_an_output_that_is_a_directory_is_left_to_click(tmp_path: Path) -> None:
    assert parse_capture(["-o", str(tmp_path)], environ={}) is None
    assert parse_capture([], environ={"RUNSNAP_DIR": str(tmp_path)}) is not None
    (tmp_path / "f").write_text("")
    assert parse_capture([], environ={"RUNSNAP_DIR": str(tmp_path / "f")}) is None


_WATCH = """
import sys
sys.argv = ["runsnap", *sys.argv[1:]]
import os
from runsnap.cli import main
_exit = os._exit  # a capture run as the script leaves through os._exit: report before it

def report():
    sys.stderr.write("click imported: %s\\n" % ("click" in sys.modules))
    sys.stderr.flush()

os._exit = lambda status: (report(), _exit(status))
try:
    main()
finally:
    report()
"""


@pytest.mark.parametrize("extra", [["--no-run"], ["--", sys.executable, "-c", "pass"]])
def test_a_capture_never_imports_click(tmp_path: Path, repo: Path, extra: list[str]) -> None:
    out = tmp_path / "s.toml"
    res = subprocess.run([sys.executable, "-c", _WATCH, "capture", "-o", str(out), *extra],
                         cwd=repo, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "click imported: False" in res.stderr
    assert out.read_text().rstrip().endswith("# end of runsnap snapshot")


def test_help_and_mistakes_still_come_from_click(tmp_path: Path) -> None:
    res = run_runsnap("capture", "--help", cwd=tmp_path)
    assert res.returncode == 0
    for text in ("--max-diff-bytes", "RUNSNAP_DIR", "default: 1048576", "--inherit-tty"):
        assert text in res.stdout
    bad = run_runsnap("capture", "--tail-lines", "-1", "--no-run", cwd=tmp_path)
    assert bad.returncode == 2
    assert "--tail-lines" in bad.stderr and "Traceback" not in bad.stderr


def test_a_closed_stdout_is_no_traceback(tmp_path: Path) -> None:
    script = (f"'{sys.executable}' -m runsnap capture -o '{tmp_path / 's.toml'}' --no-run"
              " | (exec 0<&-; sleep 0.1)")
    res = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert "Traceback" not in res.stderr
    assert (tmp_path / "s.toml").exists()


@pytest.mark.parametrize("args", [["--timeout", "nan"], ["--kill-after=nan"],
                                  ["--track-timeout", "NaN"]])
def test_a_number_of_seconds_that_is_not_a_number_is_refused(args: list[str]) -> None:
    """``float("nan")`` passes every range check (each comparison is false): the fast parser
    leaves it to click, which refuses it (found by the property test above, which compared
    two NaNs)."""
    assert parse_capture(args) is None
    assert _click_params(args) is None
