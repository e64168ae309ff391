"""Uncommitted edits ranked by whether the runs ran them (runsnap/diffing/edits.py): the
module a run imported over the one neither imported, from ``[runtime.modules]`` of two real
traced launches in a real git repository."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.snapshot import Snapshot
from tests.diffing.conftest import git


def test_an_edit_to_an_imported_module_ranks_above_one_never_imported(
        repo: Path, tmp_path: Path, base_env: dict[str, str]) -> None:
    (repo / "limits.py").write_text("LIMIT = 3\n")
    (repo / "plotting.py").write_text("COLOUR = 'blue'\n")
    (repo / "app.py").write_text(
        "import sys\nimport limits\n"
        "if limits.LIMIT < 1:\n    sys.exit('the limit is too small')\nprint('ok')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "modules")
    argv = [sys.executable, str(repo / "app.py")]
    # no bytecode cache: limits.py is rewritten within the second at the same size, which the
    # cache's (mtime, size) check cannot tell from the first version
    base_env = {**base_env, "PYTHONDONTWRITEBYTECODE": "1"}
    (repo / "plotting.py").write_text("COLOUR = 'red'\n")
    a = run(argv, env=base_env, cwd=repo, output=tmp_path / "a.toml").snapshot
    (repo / "limits.py").write_text("LIMIT = 0\n")
    (repo / "plotting.py").write_text("COLOUR = 'green'\n")
    b = run(argv, env=base_env, cwd=repo, output=tmp_path / "b.toml").snapshot
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key.rpartition(": ")[2]: d for d in report.counted if d.section == "git"}
    assert "limits.py" in ranked, [(d.key, d.reason) for d in report.differences]
    used, unused = ranked["limits.py"], ranked["plotting.py"]
    assert used.evidence_kind == "read" and "imported limits" in used.reason, used.reason
    assert unused.evidence_kind == "unread" and "did not run" in unused.reason, unused.reason
    assert report.candidates[0] is used or report.candidates[0].key == used.key
    assert unused not in report.candidates


def test_an_edit_inside_an_imported_package_is_read_where_capture_noted_its_submodules(
        repo: Path, tmp_path: Path, base_env: dict[str, str]) -> None:
    """``[runtime.modules]`` lists top-level modules, ``[runtime.submodules]`` the program's own
    submodules imported: the edit to ``lm/attention.py`` ran (read evidence). A snapshot from
    before submodules were noted cannot say, so there the edit has no evidence either way
    (never "did not run"); an edit outside any imported package is unread either way."""
    (repo / "lm").mkdir()
    (repo / "lm" / "__init__.py").write_text("from lm.attention import SCALE\n")
    (repo / "lm" / "attention.py").write_text("SCALE = 1.0\n")
    (repo / "plotting.py").write_text("COLOUR = 'blue'\n")
    (repo / "app.py").write_text("import lm\nprint(f'perplexity={51.2 * lm.SCALE:.3f}')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "package")
    argv = [sys.executable, str(repo / "app.py")]
    base_env = {**base_env, "PYTHONDONTWRITEBYTECODE": "1"}
    a = run(argv, env=base_env, cwd=repo, output=tmp_path / "a.toml").snapshot
    (repo / "lm" / "attention.py").write_text("SCALE = 1.5\n")
    (repo / "plotting.py").write_text("COLOUR = 'red'\n")
    b = run(argv, env=base_env, cwd=repo, output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    ranked = {d.key.rpartition(": ")[2]: d for d in report.counted if d.section == "git"}
    edit = ranked["lm/attention.py"]
    assert edit.evidence_kind == "read" and "imported lm.attention" in edit.reason, edit.reason
    assert ranked["plotting.py"].evidence_kind == "unread"
    assert report.candidates[0].key == edit.key, report.verdict()

    def older(snap: Snapshot) -> Snapshot:  # as a runsnap before [runtime.submodules] wrote it
        runtime = {k: v for k, v in snap.sections["runtime"].items() if k != "submodules"}
        return Snapshot(snap.meta, {**snap.sections, "runtime": runtime}, snap.schema,
                        snap.path_text)

    report = compare(older(a), older(b))
    ranked = {d.key.rpartition(": ")[2]: d for d in report.counted if d.section == "git"}
    edit = ranked["lm/attention.py"]
    assert edit.evidence_kind == "name" and "did not run" not in edit.reason, edit.reason
    assert ranked["plotting.py"].evidence_kind == "unread"


def test_an_error_quoting_a_word_the_edit_brought_names_the_edit(
        repo: Path, tmp_path: Path, base_env: dict[str, str]) -> None:
    """A LoRA config in git edited to target ``c_attn_x``, which the model has not: peft-style,
    the error quotes the target modules. The word came with the edit and the good run never
    printed it: the edit is named by the failing error, which quotes it, and it stands apart
    from a variable the program read beside it."""
    (repo / "configs").mkdir()
    (repo / "configs" / "lora.json").write_text('{"target_modules": ["c_attn", "c_proj"]}\n')
    (repo / "app.py").write_text(
        "import json, os\nmodules = {'c_attn', 'c_proj', 'c_fc'}\n"
        "rank = int(os.environ.get('LORA_RANK', '8'))\n"
        "want = set(json.load(open('configs/lora.json'))['target_modules'])\n"
        "if not want <= modules:\n"
        "    raise ValueError(f'Target modules {sorted(want)} not found in the base model')\n"
        "print(f'trainable={rank * len(want)}')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "lora")
    argv = [sys.executable, str(repo / "app.py")]
    a = run(argv, env={**base_env, "LORA_RANK": "8"}, cwd=repo, output=tmp_path / "a.toml").snapshot
    (repo / "configs" / "lora.json").write_text('{"target_modules": ["c_attn_x", "c_proj"]}\n')
    b = run(argv, env={**base_env, "LORA_RANK": "16"}, cwd=repo,
            output=tmp_path / "b.toml").snapshot
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    edit = next(d for d in report.counted if d.key.endswith("configs/lora.json"))
    assert edit.evidence_kind == "failing-path" and edit.quoted, (edit.evidence_kind, edit.reason)
    assert "quotes c_attn_x, which the edit to configs/lora.json brought to run B" in edit.reason
    assert (report.confidence, report.candidates[0].key) == ("confident", edit.key), \
        report.verdict()


def test_an_error_that_quotes_an_untracked_files_path_names_it(
        repo: Path, base_env: dict[str, str]) -> None:
    """A scratch ``requests.py`` left in the tree shadows the installed requests: Python's own
    ``ImportError: cannot import name 'Session' from 'requests' (/.../work/requests.py)``
    quotes the file's path, the run imported it: confident on the untracked file, over the
    shell's other variable the program also read."""
    pytest.importorskip("requests")
    (repo / "fetch.py").write_text(
        "import os\nTIMEOUT = float(os.environ.get('FETCH_TIMEOUT', '5'))\n"
        "from requests import Session\nprint('session', Session, TIMEOUT)\n")
    argv = [sys.executable, str(repo / "fetch.py")]
    a = run(argv, env={**base_env, "FETCH_TIMEOUT": "5"}, cwd=repo,
            output=repo.parent / "a.toml").snapshot
    (repo / "requests.py").write_text("def get(url):\n    return url\n")  # a scratch stub
    b = run(argv, env={**base_env, "FETCH_TIMEOUT": "9"}, cwd=repo,
            output=repo.parent / "b.toml").snapshot
    assert "cannot import name 'Session'" in b["outcome"]["first_error"]
    report = compare(a, b)
    top = report.counted[0]
    assert (top.section, top.key, top.quoted) == ("git", "work: requests.py", True), \
        report.verdict()
    assert "quotes the file's path" in top.reason
    assert report.confidence == "confident", report.verdict()


def test_a_file_opened_in_the_function_that_raised_is_judged_as_a_read_there(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """A script reads KNOB in its module body, loads engine.json there, then raises there: the
    read was "in the function that raised" (99) and the file only "opened" (91): confident on
    KNOB, which nothing used. The file opened in the same body is on the failing path as the
    read is: the two tie, undecided."""
    app = tmp_path / "app.py"
    app.write_text("import json, os\n\nKNOB = os.environ.get('KNOB', '1')\n"
                   "with open('engine.json') as f:\n    cfg = json.load(f)\n"
                   "if cfg['mode'] != 'fast':\n"
                   "    raise ValueError('the engine cannot start in this mode')\n")
    snaps = []
    for name, mode, knob in (("a", "fast", "1"), ("b", "slow", "2")):
        (tmp_path / "engine.json").write_text(f'{{"mode": "{mode}"}}\n')
        snaps.append(run([sys.executable, str(app)], env={**base_env, "KNOB": knob},
                         cwd=tmp_path, output=tmp_path / f"{name}.toml").snapshot)
    report = compare(*snaps)
    ranked = {d.key: d for d in report.counted}
    engine = next(d for d in report.counted if d.key.endswith("engine.json"))
    assert (engine.evidence_kind, engine.score) == ("failing-path", 99), engine.reason
    assert engine.reason.startswith("opened at app.py:4 in <module>, the function that raised")
    assert ranked["KNOB"].score == 99
    assert report.confidence == "undecided", report.verdict()
