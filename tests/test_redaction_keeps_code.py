"""Redaction never rewrites text that holds no secret (issue 37, class 7): a removed line of a
code diff, ``-DEFAULT_TOKEN = None``, read as the option ``-DEFAULT_TOKEN`` with the value
``=``, was stored as ``-DEFAULT_TOKEN <redacted:...> None``. Tested on a real repository's diff
and output, beside a real secret in the same diff that must still be hidden."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from runsnap.snapshot import load
from tests.conftest import make_repo, run_runsnap

#: Lines of code that name a secret and hold none (operators, empty values, code values).
CODE = (
    "DEFAULT_TOKEN = None",
    "API_KEY: str = ''",
    "PASSWORD := -1",
    "SECRET_KEY -> None",
    "AUTH_TOKEN == other",
    "--token = ${TOKEN}",
)


def test_code_that_holds_no_secret_is_kept_and_a_secret_beside_it_is_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"settings.py": "\n".join(CODE) + "\n"})
    secret = "ghp_" + "R8mQ2xLk7VpN4tZc9WbH3sYj6FdA1gE5uK0o"
    (repo / "settings.py").write_text(f"HF_TOKEN = '{secret}'\n")  # every CODE line removed
    lines = ";".join(f"print({line!r})" for line in CODE)
    done = run_runsnap("capture", "-o", str(tmp_path / "s.toml"), "--", sys.executable, "-c",
                       lines, cwd=repo)
    assert done.returncode == 0, done.stderr
    snap = load(tmp_path / "s.toml")
    diff = snap["git"]["repos"]["proj"]["diff"]
    for line in CODE:
        assert f"-{line}\n" in diff, line
    assert secret not in (tmp_path / "s.toml").read_text()
    assert "+HF_TOKEN = '<redacted:" in diff
    assert snap["outcome"]["stdout"]["tail"] == list(CODE)


def test_a_key_error_keeps_the_missing_key_and_hides_a_token(tmp_path: Path) -> None:
    """``KeyError: 'max-autotune-no-cudagraph'`` was read as ``KEY*`` = a credential-looking
    value: the missing key was fingerprinted in the error, the traceback and every place the
    value reappeared (the environment variable that held it among them)."""
    mode = "max-autotune-no-cudagraph"
    secret = "ghp_" + "R8mQ2xLk7VpN4tZc9WbH3sYj6FdA1gE5uK0o"
    code = ("import os, sys; print('token', os.environ['GH_TOKEN'], file=sys.stderr); "
            "modes = {'default': 1}; modes[os.environ['ENGINE_COMPILE_MODE']]")
    env = {"ENGINE_COMPILE_MODE": mode, "GH_TOKEN": secret}
    done = run_runsnap("capture", "-o", str(tmp_path / "s.toml"), "--", sys.executable, "-c", code,
                       cwd=tmp_path, env={**os.environ, **env})
    assert done.returncode == 1, done.stderr
    text = (tmp_path / "s.toml").read_text()
    assert secret not in text
    snap = load(tmp_path / "s.toml")
    assert snap["outcome"]["first_error"] == f"KeyError: '{mode}'"
    assert snap["env"]["vars"]["ENGINE_COMPILE_MODE"] == mode


def test_omegaconfs_full_key_line_keeps_the_key_the_error_is_about(tmp_path: Path) -> None:
    """OmegaConf prints ``full_key: warmup_step`` under its ConfigKeyError (omegaconf 2.3,
    ``_utils.format_and_raise``; the lines below as fresh14 ``omegaconf-local-misspelt-key``
    printed them): ``full_key`` read as ``*_KEY``, a credential's name, and the misspelt key
    was fingerprinted in the error and everywhere it reappeared. A token there is still hidden
    by its shape."""
    secret = "ghp_" + "R8mQ2xLk7VpN4tZc9WbH3sYj6FdA1gE5uK0o"
    lines = ["omegaconf.errors.ConfigKeyError: Key 'warmup_step' not in 'TrainConfig'",
             "    full_key: warmup_step", "    object_type=TrainConfig",
             f"    full_key: {secret}"]
    code = "import sys; " + "; ".join(f"print({line!r}, file=sys.stderr)" for line in lines) \
        + "; sys.exit(1)"
    done = run_runsnap("capture", "-o", str(tmp_path / "s.toml"), "--", sys.executable, "-c", code,
                       cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    text = (tmp_path / "s.toml").read_text()
    assert secret not in text
    snap = load(tmp_path / "s.toml")
    assert snap["outcome"]["first_error"] == lines[0]
    assert "    full_key: warmup_step" in snap["outcome"]["stderr"]["tail"]
