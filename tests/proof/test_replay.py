"""``runsnap replay SNAPSHOT``: the recorded launch again, captured, with what cannot be restored
said before it starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runsnap.experiments.replaying import restore
from runsnap.snapshot import load
from tests.conftest import git, make_repo
from tests.proof.conftest import capture, child, runsnap

TOKEN = "hf_" + "Q" * 34
OTHER_TOKEN = "hf_" + "Z" * 34


def _printer(tmp_path: Path) -> Path:
    return child(tmp_path / "show_env.py",
                 "print(json.dumps({k: os.environ.get(k) for k in sys.argv[1:]}))\n"
                 "sys.exit(int(os.environ.get('EXIT_WITH', '0')))\n")


def _env(**changes: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def test_replay_restores_argv_cwd_and_the_exact_environment(tmp_path: Path) -> None:
    prog = _printer(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    original = capture(tmp_path / "orig.toml", ["python3", str(prog), "FOO", "BAR", "PWDX"],
                       {"FOO": "1", "BAR": None, "EXIT_WITH": "3"})
    os.chdir(work)  # replay runs in the recorded cwd, not here
    proc = runsnap("replay", str(original), "-o", str(tmp_path / "again.toml"),
                   env=_env(FOO=None, BAR="leaked", EXIT_WITH=None))
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0]) == {"FOO": "1", "BAR": None, "PWDX": None}
    again = load(tmp_path / "again.toml")
    assert again["command"]["cwd"] == str(tmp_path)
    assert again["outcome"]["exit_status"] == 3
    # The replay diffs as the same launch: the same environment, command and cwd.
    diff = runsnap("diff", str(original), str(tmp_path / "again.toml"), "--format", "json")
    sections = {d["section"] for d in json.loads(diff.stdout)["differences"]}
    assert not sections & {"env", "command"}, diff.stdout


def test_extra_arguments_are_appended(tmp_path: Path) -> None:
    prog = _printer(tmp_path)
    original = capture(tmp_path / "orig.toml", ["python3", str(prog), "A"], {"A": "x", "B": "y"})
    proc = runsnap("replay", str(original), "-o", str(tmp_path / "r.toml"), "--", "B")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0]) == {"A": "x", "B": "y"}


@pytest.mark.slow
def test_a_secret_is_taken_from_here_only_when_its_fingerprint_matches(tmp_path: Path) -> None:
    prog = _printer(tmp_path)
    original = capture(tmp_path / "orig.toml", ["python3", str(prog), "HF_TOKEN"],
                       {"HF_TOKEN": TOKEN})
    assert TOKEN not in original.read_text()
    ok = runsnap("replay", str(original), "-o", str(tmp_path / "r1.toml"),
                 env=_env(HF_TOKEN=TOKEN))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout.splitlines()[0]) == {"HF_TOKEN": TOKEN}
    assert "env HF_TOKEN: secret taken from this environment" in ok.stderr
    assert TOKEN not in ok.stderr and TOKEN not in (tmp_path / "r1.toml").read_text()
    for env in (_env(HF_TOKEN=OTHER_TOKEN), _env(HF_TOKEN=None)):
        refused = runsnap("replay", str(original), env=env)
        assert refused.returncode == 2
        assert refused.stderr.startswith("runsnap: cannot restore the snapshot's secrets: "
                                         "env HF_TOKEN: ")
        assert "--allow-missing-secrets" in refused.stderr and refused.stdout == ""
        assert OTHER_TOKEN not in refused.stderr
    anyway = runsnap("replay", str(original), "--allow-missing-secrets",
                     "-o", str(tmp_path / "r2.toml"), env=_env(HF_TOKEN=OTHER_TOKEN))
    assert anyway.returncode == 0
    assert json.loads(anyway.stdout.splitlines()[0]) == {"HF_TOKEN": None}


def test_a_secret_in_argv_is_restored_from_a_variable_with_its_fingerprint(tmp_path: Path) -> None:
    prog = child(tmp_path / "args.py", "print(json.dumps(sys.argv[1:]))\n")
    original = capture(tmp_path / "orig.toml", ["python3", str(prog), "--hf-token", TOKEN])
    restored = restore(load(original), environ={"MY_TOKEN": TOKEN})
    assert restored.spec.argv[-1] == TOKEN and restored.taken == ("argv[3]",)
    missing = restore(load(original), environ={"MY_TOKEN": OTHER_TOKEN})
    assert missing.missing and missing.spec.argv[-1] != TOKEN


def test_what_cannot_be_restored_is_said_and_strict_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"serve.py": "print('v1')\n"})
    os.chdir(repo)  # the launch's working directory is the repository
    original = capture(tmp_path / "orig.toml", ["python3", "serve.py"])
    (repo / "serve.py").write_text("print('v2')\n")
    git(repo, "commit", "-qam", "second")
    strict = runsnap("replay", "--strict", str(original))
    assert strict.returncode == 2
    assert strict.stderr.startswith("runsnap: --strict: ") and "git" in strict.stderr
    assert strict.stdout == ""
    proc = runsnap("replay", str(original), "-o", str(tmp_path / "r.toml"))
    assert proc.returncode == 0
    assert "cannot restore" in proc.stderr and ".commit" in proc.stderr
    assert proc.stdout == "v2\n"  # the code that is here now ran


def test_bad_input_is_one_line_and_status_2(tmp_path: Path) -> None:
    proc = runsnap("replay", str(tmp_path / "missing.toml"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    context = capture(tmp_path / "ctx.toml", [], run=False)
    proc = runsnap("replay", str(context))
    assert proc.returncode == 2 and "no command" in proc.stderr


def test_a_new_login_shell_is_no_missing_secret(tmp_path: Path) -> None:
    # the login session and the terminal pane are ids of this login, not secrets: a replay from
    # another login shell starts (it did refuse: "cannot restore the snapshot's secrets")
    prog = _printer(tmp_path)
    original = capture(tmp_path / "orig.toml", ["python3", str(prog), "XDG_SESSION_ID"],
                       {"XDG_SESSION_ID": "c7", "TMUX_PANE": "%3",
                        "XDG_SESSION_COOKIE": "0f" * 16 + "-1700000000.1-123456"})
    recorded = load(original)["env"]["vars"]
    assert (recorded["XDG_SESSION_ID"], recorded["TMUX_PANE"]) == ("c7", "%3")
    assert not recorded["XDG_SESSION_COOKIE"].startswith("<redacted:")
    again = runsnap("replay", str(original), "-o", str(tmp_path / "r.toml"),
                    env=_env(XDG_SESSION_ID="c12", TMUX_PANE="%0", XDG_SESSION_COOKIE="other"))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[0]) == {"XDG_SESSION_ID": "c7"}
