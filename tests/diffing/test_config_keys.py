"""An error that quotes a key of a config file the runs read (runsnap/diffing/datafiles.py
``key_quoted``; the names come from ``[runtime.data_files] keys``, runsnap/tracing/datafiles.py):
real traced launches of a program that loads a shared JSON config from outside any git tree,
as a team's mounted config folder is."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.diffing.conftest import write_script

TRAIN = """
    import json, os, sys

    with open(sys.argv[1]) as fh:
        cfg = json.load(fh)
    batch = int(os.environ.get("TRAIN_BATCH", "8"))
    print(f"warmup={cfg['warmup_steps']} batch={batch}")
    """


def test_a_key_the_other_runs_config_lost_is_named_by_the_keyerror(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """Between the runs the shared config renamed ``warmup_steps`` to ``warmup_ratio``; B
    fails with ``KeyError: 'warmup_steps'``, and its shell also sets a batch size the program
    reads in the same module body that raised. The file both runs opened is quoted by the error
    (a key A's copy alone holds: what it lost reached the code that raised), above the variable
    read there that no word of the runs names: confident on the file."""
    app = write_script(tmp_path, "train.py", TRAIN)
    shared = tmp_path / "mnt" / "team-configs" / "train.json"
    shared.parent.mkdir(parents=True)
    shared.write_text(json.dumps({"lr": 3e-4, "warmup_steps": 100, "schedule": "cosine"}))
    argv = [sys.executable, str(app), str(shared)]
    a = run(argv, env=base_env, cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    shared.write_text(json.dumps({"lr": 3e-4, "warmup_ratio": 0.1, "schedule": "cosine"}))
    b = run(argv, env={**base_env, "TRAIN_BATCH": "16"}, cwd=tmp_path,
            output=tmp_path / "b.toml").snapshot
    assert b["outcome"]["first_error"] == "KeyError: 'warmup_steps'"
    assert b["runtime"]["data_files"][str(shared)]["keys"] == ["lr", "schedule", "warmup_ratio"]
    report = compare(a, b)
    top = report.candidates[0]
    assert top.key == f"file {shared}" and top.evidence_kind == "failing-path", (top.key, top.reason)
    assert top.quoted
    assert "quotes warmup_steps, a key only A's copy of the file holds" in top.reason
    assert report.confidence == "confident", report.verdict()


def test_a_plain_word_key_counts_only_quoted(tmp_path: Path, base_env: dict[str, str]) -> None:
    """A key that is a plain word (``model``) is a word any message may use: only a quoted one
    names it. B's error says "model" unquoted; the file keeps plain ``read`` evidence."""
    app = write_script(tmp_path, "serve.py", """
        import json, sys

        cfg = json.load(open(sys.argv[1]))
        if "model" not in cfg:
            sys.exit("error: no model to serve was configured")
        print("serving", cfg["model"])
        """)
    conf = tmp_path / "etc" / "serve.json"
    conf.parent.mkdir()
    conf.write_text(json.dumps({"model": "tiny", "port": 8000}))
    argv = [sys.executable, str(app), str(conf)]
    a = run(argv, env=base_env, cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    conf.write_text(json.dumps({"port": 8000}))
    b = run(argv, env=base_env, cwd=tmp_path, output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    top = report.candidates[0]
    assert top.key == f"file {conf}" and top.evidence_kind == "read", (top.key, top.reason)


def test_the_keys_one_copy_alone_holds_are_shown(tmp_path: Path, base_env: dict[str, str]
                                                ) -> None:
    """Two healthy runs of a config renamed between them: the difference says which keys each
    copy alone holds, never a value."""
    app = write_script(tmp_path, "train.py", """
        import json, sys

        cfg = json.load(open(sys.argv[1]))
        print(f"loss={0.5 + cfg.get('warmup_steps', 0) / 1000:.3f}")
        """)
    shared = tmp_path / "mnt" / "train.json"
    shared.parent.mkdir()
    shared.write_text(json.dumps({"lr": 3e-4, "warmup_steps": 100}))
    argv = [sys.executable, str(app), str(shared)]
    a = run(argv, env=base_env, cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    shared.write_text(json.dumps({"lr": 3e-4, "warmup_ratio": 0.1}))
    b = run(argv, env=base_env, cwd=tmp_path, output=tmp_path / "b.toml").snapshot
    found = next(d for d in compare(a, b).counted if d.key == f"file {shared}")
    assert found.evidence[:2] == ("keys only in A: warmup_steps", "keys only in B: warmup_ratio")


def test_a_key_that_is_a_secret_never_reaches_the_snapshot(tmp_path: Path,
                                                          base_env: dict[str, str]) -> None:
    """A credentials file keyed by its token (as some tools key an ``auths`` table) is a
    config by its suffix: its key names pass through the snapshot's redaction as every
    string does, and the token (GitHub's documented ``ghp_`` format) is never written."""
    token = "ghp_" + "k3J9xQ2mZ7vB4nR8tW1yH6pL0sD5fG2aC9eU"
    creds = tmp_path / "auth.json"
    creds.write_text(json.dumps({"auths": {token: {"scopes": "repo"}}}))
    app = write_script(tmp_path, "login.py", """
        import json, sys
        print(len(json.load(open(sys.argv[1]))["auths"]))
        """)
    out = tmp_path / "a.toml"
    snap = run([sys.executable, str(app), str(creds)], env=base_env, cwd=tmp_path,
               output=out).snapshot
    keys = snap["runtime"]["data_files"][str(creds)]["keys"]
    assert "auths" in keys and token not in keys, keys
    assert token not in out.read_text()
