"""``runsnap show --format markdown`` fits what GitHub accepts (65,536 characters), folding
the largest sections first and saying where the rest is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_show_markdown_of_a_large_snapshot_fits_an_issue(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path),
           **{f"APP_SETTING_{i:04d}": "x" * 80 for i in range(1500)}}
    out = tmp_path / "big.toml"
    made = subprocess.run([sys.executable, "-m", "runsnap", "capture", "--no-run", "-o",
                           str(out)], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    shown = subprocess.run([sys.executable, "-m", "runsnap", "show", "--format", "markdown",
                            str(out)], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    md = shown.stdout
    assert len(md) <= 65536
    assert "<details><summary>env (" in md  # the section is there, shortened
    assert "more lines: `runsnap show --section env` or `--format json` has them" in md
    assert md.count("```") % 2 == 0  # every fence closed
