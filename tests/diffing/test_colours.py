"""Colour means good or bad, never a side: the A and B values are neutral; a clean exit is
green, a failure exit and an error are red, whichever side they are on."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import runsnap
from runsnap.render import render

RED, GREEN = "\x1b[31m", "\x1b[32m"


def _run(tmp_path: Path, name: str, code: str, **env: str) -> runsnap.Snapshot:
    import os

    full = {**os.environ, **env}
    record = runsnap.run([sys.executable, "-c", code], env=full, cwd=tmp_path,
                         output=tmp_path / f"{name}.toml")
    return record.snapshot


def _coloured(text: str, code: str) -> list[str]:
    return re.findall(re.escape(code) + r"(.*?)\x1b\[0m", text)


def test_good_exit_green_failure_red_sides_neutral(tmp_path: Path) -> None:
    good = _run(tmp_path, "good", "print('ok')", KNOB="1")
    bad = _run(tmp_path, "bad", "raise ValueError('context too long')", KNOB="2")
    for a, b in ((good, bad), (bad, good)):  # the colour follows the meaning, not the side
        text = render(runsnap.diff(a, b), "text", color=True)
        green, red = _coloured(text, GREEN), _coloured(text, RED)
        assert any(s.strip() == "0" for s in green), text
        assert any(s.strip() == "1" for s in red), text
        assert any("ValueError: context too long" in s for s in red), text
        # the changed variable's values, and the command's, carry no good/bad colour
        knob = next(ln for ln in text.splitlines() if " KNOB " in ln)
        assert RED not in knob and GREEN not in knob, knob
        assert not [s for s in red + green if "print('ok')" in s], text
        assert "(unset)" not in "".join(red + green)
