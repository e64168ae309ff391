"""Bisect where a model's config.json lives in the git tree and the code has an uncommitted
edit (issue 27, item 4): applied in copies of the tree where the tree still holds it as BAD
ran it, blocking otherwise; real repositories, real launches captured and bisected."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tests.conftest import make_repo
from tests.proof.conftest import bisect, capture, runsnap

TRAIN = '''import json, os, sys
cfg = json.load(open(os.path.join(sys.argv[sys.argv.index("--model") + 1], "config.json")))
if cfg["num_layers"] > 2 and not os.environ.get("ALLOW_DEEP"):
    raise SystemExit("ValueError: too deep for this build")
print("ok")
'''


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "work", {
        "train.py": TRAIN, "model2/config.json": json.dumps({"num_layers": 2}) + "\n"})
    os.chdir(repo)
    return repo


def _runs(repo: Path, edit_code: bool, edit_again: bool = False) -> tuple[Path, Path]:
    argv = ["python3", "train.py", "--model", "model2"]
    good = capture(repo.parent / "good.toml", argv,
                   {"ALLOW_DEEP": "1", "PYTHONPATH": str(repo / "extra")})
    (repo / "model2" / "config.json").write_text(json.dumps({"num_layers": 4}) + "\n")
    if edit_code:  # an uncommitted edit that breaks every launch from now on
        (repo / "train.py").write_text("raise SystemExit('ValueError: too deep for this "
                                       "build')\n" + TRAIN)
    bad = capture(repo.parent / "bad.toml", argv, {"ALLOW_DEEP": None, "NCCL_ALGO": "Ring"})
    if edit_again:  # the tree no longer as BAD ran it: no copy can hold BAD's edit
        with (repo / "train.py").open("a") as fh:
            fh.write("# edited again\n")
    return good, bad


def test_a_config_json_in_the_git_tree_is_applied_not_refused(tmp_path: Path) -> None:
    good, bad = _runs(_repo(tmp_path), edit_code=False)
    proc, answer = bisect(good, bad, "--recheck", "1")
    assert proc.returncode == 0, proc.stderr
    assert answer["status"] == "found", answer["message"]
    assert sorted(f"{c['section']} {c['key']}" for c in answer["cause"]) == [
        "env ALLOW_DEEP", "models --model: num_layers"]
    skipped = {s["key"]: s for s in answer["skipped"]}
    assert not any(s["blocking"] for s in answer["skipped"]), answer["skipped"]
    assert "work: model2/config.json" in skipped
    # GOOD's baseline is not needed first: nothing that could change the launch was skipped
    assert answer["runs"][0]["applied"] != []


def test_dry_run_numbers_the_trials_and_lists_each_skipped_once(tmp_path: Path) -> None:
    good, bad = _runs(_repo(tmp_path), edit_code=True, edit_again=True)
    dry = runsnap("bisect", str(good), str(bad), "--dry-run", "--force",
                  env={**os.environ, "COLUMNS": "100"})
    assert dry.returncode == 0, dry.stderr
    trials = re.findall(r"^  trial (\d+)", dry.stdout, re.M)
    assert trials == [str(i) for i in range(1, len(trials) + 1)] and len(trials) >= 3, dry.stdout
    assert "trial 1: nothing applied" in dry.stdout, dry.stdout
    skipped = dry.stdout.split("Skipped (left as in GOOD):", 1)[1]
    heads = [ln.split(": GOOD")[0] for ln in skipped.splitlines() if ln.startswith("  ") and
             not ln.startswith("    ")]
    assert len(heads) == len(set(heads)), skipped
    assert all(ln.startswith("  ") for ln in skipped.strip("\n").splitlines()[:-2]), skipped


def test_an_uncommitted_edit_is_applied_in_copies_of_the_tree(tmp_path: Path) -> None:
    """GOOD ran the clean commit, BAD the same commit with train.py edited: every trial runs
    in a copy of the repository, the edit applied or not, and finds it; the user's tree is
    left as it is."""
    repo = _repo(tmp_path)
    good, bad = _runs(repo, edit_code=True)
    edited = (repo / "train.py").read_text()
    proc, answer = bisect(good, bad, "--recheck", "1")
    assert proc.returncode == 0, proc.stderr
    assert answer["status"] == "found", answer["message"]
    assert "git work: train.py" in [f"{c['section']} {c['key']}" for c in answer["cause"]]
    assert not any(s["blocking"] for s in answer["skipped"]), answer["skipped"]
    assert (repo / "train.py").read_text() == edited
    assert json.loads((repo / "model2" / "config.json").read_text()) == {"num_layers": 4}


def test_good_going_bad_here_points_at_the_uncommitted_edit_in_one_trial(
        tmp_path: Path) -> None:
    good, bad = _runs(_repo(tmp_path), edit_code=True, edit_again=True)
    refused = runsnap("bisect", str(good), str(bad))
    assert refused.returncode == 2 and "work: train.py" in refused.stderr
    proc, answer = bisect(good, bad, "--force")
    assert proc.returncode == 1, proc.stderr
    assert answer["status"] == "none" and answer["trials"] == 1, answer
    assert answer["runs"][0]["applied"] == []
    assert "GOOD's own launch, with nothing applied, goes bad here" in answer["message"]
    assert "work: train.py" in answer["message"] and "--patch" in answer["message"]
    progress = [ln for ln in proc.stderr.splitlines() if ": bad in " in ln]
    assert progress and re.search(r"bad in \d+\.\ds \(\d+\.\ds elapsed\)", progress[0])
