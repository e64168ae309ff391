"""The snapshot reference (docs/schema.md, docs/launch.md) is checked against what a real capture
writes. (Sample outputs are checked by tests/test_samples.py.)"""

from __future__ import annotations

import os
import re
from pathlib import Path

import runsnap
from tests.conftest import ROOT, asset, make_repo


def reference_rows() -> dict[str, str]:
    text = (ROOT / "docs" / "schema.md").read_text()
    ref = text.split("# Snapshot reference", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in ref.splitlines():
        m = re.match(r"\| `(\[[^\]]+\]|schema)` \| (.*) \|$", line)
        if m:
            rows[m[1]] = m[2]
    return rows


def test_every_key_a_capture_writes_is_documented(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    (repo / "x").write_text("untracked")
    snap = runsnap.capture(["serve", str(asset("models", "kimi-k2.5-target"))],
                           env={"PATH": os.environ["PATH"]}, cwd=repo)
    rows = reference_rows()
    missing = []
    tables = {"meta": snap.meta, **snap.sections}
    tables["git.repos.NAME"] = next(iter(snap["git"]["repos"].values()))
    tables["models.models.SOURCE"] = next(iter(snap["models"]["models"].values()))
    for name, table in tables.items():
        row = rows.get(f"[{name}]", "")
        missing += [f"[{name}] {key}" for key in table if key != "errors" and f"`{key}`" not in row]
    assert missing == [], missing


def doc_part(doc: str, start: str) -> str:
    """The part of ``docs/DOC`` from the heading ``start`` to the next heading."""
    text = (ROOT / "docs" / doc).read_text()
    part = text.split(start, 1)[1]
    return re.split(r"\n#+ ", part, maxsplit=1)[0]


def test_every_outcome_and_process_key_is_documented(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from runsnap.capturing import capture_pid, run

    log = tmp_path / "run.log"
    record = run([sys.executable, "-c", "print('WARNING: x'); raise SystemExit('Error: y')"],
                 env=dict(os.environ), cwd=tmp_path, log=str(log))
    outcome_doc = doc_part("schema.md", "## `[outcome]`")
    missing = [k for k in record.snapshot["outcome"] if f"`{k}`" not in outcome_doc]

    ready = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-c",
                              f"import time; open({str(ready)!r}, 'w').close(); time.sleep(30)"])
    try:
        while not ready.exists():
            time.sleep(0.01)
        snap = capture_pid(child.pid)
    finally:
        child.kill()
        child.wait()
    process_doc = doc_part("launch.md", "### `--pid`: a process that is already running")
    missing += [f"[process] {k}" for k in snap["process"]
                if k != "errors" and f"`{k}`" not in process_doc]
    assert missing == [], missing



#: The pages whose table of options (``| option | meaning |``) is a command's reference.
OPTION_TABLES = {"diff.md": "diff", "launch.md": "capture"}


def option_table(doc: str) -> dict[str, str]:
    """The rows of ``docs/DOC``'s first option table: each long option it names -> its row."""
    text = (ROOT / "docs" / doc).read_text()
    table = text.split("| option | meaning |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, str] = {}
    for line in table.splitlines():
        first = line.split(" | ", 1)[0]
        for name in re.findall(r"--[a-z][a-z-]*", first):
            rows[name] = line
    return rows


def test_every_option_a_command_takes_is_in_its_table() -> None:
    import click

    from runsnap.cli.app import cli

    missing = []
    for doc, name in OPTION_TABLES.items():
        rows = option_table(doc)
        for param in cli.commands[name].params:
            if not isinstance(param, click.Option):
                continue
            long = next((o for o in param.opts if o.startswith("--")), None)
            if long in (None, "--help"):
                continue
            if long not in rows:
                missing.append(f"docs/{doc}: {long}")
            elif isinstance(param.type, click.Choice) and len(param.type.choices) < 8:
                first = rows[long].split(" | ", 1)[0]
                missing += [f"docs/{doc}: {long} {choice}" for choice in param.type.choices
                            if str(choice) not in first]
    assert missing == [], missing


#: Each command's pages (docs/): together they name every option it takes.
COMMAND_PAGES = {"capture": ["launch.md"], "diff": ["diff.md"], "bisect": ["bisect.md"],
                 "replay": ["bisect.md"], "why": ["why.md"], "who-reads": ["runtime.md"],
                 "ls": ["commands.md", "trackers.md"], "show": ["commands.md", "html.md"],
                 "gc": ["commands.md"], "pin": ["commands.md"], "unpin": ["commands.md"],
                 "check": ["commands.md"], "scrub": ["secrets.md", "commands.md"],
                 "report": ["launchers.md", "html.md", "trackers.md"]}


def test_every_option_is_named_on_its_commands_page() -> None:
    import click

    from runsnap.cli.app import cli

    assert sorted(COMMAND_PAGES) == sorted(cli.commands)  # a new command gets its page here
    missing = []
    for name, docs in COMMAND_PAGES.items():
        text = "".join((ROOT / "docs" / doc).read_text() for doc in docs)
        for param in cli.commands[name].params:
            # --dir is every command's snapshot folder (docs/diff.md, docs/commands.md)
            if not isinstance(param, click.Option) or {"--help", "--dir"} & set(param.opts):
                continue
            if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text) for o in param.opts):
                missing.append(f"{name} {'/'.join(param.opts)}")
    assert missing == [], missing
