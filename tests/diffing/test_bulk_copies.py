"""A copy of the whole environment (``os.environ.copy()``) that nothing hands to a child:
accelerate's ``clear_environment`` saves the environment this way and writes it back. The
variables in it are neither read nor unread on a Python trace alone: a child given the copy
reads its own. A family only native libraries read (``NCCL_*``) is read from the live
environment of the process that loads the library, never from a copy: with native reads
observed in both runs and none of it, it is unread, and it is no candidate beside the
program's own variable."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.diffing import compare
from runsnap.render.diff import render
from tests.diffing.conftest import Capture, write_script

PROGRAM = """
    import contextlib, os

    @contextlib.contextmanager
    def clear_environment():
        saved = os.environ.copy()
        os.environ.clear()
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)

    with clear_environment():
        pass
    steps = int(os.environ.get("FIT_ACCUM", "1"))
    print(f"loss={1.0 / steps:.4f}")
    """


def test_a_native_family_seen_only_in_a_saved_copy_is_unread(launched: Capture,
                                                              tmp_path: Path) -> None:
    app = write_script(tmp_path, "fit.py", PROGRAM)
    argv = [sys.executable, str(app)]
    a = launched(env={"NCCL_DEBUG": "WARN", "MY_TAG": "a"}, argv=argv)
    b = launched(env={"NCCL_DEBUG": "INFO", "MY_TAG": "b", "FIT_ACCUM": "4"}, argv=argv)
    report = compare(a, b)
    ranked = {d.key: d for d in (*report.counted, *report.hidden)}
    nccl = ranked["NCCL_DEBUG"]
    if not all(str(s["runtime"].get("native", "")).startswith("observed") for s in (a, b)):
        # no interposer here (a static interpreter): the copy may reach a child unseen
        assert "neither read nor unread" in nccl.reason, nccl.reason
        return
    assert nccl.evidence_kind == "unread", nccl.reason
    assert "copied in bulk at" in nccl.reason and "never a copy" in nccl.reason
    # a variable of no native family stays neither read nor unread: a dict lookup on the
    # copy is not traced
    assert "neither read nor unread" in ranked["MY_TAG"].reason, ranked["MY_TAG"].reason
    assert report.candidates[0].key == "FIT_ACCUM", report.verdict()
    assert all(d.key != "NCCL_DEBUG" for d in report.candidates)


def test_activation_variables_of_one_environment_choose_nothing(launched: Capture,
                                                                tmp_path: Path) -> None:
    """One shell has a conda environment activated, the other not, and both runs ran the
    same interpreter: ``CONDA_PREFIX`` and ``CONDA_DEFAULT_ENV`` did not choose the packages
    (``[packages] prefix`` is one), so they are no "another Python environment" and no
    candidate beside the option that differs."""
    app = write_script(tmp_path, "fit.py", """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--accum", type=int, default=1)
        print(f"loss={1.0 / p.parse_args().accum:.4f}")
        """)
    a = launched(env={}, argv=[sys.executable, str(app)])
    b = launched(env={"CONDA_PREFIX": "/opt/conda/envs/train", "CONDA_DEFAULT_ENV": "train",
                      "CONDA_SHLVL": "2"}, argv=[sys.executable, str(app), "--accum", "4"])
    report = compare(a, b)
    ranked = {d.key: d for d in (*report.counted, *report.hidden)}
    for name in ("CONDA_PREFIX", "CONDA_DEFAULT_ENV"):
        assert ranked[name].score <= 40 and "same Python environment" in ranked[name].reason, \
            ranked[name]
    assert "another Python environment" not in render(report, "text", width=80)
    assert (report.confidence, report.candidates[0].key) == ("confident", "--accum"), \
        report.verdict()


SETTINGS = """
    import os
    env = {k.lower(): v for k, v in os.environ.items()}  # as pydantic-settings reads them
    steps = int(env.get("fit_steps", "10"))
    wd = float(env.get("fit_optim__weight_decay", "0"))
    print(f"final_loss={1.0 / steps + wd:.4f}")
    """


def test_a_variable_of_the_programs_own_prefix_outranks_start_up_reads(
        launched: Capture, tmp_path: Path) -> None:
    """A settings library copies the environment and looks its fields up in the copy, which
    no trace sees. Both shells launch with FIT_STEPS=200; B also sets FIT_OPTIM__WEIGHT_DECAY:
    one of the FIT_* settings the program's launches carry, its own configuration (80), above
    the shells' other variables. JPY_SESSION_NAME, in one shell only, is no such family."""
    app = write_script(tmp_path, "train.py", SETTINGS)
    argv = [sys.executable, str(app)]
    a = launched(env={"FIT_STEPS": "200", "OMP_PROC_BIND": "close"}, argv=argv)
    b = launched(env={"FIT_STEPS": "200", "FIT_OPTIM__WEIGHT_DECAY": "0.5",
                      "JPY_SESSION_NAME": "/home/u/nb.ipynb"}, argv=argv)
    report = compare(a, b)
    ranked = {d.key: d for d in (*report.counted, *report.hidden)}
    wd = ranked["FIT_OPTIM__WEIGHT_DECAY"]
    said = " ".join((wd.reason, *wd.evidence))
    assert wd.score == 80 and "FIT_* settings" in said and "FIT_STEPS" in said, wd
    assert ranked["JPY_SESSION_NAME"].score < 60, ranked["JPY_SESSION_NAME"]
    assert report.candidates[0].key == "FIT_OPTIM__WEIGHT_DECAY", report.verdict()
    assert report.counted[0].key == "FIT_OPTIM__WEIGHT_DECAY", report.verdict()


def test_a_packages_own_setting_read_from_its_copy_is_read(tmp_path: Path,
                                                           base_env: dict[str, str]) -> None:
    """An installed server copies the environment at start (gunicorn's ``Config`` keeps
    ``os.environ.copy()``) and takes its own GUNICORN_CMD_ARGS-like setting from the copy:
    by its name, the setting is the package's own, read from that copy; the shells' other
    variables in the copy stay neither read nor unread."""
    import venv

    from runsnap.capturing import run
    from tests.conftest import pip_install

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    src = tmp_path / "src"
    (src / "servelib").mkdir(parents=True)
    (src / "servelib" / "__init__.py").write_text(
        "import os, sys\n"
        "def main():\n"
        "    env = os.environ.copy()\n"
        "    args = env.get('SERVELIB_CMD_ARGS', '').split()\n"
        "    if '--timeout' in args and int(args[args.index('--timeout') + 1]) < 5:\n"
        "        sys.exit('[CRITICAL] worker exited' if env.get('SERVELIB_QUIET') else\n"
        "                 '[CRITICAL] WORKER TIMEOUT')\n"
        "    print('served')\n")
    (src / "setup.py").write_text("from setuptools import setup\n"
                                  "setup(name='servelib', version='1.0', packages=['servelib'])\n")
    pip_install(python, "--no-deps", str(src), tmp=tmp_path)
    argv = [str(python), "-c", "import servelib; servelib.main()"]
    a = run(argv, env={**base_env, "SERVELIB_CMD_ARGS": "--log-level info"}, cwd=tmp_path,
            output=tmp_path / "a.toml").snapshot
    b = run(argv, env={**base_env, "SERVELIB_CMD_ARGS": "--timeout 2", "SHELL_TAG": "b"},
            cwd=tmp_path, output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    ranked = {d.key: d for d in (*report.counted, *report.hidden)}
    own = ranked["SERVELIB_CMD_ARGS"]
    # the error spells the option B's value holds (``--timeout``) its own way: quoted
    assert (own.evidence_kind, own.quoted) == ("failing-path", True), own
    assert "names B's value --timeout, which B read" in own.reason, own.reason
    assert "neither read nor unread" in ranked["SHELL_TAG"].reason, ranked["SHELL_TAG"]
    assert (report.counted[0].key, report.confidence) == ("SERVELIB_CMD_ARGS", "confident"), \
        report.verdict()
    # an error that says nothing of the option: read from the copy, and no more
    b = run(argv, env={**base_env, "SERVELIB_CMD_ARGS": "--timeout 2", "SHELL_TAG": "b",
                       "SERVELIB_QUIET": "1"},
            cwd=tmp_path, output=tmp_path / "b2.toml").snapshot
    report = compare(a, b)
    own = next(d for d in report.counted if d.key == "SERVELIB_CMD_ARGS")
    assert own.evidence_kind == "read" and "copied in bulk by servelib" in own.reason, own
    assert not own.quoted and report.confidence == "undecided", report.verdict()
