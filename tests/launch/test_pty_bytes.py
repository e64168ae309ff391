"""Under a terminal, the child's output reaches it byte for byte as it would without runsnap:
the real terminal does its output processing (``\\n`` -> ``\\r\\n``) once, not twice."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RUNSNAP

pytestmark = pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1)")

PROGRAMS = [
    "print(1); print(2)",
    "import sys; sys.stdout.write('a\\r\\nb\\rc\\td\\n')",
    "import sys; sys.stderr.write('e\\nf\\r\\n')",
    "import sys; [sys.stdout.write(f'\\r{i}%') for i in range(3)]; print()",
]


def _under_terminal(command: list[str], cwd: Path) -> bytes:
    """What a terminal receives when ``command`` runs in it (``script`` gives it a pty)."""
    done = subprocess.run(["script", "-qec", shlex.join(command), "/dev/null"], cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return done.stdout


@pytest.mark.parametrize("program", PROGRAMS)
def test_child_output_reaches_the_terminal_byte_for_byte(program: str, scratch: Path) -> None:
    child = [sys.executable, "-c", program]
    alone = _under_terminal(child, scratch)
    wrapped = _under_terminal([*RUNSNAP, "capture", "-o", "s.toml",
                               "--", *child], scratch)
    announce = b"runsnap: snapshot s.toml\r\n"
    assert wrapped.startswith(announce)
    assert wrapped[len(announce):] == alone
    from runsnap import load

    tail = load(scratch / "s.toml").sections["outcome"]
    assert "\r\r" not in str(tail)
