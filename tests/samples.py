"""Sample outputs in README.md and docs/*.md come from the program, never from memory.

A sample is marked in the Markdown with the command that prints it, and the scene it runs in::

    <!-- sample demo: runsnap diff .runsnap/good.toml .runsnap/bad.toml -->
    ```console
    $ runsnap diff .runsnap/good.toml .runsnap/bad.toml
    ...what the program prints...
    ```
    <!-- /sample -->

A *scene* is a small, reproducible world built by real captures (:data:`SCENES`): ``demo``
is the bundled launcher's incident, a good run with
``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`` and a bad one without, in a fixed environment,
with the capture times and host fixed afterwards so the text is the same on every machine.
The command runs there (``runsnap`` is ``python -m runsnap``, ``COLUMNS`` is
:data:`COLUMNS`) and its standard output is the sample (the times the child's own logger
printed are replaced by a fixed one).

``tests/test_samples.py`` fails when a sample differs from what the program prints, or when a
runsnap report in a ``console`` block is not marked as a sample. To rewrite every sample::

    .venv/bin/python -m tests.samples
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.conftest import SYSTEM_PATH, run_runsnap

ROOT = Path(__file__).resolve().parent.parent

#: The terminal width samples are printed for.
COLUMNS = 100

#: Files that hold samples.
DOCUMENTS = ("README.md", "docs/*.md")

MARK = re.compile(r"<!-- sample (?P<scene>[\w-]+): (?P<command>.+?) -->\n"
                  r"(?P<fence>`{3,})(?P<lang>console|json|markdown|text)\n(?P<body>.*?)\n?"
                  r"(?P=fence)\n<!-- /sample -->", re.S)

#: Lines by which a runsnap report is recognised in a ``console`` block (it must be a sample).
REPORT_LINE = re.compile(r"^(runsnap diff: |runsnap snapshot [0-9a-f]{12}|#\s+captured\s+label)",
                         re.M)

#: The time a child's logger prints (``logging``'s default), replaced by a fixed one.
LOG_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}")
FIXED_LOG_TIME = "2026-11-29 17:02:12,004"

def documents() -> list[Path]:
    """The Markdown files that may hold samples."""
    out: list[Path] = []
    for pattern in DOCUMENTS:
        out += sorted(ROOT.glob(pattern))
    return out


def samples(text: str) -> Iterator[re.Match[str]]:
    """The marked samples of a Markdown text."""
    return MARK.finditer(text)


def _env(where: Path, **extra: str) -> dict[str, str]:
    """A fixed environment: nothing of the machine's but the system's programs, and ``python3``
    is this interpreter in a venv of its own, with no package in it: not this interpreter by a
    link, which Python follows to its base installation (Debian's brings its dist-packages,
    and ``check`` their unmet requirements, into the scene)."""
    bindir = where / "venv" / "bin"
    if not bindir.exists():
        import venv

        venv.EnvBuilder(with_pip=False, symlinks=True).create(where / "venv")
    return {"PATH": f"{bindir}:{SYSTEM_PATH}", "HOME": str(where / "home"),
            "LANG": "C.UTF-8", "RUNSNAP_KEY_FILE": str(where / "key"),
            "RUNSNAP_CACHE_DIR": str(where / "cache"), "COLUMNS": str(COLUMNS),
            "PYTHONPATH": str(ROOT), **extra}


def _runsnap(where: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_runsnap(*args, cwd=where, env=_env(where, **env), timeout=120)


def _fix_meta(path: Path, captured_at: str) -> None:
    """Give a snapshot a fixed capture time, host and id (what varies from run to run)."""
    from runsnap.snapshot import load

    snap = load(path)
    import hashlib

    ident = hashlib.sha256(captured_at.encode()).hexdigest()[:32]
    sections = dict(snap.sections)
    outcome = sections.get("outcome")
    if isinstance(outcome, dict) and "duration_s" in outcome:
        # the run's timings vary (two runs may even take the same 0.1 s): fixed, distinct per run
        duration = round(0.5 + int(ident[:2], 16) / 100, 2)
        sections["outcome"] = {**outcome, "started_at": captured_at, "ended_at": captured_at,
                               "duration_s": duration}
    snap.replace(meta={**snap.meta, "captured_at": captured_at, "host": "gpu-node-1",
                       "id": ident}, sections=sections).save(path)


#: The README's quick start, between these marks: the commands a reader runs.
DEMO_COMMAND = re.compile(r"<!-- demo-command -->\n```\n(?P<command>.+?)\n```\n"
                          r"<!-- /demo-command -->", re.S)
#: Its set-up step (a venv with runsnap installed), which the scene replaces by this checkout.
INSTALL = re.compile(r"^python3 -m venv \.venv && \.venv/bin/pip install -q \. && ")


def quick_start_captures(readme: str) -> str:
    """The README's quick start as a shell script, without its set-up step and its last
    command (the ``diff`` whose output is the sample), ``runsnap`` being this checkout's.

    >>> quick_start_captures("<!-- demo-command -->\\n```\\npython3 -m venv .venv && "
    ...     ".venv/bin/pip install -q . && A=1 .venv/bin/runsnap capture -o g.toml -- x; "
    ...     ".venv/bin/runsnap diff g.toml\\n```\\n<!-- /demo-command -->")
    'A=1 runsnap capture -o g.toml -- x'
    """
    m = DEMO_COMMAND.search(readme)
    if m is None:
        raise ValueError("README.md has no <!-- demo-command --> block")
    command = INSTALL.sub("", m["command"].strip())
    if command == m["command"].strip():
        raise ValueError("the quick start no longer starts by installing runsnap in .venv")
    steps, _, last = command.rpartition("; ")
    if not last.startswith(".venv/bin/runsnap diff "):
        raise ValueError(f"the quick start no longer ends with its diff: {last!r}")
    return steps.replace(".venv/bin/runsnap", "runsnap")


def demo(where: Path) -> None:
    """The incident of the README, made by exactly the README's quick start (its own
    ``demo-command`` block): a good and a bad launch of the bundled demo."""
    (where / "home").mkdir()
    (where / "fixtures").symlink_to(ROOT / "fixtures")
    script = quick_start_captures((ROOT / "README.md").read_text())
    prelude = f'runsnap() {{ {shlex.quote(sys.executable)} -m runsnap "$@"; }}\n'
    done = subprocess.run(["sh", "-c", prelude + script], cwd=where, env=_env(where),
                          capture_output=True, text=True, timeout=300)
    good, bad = where / ".runsnap" / "good.toml", where / ".runsnap" / "bad.toml"
    assert good.exists() and bad.exists(), done.stderr
    _fix_meta(where / ".runsnap" / "good.toml", "2026-11-29T16:14:35.123+00:00")
    _fix_meta(where / ".runsnap" / "bad.toml", "2026-11-29T17:02:11.870+00:00")


#: Scene name -> what builds it in an empty folder.
SCENES: dict[str, Callable[[Path], None]] = {"demo": demo}


class Stage:
    """Scenes built once each, in a temporary folder, for as long as the stage lives."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="runsnap-samples-")
        self._built: dict[str, Path] = {}

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def scene(self, name: str) -> Path:
        """The folder of scene ``name``, built on first use."""
        if name not in self._built:
            if name not in SCENES:
                raise KeyError(f"unknown sample scene {name!r} (known: {', '.join(SCENES)})")
            where = Path(self._tmp.name) / name
            where.mkdir()
            SCENES[name](where)
            self._built[name] = where
        return self._built[name]

    def output(self, scene: str, command: str, lang: str = "console") -> str:
        """What ``command`` prints in ``scene``, as the sample shows it (in a ``console``
        block, ``$ command`` first)."""
        argv = shlex.split(command)
        if argv[:1] != ["runsnap"]:
            raise ValueError(f"a sample command starts with 'runsnap': {command!r}")
        done = _runsnap(self.scene(scene), *argv[1:])
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{command}: exit {done.returncode}: {done.stderr}")
        out = LOG_TIME.sub(FIXED_LOG_TIME, done.stdout.rstrip())
        return f"$ {command}\n{out}" if lang == "console" else out


def regenerate(text: str, stage: Stage) -> str:
    """``text`` with every sample's body replaced by what its command prints now."""
    def body(m: re.Match[str]) -> str:
        out = stage.output(m["scene"], m["command"], m["lang"])
        fence = "````" if "```" in out else "```"
        return (f"<!-- sample {m['scene']}: {m['command']} -->\n{fence}{m['lang']}\n{out}\n"
                f"{fence}\n<!-- /sample -->")

    return MARK.sub(body, text)


def main() -> None:
    """Rewrite every sample of README.md and docs/*.md from the program."""
    with Stage() as stage:
        for doc in documents():
            text = doc.read_text()
            new = regenerate(text, stage)
            if new != text:
                doc.write_text(new)
                print(f"rewrote the samples of {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
