"""Reads in their place (runsnap/diffing/ambient.py): what nearly every process of a stack
reads at start-up (OpenBLAS's and OpenMP's threads, where commands are found) ranks below
the program's own choices. Each pair is two real traced launches of a numpy program, in two
shells that differ as real ones do."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.diffing.conftest import Capture, write_script

TRAIN = """
    import argparse, math
    import numpy as np

    parser = argparse.ArgumentParser()
    parser.add_argument("--learning_rate", type=float, default=0.1)
    lr = parser.parse_args().learning_rate
    w = np.ones(4)
    for step in range(20):
        w = w - lr * 2 * w
    loss = float(np.sum(w * w))
    print(f"loss={loss:.6g}")
    if not math.isfinite(loss) or loss > 1e3:
        raise SystemExit("training diverged")
    """


def test_threads_read_at_start_up_rank_below_the_programs_option(launched: Capture,
                                                                  tmp_path: Path) -> None:
    """OpenBLAS reads OMP_NUM_THREADS when numpy loads it, in every process; the option the
    program was given is what it decided with. The option ranks first, the threads are
    incidental, and the shell's other PATH (the same python resolved) is too."""
    pytest.importorskip("numpy")
    app = write_script(tmp_path, "train.py", TRAIN)
    extra = tmp_path / "bin"
    extra.mkdir()
    path = os.environ.get("PATH", os.defpath)
    a = launched(env={"OMP_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": "4", "PATH": path},
                 argv=[sys.executable, str(app), "--learning_rate", "0.1"])
    b = launched(env={"OMP_NUM_THREADS": "8", "OPENBLAS_NUM_THREADS": "8",
                      "PATH": f"{extra}:{path}"},
                 argv=[sys.executable, str(app), "--learning_rate", "2.0"])
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert report.candidates[0].key == "--learning_rate", report.verdict()
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PATH"):
        d = ranked.get(name)
        if d is None:
            continue  # not read at all in this build: unread, below everything
        assert d.evidence_kind == "incidental", (name, d.reason)
        assert d.score < ranked["--learning_rate"].score
    assert "the same executables" in ranked["PATH"].reason


def test_a_read_in_the_programs_own_function_is_the_programs(launched: Capture,
                                                             tmp_path: Path) -> None:
    """The program sizes its own pool from OMP_NUM_THREADS and fails on it: its read, on the
    failing path, is no start-up read."""
    app = write_script(tmp_path, "pool.py", """
        import os

        def pool():
            return int(os.environ["OMP_NUM_THREADS"])

        print("workers=", pool())
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={"OMP_NUM_THREADS": "4"}, argv=argv)
    b = launched(env={"OMP_NUM_THREADS": "4,2"}, argv=argv)
    report = compare(a, b)
    top = report.candidates[0]
    assert (top.key, top.evidence_kind, report.confidence) == (
        "OMP_NUM_THREADS", "failing-path", "confident"), report.verdict()



#: transformers/utils/logging.py's own lines (5.x, _configure_library_root_logger, run when
#: transformers is imported), in an installed stand-in: transformers is not installed here.
HFLOG = """
import logging, os

library_root_logger = logging.getLogger("hflog")


def _configure_library_root_logger():
    ci = os.getenv("CI")
    is_ci = ci is not None and ci.upper() in {"1", "ON", "YES", "TRUE"}
    library_root_logger.propagate = is_ci


_configure_library_root_logger()
"""

#: One more setting the stand-in reads at its import: which kernels it runs.
KERNELS = 'KERNELS = os.environ.get("HFLOG_KERNELS", "portable")\n'


def _hflog(tmp_path: Path, extra: str = "") -> Path:
    """A venv with the stand-in installed (its own copy: a package, not the program's), its
    module ending with ``extra``."""
    import venv

    from tests.conftest import pip_install

    src = tmp_path / "src"
    (src / "hflog").mkdir(parents=True)
    (src / "hflog" / "__init__.py").write_text(HFLOG + extra)
    (src / "setup.py").write_text("from setuptools import setup\n"
                                  "setup(name='hflog', version='1.0', packages=['hflog'])\n")
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    pip_install(python, "--no-deps", str(src), tmp=tmp_path)
    return python


def _lr_pair(python: Path, app: Path, tmp_path: Path, base_env: dict[str, str]) -> tuple[Any, Any]:
    """A launched with ``--lr 0.1``; B with ``--lr 0.2`` and ``HFLOG_KERNELS=fused``."""
    a, b = (run([str(python), str(app), "--lr", lr], env={**base_env, **env}, cwd=tmp_path,
                output=tmp_path / f"{name}.toml").snapshot
            for name, lr, env in (("a", "0.1", {}), ("b", "0.2", {"HFLOG_KERNELS": "fused"})))
    return a, b


LOGGED = """
    import os
    import hflog

    lr = float(os.environ.get("TRAIN_LR", "0.1"))
    print(f"loss={3 * lr:.4f}")
    """


def test_a_ci_runners_ci_read_at_a_librarys_import_decides_nothing_here(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """A GitLab CI job sets CI=true; transformers' logging reads it when imported (whether
    its logger propagates), as torch's configs and loguru do: a CI convention every process
    takes, incidental, and the learning rate the program read is the one cause the runs show
    (a library's setting at 83 before, undecided beside it)."""
    python = _hflog(tmp_path)
    app = write_script(tmp_path, "fit.py", LOGGED)
    a = run([str(python), str(app)], env={**base_env, "TRAIN_LR": "0.1", "CI": "true"},
            cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    b = run([str(python), str(app)], env={**base_env, "TRAIN_LR": "0.2"}, cwd=tmp_path,
            output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    ci = next(d for d in report.counted if d.key == "CI")
    assert ci.evidence_kind == "incidental" and "CI conventions" in ci.reason, ci.reason
    assert (report.candidates[0].key, report.confidence) == ("TRAIN_LR", "confident"), \
        report.verdict()


def test_a_launch_option_beside_library_settings_only_is_the_cause(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """Two healthy runs, their loss apart: B was launched with another --lr, and its shell
    sets a kernel choice the library reads at its import (a start-up setting, 83, no word of
    the runs naming it). The launch decides: confident on the option (it was "the only
    candidate, without evidence from the runs", undecided)."""
    python = _hflog(tmp_path, KERNELS)
    app = write_script(tmp_path, "fit.py", """
        import argparse
        import hflog

        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float, default=0.1)
        print(f"loss={3 * p.parse_args().lr:.4f}")
        """)
    a, b = _lr_pair(python, app, tmp_path, base_env)
    report = compare(a, b)
    cache = next(d for d in report.counted if d.key == "HFLOG_KERNELS")
    assert (cache.evidence_kind, cache.score) == ("read", 83), cache.reason
    assert (report.candidates[0].key, report.confidence) == ("--lr", "confident"), \
        report.verdict()


def test_a_setting_read_at_import_stays_a_setting_when_workers_are_forked(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """The program imports the library (which reads HFLOG_KERNELS at its import) and forks
    two workers, as a DataLoader or ``datasets.map(num_proc=2)`` does: the workers inherit the
    import and read nothing again. The read is still the library's start-up setting (83) in
    every process, not the program's read (92, first, above the option it was launched
    with)."""
    python = _hflog(tmp_path, KERNELS)
    app = write_script(tmp_path, "fit.py", """
        import argparse, multiprocessing as mp
        import hflog

        def work(n):
            return n * n

        if __name__ == "__main__":
            p = argparse.ArgumentParser()
            p.add_argument("--lr", type=float, default=0.1)
            lr = p.parse_args().lr
            pool = mp.get_context("fork").Pool(2)
            total = sum(pool.map(work, range(8)))
            pool.close()  # both workers end on their own (the with block's terminate() can
            pool.join()   # stop one before it ever ran, on a loaded machine)
            print(f"loss={lr * total:.4f}")
        """)
    a, b = _lr_pair(python, app, tmp_path, base_env)
    assert sum(1 for p in b["runtime"]["processes"] if p.get("how") == "fork") >= 2
    report = compare(a, b)
    kernels = next(d for d in report.counted if d.key == "HFLOG_KERNELS")
    assert (kernels.evidence_kind, kernels.score) == ("read", 83), kernels.reason
    assert report.counted[0].key == "--lr", report.verdict()


def test_the_programs_own_edit_beside_library_settings_only_is_the_cause(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """Two healthy runs, their loss apart: between them the program's collate.py was edited
    without a commit (labels no longer masked at padding), and B's shell sets a kernel choice
    the library reads at its import (83, no word of the runs naming it). The edited module the
    run imported is the program's own code, as much what it was launched with as an option:
    confident on it (undecided beside the setting before)."""
    from tests.conftest import make_repo

    python = _hflog(tmp_path)
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (site / "hflog" / "__init__.py").write_text(
        HFLOG + 'KERNELS = os.environ.get("HFLOG_KERNELS", "portable")\n')
    masked = "def labels(ids):\n    return [-100 if i == 0 else i for i in ids]\n"
    proj = make_repo(tmp_path / "proj", {
        "collate.py": masked,
        "fit.py": "import hflog\nfrom collate import labels\n\n"
                  "ids = [5, 7, 0, 0]\nkept = [x for x in labels(ids) if x != -100]\n"
                  "print(f'loss={sum(kept) / len(kept):.4f}')\n"})
    a = run([str(python), "fit.py"], env={**base_env}, cwd=proj,
            output=tmp_path / "a.toml").snapshot
    (proj / "collate.py").write_text("def labels(ids):\n    return list(ids)\n")
    b = run([str(python), "fit.py"], env={**base_env, "HFLOG_KERNELS": "fused"}, cwd=proj,
            output=tmp_path / "b.toml").snapshot
    assert a["outcome"]["metrics"] != b["outcome"]["metrics"]
    report = compare(a, b)
    kernels = next(d for d in report.counted if d.key == "HFLOG_KERNELS")
    assert (kernels.evidence_kind, kernels.score) == ("read", 83), kernels.reason
    top = report.candidates[0]
    assert (top.section, top.key.rpartition(": ")[2]) == ("git", "collate.py"), report.verdict()
    assert report.confidence == "confident", report.verdict()
    assert report.because.startswith("the only input that differs"), report.because


def test_a_reporting_variable_the_program_read_is_no_candidate_beside_its_limit(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """A trainer takes its arguments from ``FIT_TRAINER_*`` variables, as Lightning's
    ``parse_env_variables`` does (every one of its arguments looked up by name): one shell
    turns the progress bar off, the other limits the batches to a quarter. Both read while the
    program ran; the progress bar says only how the program reports: incidental, and the
    limit, whose factor the step count moved by, is the cause (undecided between the two
    before)."""
    app = write_script(tmp_path, "fit.py", """
        import os

        ARGS = {"limit_train_batches": 1.0, "enable_progress_bar": True, "max_epochs": 1}
        for arg, default in ARGS.items():
            raw = os.environ.get(f"FIT_TRAINER_{arg.upper()}")
            if raw is not None:
                ARGS[arg] = type(default)(float(raw)) if not isinstance(default, bool) \\
                    else raw not in ("0", "false")
        steps = int(32 * ARGS["limit_train_batches"])
        for i in range(steps):
            if ARGS["enable_progress_bar"]:
                print(f"step {i + 1}/{steps}", end="\\r")
        print(f"\\nsteps={steps}")
        """)
    a = run([sys.executable, str(app)], env={**base_env, "FIT_TRAINER_ENABLE_PROGRESS_BAR": "0"},
            cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    b = run([sys.executable, str(app)],
            env={**base_env, "FIT_TRAINER_LIMIT_TRAIN_BATCHES": "0.25"},
            cwd=tmp_path, output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    bar = next(d for d in report.counted if d.key == "FIT_TRAINER_ENABLE_PROGRESS_BAR")
    assert bar.evidence_kind == "incidental", bar.reason
    assert "how the program reports" in bar.reason
    assert (report.candidates[0].key, report.confidence) == (
        "FIT_TRAINER_LIMIT_TRAIN_BATCHES", "confident"), report.verdict()


def test_a_thread_setting_a_library_reads_while_the_program_runs_decides_nothing(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """A dataset library's ``map`` looks at TOKENIZERS_PARALLELISM when it starts worker
    processes (as datasets' ``Dataset.map`` does with ``num_proc``): a read while the program
    ran, in the library's function. The shells set it apart; it decides how many threads a
    tokenizer uses, not the tokens: incidental, and the program's --num-proc is the one
    candidate (they tied, the setting first, before)."""
    python = _hflog(tmp_path, extra=(
        "\ndef map_rows(rows, num_proc=1):\n"
        "    if num_proc > 1:\n"
        "        os.environ.get('TOKENIZERS_PARALLELISM')\n"
        "    return [r * 2 for r in rows][: len(rows) // num_proc]\n"))
    app = write_script(tmp_path, "dedup.py", """
        import argparse
        import hflog

        p = argparse.ArgumentParser()
        p.add_argument("--num-proc", type=int, default=1)
        rows = hflog.map_rows(list(range(240)), p.parse_args().num_proc)
        print(f"unique_ids={len(set(rows))}")
        """)
    a = run([str(python), str(app)], env={**base_env, "TOKENIZERS_PARALLELISM": "false"},
            cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    b = run([str(python), str(app), "--num-proc", "2"],
            env={**base_env, "TOKENIZERS_PARALLELISM": "true"}, cwd=tmp_path,
            output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    tok = next(d for d in report.counted if d.key == "TOKENIZERS_PARALLELISM")
    assert tok.evidence_kind == "incidental" and "how many threads" in tok.reason, tok.reason
    assert [d.key for d in report.candidates] == ["--num-proc"], report.verdict()


def test_a_reporting_variable_seen_only_in_a_bulk_copy_is_incidental(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """A download manager copies the whole environment for its workers (datasets'
    ``DownloadManager``); no process read TRANSFORMERS_VERBOSITY from it. Whoever would, it
    says how loudly to report: incidental, not 'neither read nor unread'."""
    app = write_script(tmp_path, "fetch.py", """
        import os

        def download(urls):
            env = dict(os.environ)  # handed to workers that were never started here
            return [u.upper() for u in urls], len(env) > 0

        print(download(["a", "b"]))
        """)
    a = run([sys.executable, str(app)], env={**base_env, "TRANSFORMERS_VERBOSITY": "warning"},
            cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    b = run([sys.executable, str(app)], env=base_env, cwd=tmp_path,
            output=tmp_path / "b.toml").snapshot
    found = compare(a, b).differences
    verb = next(d for d in found if d.key == "TRANSFORMERS_VERBOSITY")
    assert verb.evidence_kind == "incidental" and "bulk copy" in verb.reason, verb.reason
