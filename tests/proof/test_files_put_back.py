"""Files no launch can put back: an untracked file of a git tree rewritten between the runs,
and a file outside any tree edited in place. ``runsnap why`` names what the user does (put
GOOD's content back, named by its digest, or keep the file under git) and gives a line that
checks the digest before it launches: it stops while the file is BAD's, and goes as GOOD went
once the content is back.

Seen in the diagnosis corpus (fresh5 ``sklearn-untracked-dev-metric``: "another commit or
uncommitted state: runsnap does not check out code", and a worktree line at GOOD's commit,
which holds no untracked file at all; fresh7 ``shared-engine-config-cuda``). Real git
repositories, real launches traced by ``runsnap capture``, the line run by a real shell."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import make_repo
from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

EVAL = ("rows = [json.loads(l) for l in open(sys.argv[1])]\n"
        "knob = os.environ.get('KNOB')\n"
        "if any(r['label'] == 'UNK' for r in rows):\n"
        "    raise ValueError('label UNK is not in the label map')\n"
        "print(f'rows={len(rows)}')\n")


def _why(cwd: Path) -> dict:
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=cwd)
    return json.loads(proc.stdout)


def _run_line(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line.split("  # ")[0]], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def _check(out: dict, data: Path, good_text: str, where: str, why: str, cwd: Path) -> None:
    assert not out["cause"], out
    said = [c for c in out["cannot"] if c.startswith(f"{where}: ")]
    assert said and why in said[0] and f"put GOOD's content back in {data} (sha256 " in said[0] \
        and "or keep the file under git" in said[0], out["cannot"]
    if out["status"] != "confident":  # GOOD's own launch went bad here: the message says why
        assert out["status"] == "none"
        assert f"{where} differs and no launch can put it back: put GOOD's content back" in \
            out["message"], out["message"]
    [line] = out["experiment"]
    assert "sha256sum --check" in line and "git worktree" not in line, line
    refused = _run_line(line, cwd)  # the file is still BAD's: the launch does not start
    assert refused.returncode != 0 and "ValueError" not in refused.stderr, refused
    data.write_text(good_text)  # the user puts GOOD's content back
    ran = _run_line(line, cwd)
    assert ran.returncode == 0 and "rows=2" in ran.stdout, ran


def test_an_untracked_file_rewritten_between_the_runs(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "intent", {".gitignore": ".runsnap/\n"})
    monkeypatch.chdir(repo)  # the launches run in the repository
    prog = child(repo / "evaluate.py", EVAL)
    good_text = '{"label": "billing"}\n{"label": "refund"}\n'
    data = repo / "data" / "dev.jsonl"
    data.parent.mkdir()
    data.write_text(good_text)  # exported from the labelling tool, never committed
    capture(repo / ".runsnap" / "good.toml", ["python3", str(prog), str(data)], {"KNOB": "1"})
    time.sleep(0.01)
    data.write_text('{"label": "billing"}\n{"label": "UNK"}\n')  # re-exported
    capture(repo / ".runsnap" / "bad.toml", ["python3", str(prog), str(data)], {"KNOB": "2"})
    out = _why(repo)
    _check(out, data, good_text, "git intent: data/dev.jsonl", "untracked, rewritten between "
           "the runs: no commit holds GOOD's content", repo)


def test_a_file_outside_any_tree_edited_in_place(tmp_path: Path) -> None:
    prog = child(tmp_path / "evaluate.py", EVAL)
    good_text = '{"label": "billing"}\n{"label": "refund"}\n'
    data = tmp_path / "mnt" / "shared" / "dev.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text(good_text)
    capture(tmp_path / ".runsnap" / "good.toml", ["python3", str(prog), str(data)],
            {"KNOB": "1"})
    time.sleep(0.01)
    data.write_text('{"label": "billing"}\n{"label": "UNK"}\n')  # a teammate's edit
    capture(tmp_path / ".runsnap" / "bad.toml", ["python3", str(prog), str(data)],
            {"KNOB": "2"})
    out = _why(tmp_path)
    _check(out, data, good_text, f"runtime file {data}", "only its digest is recorded", tmp_path)


def test_a_model_file_edited_in_place(tmp_path: Path) -> None:
    """A model's file other than config.json (only its digest is recorded), edited in place in
    the model's folder: fresh5 ``tokenizer-padding-side-metric``."""
    model = tmp_path / "model-store" / "intent-bert"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "bert"}))
    good_text = json.dumps({"padding_side": "right"})
    side = model / "tokenizer_config.json"
    side.write_text(good_text)
    prog = child(tmp_path / "evaluate.py",
                 "import argparse\np = argparse.ArgumentParser()\np.add_argument('--model-path')\n"
                 "a = p.parse_args()\nknob = os.environ.get('KNOB')\n"
                 "tok = json.load(open(os.path.join(a.model_path, 'tokenizer_config.json')))\n"
                 "if tok['padding_side'] != 'right':\n"
                 "    raise ValueError('the classifier head reads the last position')\n"
                 "print('rows=2')\n")
    argv = ["python3", str(prog), "--model-path", str(model)]
    capture(tmp_path / ".runsnap" / "good.toml", argv, {"KNOB": "1"})
    time.sleep(0.01)
    side.write_text(json.dumps({"padding_side": "left"}))  # for generation, by a teammate
    capture(tmp_path / ".runsnap" / "bad.toml", argv, {"KNOB": "2"})
    out = _why(tmp_path)
    _check(out, side, good_text, "models --model-path: file tokenizer_config.json",
           "only config.json fields are applied", tmp_path)
