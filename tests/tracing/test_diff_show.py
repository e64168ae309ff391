"""``diff`` compares ``[runtime]`` like any section; ``show`` presents what was read."""

from __future__ import annotations

from pathlib import Path

from runsnap.diffing import compare
from runsnap.render.show import render_summary
from tests.tracing.conftest import child_env

PROGRAM = """
import os

def knob():
    return os.environ.get("APP_KNOB", "default")

print(knob())
if os.environ.get("APP_MODE") == "fast":
    os.getenv("FAST_ONLY")
"""


def _flat(diffs):
    """Every difference, the consequences grouped under a cause (``related``) too."""
    for d in diffs:
        yield d
        yield from _flat(d.related)


def _runtime_diffs(a, b) -> dict[str, tuple[str, object, object]]:
    report = compare(a.snapshot, b.snapshot)
    # what one run read alone is folded under the outcome (a consequence): listed there
    return {d.key: (d.change, d.a, d.b)
            for d in _flat((*report.differences, *report.consequences))
            if d.section == "runtime"}


def test_identical_runs_have_no_runtime_difference(traced) -> None:
    one, _rt, _ = traced(PROGRAM, env=child_env(APP_KNOB="1"), name="app.py")
    two, _rt, _ = traced(PROGRAM, env=child_env(APP_KNOB="1"), name="app.py")
    assert _runtime_diffs(one, two) == {}


def test_value_seen_and_read_in_one_run_only_are_differences(traced) -> None:
    a, _rt, _ = traced(PROGRAM, env=child_env(APP_KNOB="1"), name="app.py")
    b, _rt, _ = traced(PROGRAM, env=child_env(APP_MODE="fast"), name="app.py")
    diffs = _runtime_diffs(a, b)
    assert diffs["env APP_KNOB"] == ("changed", "1", "(unset: default taken)")
    assert diffs["env FAST_ONLY"] == ("added", None, "(unset: default taken)")
    assert diffs["env APP_MODE"][0] == "changed"
    report = compare(a.snapshot, b.snapshot)
    # read in one run only: folded under the outcome as a consequence, with its evidence
    (fast,) = [d for d in _flat((*report.differences, *report.consequences))
               if d.key == "env FAST_ONLY"]
    assert fast.evidence[0] == "A: not read"
    assert fast.evidence[1].startswith("B: read at app.py") and fast.evidence[1].endswith(
        "in <module>")


def test_traced_against_untraced_is_one_difference(traced) -> None:
    a, _rt, _ = traced(PROGRAM)
    b, _rt, _ = traced(PROGRAM, trace=False)
    assert _runtime_diffs(a, b) == {"traced": ("changed", True, False)}


def test_module_from_another_place_is_a_difference(traced, tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name / "mypkg").mkdir(parents=True)
        (tmp_path / name / "mypkg" / "__init__.py").write_text("")
    a, _rt, _ = traced("import mypkg\n", env=child_env(PYTHONPATH=str(tmp_path / "one")))
    b, _rt, _ = traced("import mypkg\n", env=child_env(PYTHONPATH=str(tmp_path / "two")))
    change, x, y = _runtime_diffs(a, b)["module mypkg"]
    assert change == "changed" and x["file"] != y["file"]


def test_show_lists_read_variables_first_with_their_sites(traced, tmp_path: Path) -> None:
    (tmp_path / "src" / "localpkg").mkdir(parents=True)
    (tmp_path / "src" / "localpkg" / "__init__.py").write_text("")
    record, _rt, _ = traced(PROGRAM + "import localpkg\n",
                            env=child_env(APP_KNOB="7", PYTHONPATH=str(tmp_path / "src")))
    text = render_summary(record.snapshot)
    part = text[text.index("\nruntime\n"):]
    lines = part.splitlines()
    assert lines[2].startswith("  traced: 1 Python process(es)")
    assert "    APP_KNOB=7  1 read(s)" in lines
    at = lines[lines.index("    APP_KNOB=7  1 read(s)") + 1]
    assert at.startswith("      at prog") and "in knob <- " in at
    # read while unset: counted on one line, listed with --all (issue 38)
    assert "    APP_MODE (unset)  1 read(s)" not in lines
    assert "    1 read while unset, the default taken (show --all lists them)" in lines
    every = render_summary(record.snapshot, every_read=True)
    assert "    APP_MODE (unset)  1 read(s)" in every.splitlines()
    assert any(line.startswith("    localpkg  pythonpath  ") for line in lines)
