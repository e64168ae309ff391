"""A file one run alone found in its git tree (runsnap/diffing/datafiles.py ``found_alone``,
``by_named_file``): real traced launches of a trainer that merges ``configs/local.yaml`` over
its defaults when present, as OmegaConf setups do with a git-ignored override file."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.conftest import make_repo

TRAIN = '''import argparse
import json
import os

p = argparse.ArgumentParser()
p.add_argument("--eval-file", default="data/dev.jsonl")
args = p.parse_args()
cfg = {"lr": 0.01}
if os.path.exists("configs/local.json"):
    with open("configs/local.json") as fh:
        cfg.update(json.load(fh))
with open(args.eval_file) as fh:
    rows = [json.loads(line) for line in fh]
print(f"loss={sum(r['y'] for r in rows) * cfg['lr']:.4f}")
'''

FILES = {"train.py": TRAIN, ".gitignore": "configs/local.json\n",
         "data/dev.jsonl": '{"y": 1}\n{"y": 2}\n', "data/dev2.jsonl": '{"y": 5}\n'}


def test_an_ignored_override_one_run_found_is_the_cause(tmp_path: Path,
                                                        base_env: dict[str, str]) -> None:
    """Between the runs a notebook left configs/local.json (git-ignored): B alone opened it,
    and A ran to its end without it. That file is the one input that differs: confident on
    it, beside a shell variable no process read (it was a folded consequence before, and the
    verdict named nothing)."""
    repo = make_repo(tmp_path / "proj", FILES)
    argv = [sys.executable, "train.py"]
    a = run(argv, env=base_env, cwd=repo, output=tmp_path / "a.toml").snapshot
    (repo / "configs").mkdir()
    (repo / "configs" / "local.json").write_text('{"lr": 0.05}')
    b = run(argv, env={**base_env, "COLAB_RELEASE_TAG": "release-colab-20261201"}, cwd=repo,
            output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    top = report.candidates[0]
    assert top.key == f"file {repo / 'configs' / 'local.json'}", report.verdict()
    assert top.evidence_kind == "read" and "only B opened configs/local.json" in top.reason
    assert report.confidence == "confident", report.verdict()


def test_a_file_an_option_names_goes_under_the_option(tmp_path: Path,
                                                      base_env: dict[str, str]) -> None:
    """B was asked for another eval file: the file it alone opened is the option's doing,
    shown under --eval-file, not a cause of its own."""
    repo = make_repo(tmp_path / "proj", FILES)
    a = run([sys.executable, "train.py"], env=base_env, cwd=repo,
            output=tmp_path / "a.toml").snapshot
    b = run([sys.executable, "train.py", "--eval-file", "data/dev2.jsonl"], env=base_env,
            cwd=repo, output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    top = report.candidates[0]
    assert top.key == "--eval-file", report.verdict()
    assert any(r.key.endswith("data/dev2.jsonl") for r in top.related), top.related
    assert not any(d.key.startswith("file ") for d in report.counted if not d.hidden)


def _clone(source: Path, dest: Path) -> Path:
    import subprocess

    subprocess.run(["git", "clone", "-q", str(source), str(dest)], check=True)
    return dest


def test_an_old_ignored_file_in_another_checkout_is_the_cause(tmp_path: Path,
                                                              base_env: dict[str, str]) -> None:
    """A runs in a fresh clone; B in an older checkout of the same commit where an earlier
    experiment left configs/local.json (git-ignored) long before either run. The file is older
    than A's start, but A ran in another checkout and ran to its end without opening the file
    of that name there: what B found in its tree, an input (fresh9
    ``stale-last-ckpt-in-checkout``, a ``checkpoints/last.ckpt`` the fit resumed from)."""
    origin = make_repo(tmp_path / "origin", FILES)
    old = _clone(origin, tmp_path / "drive" / "proj")
    (old / "configs").mkdir()
    (old / "configs" / "local.json").write_text('{"lr": 0.05}')
    fresh = _clone(origin, tmp_path / "workers" / "proj")
    argv = [sys.executable, "train.py"]
    a = run(argv, env=base_env, cwd=fresh, output=tmp_path / "a.toml").snapshot
    b = run(argv, env={**base_env, "COLAB_RELEASE_TAG": "release-colab-20261201"}, cwd=old,
            output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    top = report.candidates[0]
    assert top.key == f"file {old / 'configs' / 'local.json'}", report.verdict()
    assert top.evidence_kind == "read" and "another checkout of proj" in top.reason, top.reason
    assert report.confidence == "confident", report.verdict()


def test_a_file_the_other_checkout_opened_too_is_no_input_found(tmp_path: Path,
                                                                base_env: dict[str, str]) -> None:
    """Both checkouts hold configs/local.json: each run opened its own. The path differs, but
    the other run opened the file of that name in its tree too: not a file only B found."""
    origin = make_repo(tmp_path / "origin", FILES)
    trees = [_clone(origin, tmp_path / name / "proj") for name in ("drive", "workers")]
    for tree in trees:
        (tree / "configs").mkdir()
        (tree / "configs" / "local.json").write_text('{"lr": 0.05}')
    argv = [sys.executable, "train.py"]
    a = run(argv, env=base_env, cwd=trees[1], output=tmp_path / "a.toml").snapshot
    b = run(argv, env=base_env, cwd=trees[0], output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    assert not any("another checkout" in d.reason for d in report.counted), report.verdict()
