"""The exit statuses are decided in one place and listed in one table
(:data:`runsnap.errors.EXIT_STATUSES`): the README's table is that table, every status a
command module names comes from it, and a bug of runsnap's own is one line and status 70 for
users, a traceback in tests."""

from __future__ import annotations

import ast
import re
import sys

import pytest

from runsnap.cli.boundary import finish, guarded
from runsnap.commands import Result
from runsnap.errors import EXIT_STATUSES, INTERNAL, NO, UsageError
from tests.conftest import ROOT


def _readme_table() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("| ")][2:]  # no header
    return [tuple(cell.strip() for cell in row.strip("|").split(" | ")) for row in rows]  # type: ignore[misc]


def test_the_readme_lists_exactly_the_table() -> None:
    assert _readme_table() == list(EXIT_STATUSES)


def test_no_command_writes_a_status_as_a_bare_number() -> None:
    """``sys.exit(1)`` in a command is a status decided outside the table."""
    offenders = [
        f"{path.name}:{node.lineno} {ast.unparse(node)}"
        for folder in ("cli", "commands")
        for path in sorted((ROOT / "runsnap" / folder).glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "sys.exit"
        and node.args and isinstance(node.args[0], ast.Constant)
        and node.args[0].value not in (0, None)
    ]
    assert offenders == []


def test_a_bug_is_one_line_and_70_for_users(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNSNAP_TRACEBACK", raising=False)

    def broken() -> None:
        {}["tail"]  # noqa: B018 - the bug

    with pytest.raises(SystemExit) as ended:
        guarded(broken)
    assert ended.value.code == INTERNAL
    err = capsys.readouterr().err
    assert re.fullmatch(r"runsnap: internal error: KeyError: 'tail' \(at test_exit_statuses.py:\d+\); "
                        r"please report it \(RUNSNAP_TRACEBACK=1 shows the traceback\)\n", err), err
    monkeypatch.setenv("RUNSNAP_TRACEBACK", "1")
    with pytest.raises(KeyError):
        guarded(broken)


def test_a_result_becomes_output_and_status(tmp_path: object, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    written: list[tuple[str, bool]] = []
    assert finish(Result("a\n", NO, notes=("runsnap: b",)), lambda t, c: written.append((t, c))) == NO
    assert written == [("a\n", False)] and capsys.readouterr().err == "runsnap: b\n"
    with pytest.raises(UsageError, match="cannot write"):
        finish(Result("x", output=f"{sys.executable}/nope"))
