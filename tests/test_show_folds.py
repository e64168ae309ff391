"""``runsnap show`` puts what a person reads first and folds the variables a run read while
unset into one counted line; ``--all`` lists them (issue 38, item 4). A real traced run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conftest import run_runsnap

PROGRAM = """import os
for i in range(40):
    os.environ.get(f"AOT_INDUCTOR_KNOB_{i}")
print(os.environ.get("APP_KNOB"))
"""


def test_show_folds_unset_reads_and_leads_with_what_people_read(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    env = {**os.environ, "APP_KNOB": "7", "COLUMNS": "80"}
    env.pop("RUNSNAP_DIR", None)
    r = run_runsnap("capture", "--label", "probe", "--", sys.executable, "prog.py", cwd=tmp_path,
                    env=env)
    assert r.returncode == 0, r.stderr
    shown = run_runsnap("show", "@probe", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    heads = [ln for ln in lines if ln and not ln.startswith(" ")]
    order = [h for h in heads if h in ("command", "outcome", "git", "packages", "models", "env",
                                       "runtime", "system")]
    assert order == ["command", "outcome", "git", "packages", "models", "env", "runtime",
                     "system"], heads
    assert not any("AOT_INDUCTOR_KNOB" in ln for ln in lines)
    assert "    40 read while unset, the default taken (show --all lists them)" in lines
    assert "    APP_KNOB=7  1 read(s)" in lines
    assert max(len(ln) for ln in lines) <= 80

    every = run_runsnap("show", "@probe", "--all", cwd=tmp_path, env=env).stdout.splitlines()
    listed = sorted(ln.split()[0] for ln in every if ln.startswith("    AOT_INDUCTOR_KNOB_"))
    assert listed == sorted(f"AOT_INDUCTOR_KNOB_{i}" for i in range(40))
    assert not any("read while unset, the default taken" in ln for ln in every)
