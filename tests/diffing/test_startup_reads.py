"""Start-up reads told from the data, not from a list of names (runsnap/diffing/ambient.py,
``startup_reads``): the getenv interposer says when native code read a variable (while a
library was loaded, while Python imported a module, or while the program ran).
Each pair is two real traced launches; the libraries are built here with the C compiler and
loaded as torch loads its own (``ctypes.CDLL``: a ``dlopen``, the library's constructor run by
the dynamic loader), and the package is a real installed one (fsspec)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.diffing.ambient import CEILING
from tests.conftest import pip_install
from tests.diffing.conftest import Capture, shared_library, write_script

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

# A runtime library that reads its settings in its constructor, as libgomp's initialize_env
# reads OMP_* and c10 reads TORCH_SHOW_CPP_STACKTRACES when torch loads; and one function
# that reads a variable each time it is called (a decision while the program runs).
LIBRARY = r"""
#include <stdlib.h>
static const char *mode;
__attribute__((constructor)) static void init(void) { mode = getenv("STACKLIB_TRACEBACKS"); }
const char *stacklib_mode(void) { return mode ? mode : "0"; }
const char *stacklib_algo(void) { const char *v = getenv("STACKLIB_ALGO"); return v ? v : "ring"; }
"""

PROGRAM = """
    import ctypes, os, sys

    lib = ctypes.CDLL(sys.argv[1])
    lib.stacklib_algo.restype = ctypes.c_char_p

    def train():
        lr = float(os.environ.get("TRAIN_LR", "0.1"))
        algo = lib.stacklib_algo().decode()
        print(f"algo={algo} loss={3 * lr:.4f}")

    train()
    """


@pytest.fixture
def stacklib(tmp_path: Path) -> Path:
    return shared_library(tmp_path, "stacklib", LIBRARY)


@needs_cc
def test_a_library_constructors_read_ranks_below_the_programs_read(
        launched: Capture, tmp_path: Path, stacklib: Path) -> None:
    """Before: both variables were "read" (the constructor's read 92, beside the program's
    91), undecided between them. The interposer now sees the constructor's read while the
    library loaded, in every process of both runs, and never again: incidental, below the
    program's own read, which is then the one cause the runs show."""
    app = write_script(tmp_path, "train.py", PROGRAM)
    argv = [sys.executable, str(app), str(stacklib)]
    a = launched(env={"TRAIN_LR": "0.1", "STACKLIB_TRACEBACKS": "0"}, argv=argv)
    b = launched(env={"TRAIN_LR": "0.2", "STACKLIB_TRACEBACKS": "1"}, argv=argv)
    assert a["runtime"]["native"] == "observed"
    assert "STACKLIB_TRACEBACKS" in a["runtime"]["native_startup"]
    assert "STACKLIB_ALGO" not in a["runtime"]["native_startup"]
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert (report.candidates[0].key, report.confidence) == ("TRAIN_LR", "confident"), \
        report.verdict()
    d = ranked["STACKLIB_TRACEBACKS"]
    assert d.evidence_kind == "incidental" and d.score <= CEILING, (d.score, d.reason)
    assert "read only at start-up, in every process of both runs" in d.reason


@needs_cc
def test_a_native_read_while_the_program_runs_stays_a_decision(
        launched: Capture, tmp_path: Path, stacklib: Path) -> None:
    """The library's function reads STACKLIB_ALGO each time the program calls it: a read
    while the program ran (no loader, no import on the stack), read evidence as before,
    undecided beside the program's own read."""
    app = write_script(tmp_path, "train.py", PROGRAM)
    argv = [sys.executable, str(app), str(stacklib)]
    a = launched(env={"TRAIN_LR": "0.1", "STACKLIB_ALGO": "ring"}, argv=argv)
    b = launched(env={"TRAIN_LR": "0.2", "STACKLIB_ALGO": "tree"}, argv=argv)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert ranked["STACKLIB_ALGO"].evidence_kind == "read", ranked["STACKLIB_ALGO"].reason
    assert report.confidence == "undecided"
    assert {d.key for d in report.candidates} == {"TRAIN_LR", "STACKLIB_ALGO"}


def _batches(launched: Capture, app: Path, name: str, a: str, b: str) -> Any:
    """The diff of ``app`` launched with ``--batch 8`` and ``name=a``, then ``--batch 16`` and
    ``name=b``."""
    return compare(launched(env={name: a}, argv=[sys.executable, str(app), "--batch", "8"]),
                   launched(env={name: b}, argv=[sys.executable, str(app), "--batch", "16"]))


def _conf(folder: Path) -> str:
    """An fsspec config folder with one file in it, which fsspec's import opens and reads:
    the folder's content came in (an empty or missing one decides nothing)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conf.json").write_text('{"file": {"auto_mkdir": true}}')
    return str(folder)


def test_a_packages_setting_read_at_import_ranks_below_the_option_and_is_no_candidate(
        launched: Capture, tmp_path: Path) -> None:
    """fsspec reads FSSPEC_CONFIG_DIR in the body of fsspec/config.py when it is imported,
    in every process. A package's settings module reads its decisions so (huggingface_hub's
    ``constants.py``): such a read keeps ``read`` evidence and stays listed, but, on no
    failing path, ranks below the option the program decides with (before: 91, first, above
    the option's 86) and is no candidate beside it: the option, the one input the program was
    launched with that differs, beside a library's start-up setting only, is the cause."""
    pytest.importorskip("fsspec")
    app = write_script(tmp_path, "job.py", """
        import argparse
        import fsspec

        parser = argparse.ArgumentParser()
        parser.add_argument("--batch", type=int, default=8)
        batch = parser.parse_args().batch
        print(f"loss={1.0 / batch:.4f}")
        """)
    report = _batches(launched, app, "FSSPEC_CONFIG_DIR", _conf(tmp_path / "conf-a"),
                      _conf(tmp_path / "conf-b"))
    ranked = {d.key: d for d in report.counted}
    d = ranked["FSSPEC_CONFIG_DIR"]
    assert d.evidence_kind == "read" and d.score <= CEILING, (d.score, d.reason)
    assert "read only while importing fsspec, in every process of the run" in d.reason
    assert (report.confidence, [d.key for d in report.candidates]) == ("confident", ["--batch"])


def test_a_folder_setting_no_run_opened_a_file_under_is_incidental(
        launched: Capture, tmp_path: Path) -> None:
    """The same fsspec setting, in runs whose file opens were recorded (the program reads its
    eval set): no file under either FSSPEC_CONFIG_DIR was opened, so what it decides never
    came up: incidental, and --batch is the only input the program took in. When fsspec
    does read a config file there (its import opens every ``.json`` in the folder), the
    setting keeps its read."""
    pytest.importorskip("fsspec")
    (tmp_path / "eval.txt").write_text("1 2 3\n")
    app = write_script(tmp_path, "job.py", """
        import argparse
        import fsspec

        parser = argparse.ArgumentParser()
        parser.add_argument("--batch", type=int, default=8)
        batch = parser.parse_args().batch
        with open("eval.txt") as f:
            n = len(f.read().split())
        print(f"loss={n / batch:.4f}")
        """)

    def pair(tag: str) -> tuple[Any, Any]:
        return (launched(env={"FSSPEC_CONFIG_DIR": str(tmp_path / f"{tag}-a")},
                         argv=[sys.executable, str(app), "--batch", "8"]),
                launched(env={"FSSPEC_CONFIG_DIR": str(tmp_path / f"{tag}-b")},
                         argv=[sys.executable, str(app), "--batch", "16"]))

    report = compare(*pair("none"))
    d = {x.key: x for x in report.differences}["FSSPEC_CONFIG_DIR"]
    assert d.evidence_kind == "incidental" and "neither run read a file under" in d.reason, d
    assert (report.confidence, [x.key for x in report.candidates]) == ("confident", ["--batch"])
    for side in ("used-a", "used-b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "conf.json").write_text('{"file": {"auto_mkdir": true}}')
    report = compare(*pair("used"))
    d = {x.key: x for x in report.differences}["FSSPEC_CONFIG_DIR"]
    assert d.evidence_kind == "read" and d.score <= CEILING, d  # read, a start-up setting
    assert (report.confidence, [x.key for x in report.candidates]) == ("confident", ["--batch"])


def test_path_read_at_start_up_counts_when_the_runs_resolved_other_interpreters(
        launched: Capture, tmp_path: Path) -> None:
    """The interpreter reads PATH natively at start-up, in every process: a start-up read.
    But B's PATH finds another ``python3`` (a venv without the package the program imports),
    and what PATH decides, the executable, differs: PATH is no incidental read there."""
    import venv

    other = tmp_path / "other"
    venv.create(other, with_pip=False)
    app = write_script(tmp_path, "job.py", """
        import click
        print("ok", click.__name__)
        """)
    path = str(Path(sys.executable).parent) + ":/usr/bin:/bin"
    a = launched(env={"PATH": path}, argv=["python3", str(app)])
    b = launched(env={"PATH": f"{other / 'bin'}:{path}"}, argv=["python3", str(app)])
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    # PATH moved the run into another environment: it is shown under that switch (one
    # change, one line), and never as a start-up read that decided nothing
    shown = {d.key: d for d in report.counted}
    shown.update((r.key, r) for d in report.counted for r in d.related)
    assert shown["PATH"].evidence_kind != "incidental", shown["PATH"].reason
    switch = next(d for d in report.counted if d.key in ("prefix", "interpreter"))
    assert any(r.key == "PATH" for r in switch.related), switch.where


@needs_cc
def test_a_native_read_in_the_programs_own_module_body_is_the_programs(
        launched: Capture, tmp_path: Path, stacklib: Path) -> None:
    """The program's own module calls into the library in its body, while the script imports
    it: an import runs, but the module body on the stack is the program's, whose top-level
    code decides what the program does. The library's read there is not a start-up read."""
    write_script(tmp_path, "trainlib.py", """
        import ctypes, os, sys

        # PyDLL: called with the GIL held, as an extension module's functions are
        lib = ctypes.PyDLL(os.environ["STACKLIB_PATH"])
        lib.stacklib_algo.restype = ctypes.c_char_p
        ALGO = lib.stacklib_algo().decode()
        """)
    app = write_script(tmp_path, "train.py", """
        import trainlib
        print("algo", trainlib.ALGO)
        """)
    argv = [sys.executable, str(app)]
    env = {"STACKLIB_PATH": str(stacklib), "PYTHONPATH": str(tmp_path)}
    a = launched(env={**env, "STACKLIB_ALGO": "ring", "STACKLIB_TRACEBACKS": "0"}, argv=argv)
    b = launched(env={**env, "STACKLIB_ALGO": "tree", "STACKLIB_TRACEBACKS": "1"}, argv=argv)
    startup = a["runtime"].get("native_startup") or []
    assert "STACKLIB_ALGO" not in startup and "STACKLIB_TRACEBACKS" in startup
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert ranked["STACKLIB_ALGO"].evidence_kind == "read", ranked["STACKLIB_ALGO"].reason
    assert ranked["STACKLIB_TRACEBACKS"].evidence_kind == "incidental"


#: An extension module whose initialisation reads a setting natively, as mpi4py.MPI's exec
#: calls MPI_Init (which reads every OMPI_MCA_* parameter), and a function that reads another
#: each time it is called.
EXTENSION = r"""
#include <Python.h>
#include <stdlib.h>
static PyObject *algo(PyObject *self, PyObject *args) {
    const char *v = getenv("EXTLIB_ALGO");
    return PyUnicode_FromString(v ? v : "ring");
}
static PyMethodDef methods[] = {{"algo", algo, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "extlib", NULL, -1, methods};
PyMODINIT_FUNC PyInit_extlib(void) {
    getenv("EXTLIB_TRANSPORT_TUNING");
    return PyModule_Create(&mod);
}
"""


@needs_cc
def test_an_extension_modules_init_read_is_a_start_up_read(
        launched: Capture, tmp_path: Path) -> None:
    """The program imports an extension module itself (``from mpi4py import MPI``): the
    module body on the Python stack is the program's, but the read happens in the extension's
    initialisation, which importlib called: a start-up read of the library (before, it counted
    as a read while the program ran: fresh6 ``mpi-shard-edit-metric-job`` listed four
    ``OMPI_MCA_*`` tuning variables beside the data file that moved the metric)."""
    import sysconfig

    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        pytest.skip("no Python headers to build an extension module")
    src = tmp_path / "extlib.c"
    src.write_text(EXTENSION)
    ext = tmp_path / ("extlib" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    subprocess.run(["cc", "-shared", "-fPIC", f"-I{include}", "-o", str(ext), str(src)],
                   check=True)
    app = write_script(tmp_path, "train.py", """
        import extlib
        print("algo", extlib.algo())
        """)
    argv = [sys.executable, str(app)]
    env = {"PYTHONPATH": str(tmp_path)}
    a = launched(env={**env, "EXTLIB_ALGO": "ring", "EXTLIB_TRANSPORT_TUNING": "0"}, argv=argv)
    b = launched(env={**env, "EXTLIB_ALGO": "tree", "EXTLIB_TRANSPORT_TUNING": "1"}, argv=argv)
    startup = a["runtime"].get("native_startup") or []
    assert "EXTLIB_TRANSPORT_TUNING" in startup and "EXTLIB_ALGO" not in startup, startup
    ranked = {d.key: d for d in compare(a, b).counted}
    assert ranked["EXTLIB_ALGO"].evidence_kind == "read", ranked["EXTLIB_ALGO"].reason
    assert ranked["EXTLIB_TRANSPORT_TUNING"].evidence_kind == "incidental"


def test_a_packages_import_read_on_the_failing_traceback_keeps_its_place(
        launched: Capture, tmp_path: Path) -> None:
    """The same read at fsspec's import, but B fails inside fsspec (an unknown protocol):
    the package that read its setting at import made the call that raised, so the read is on
    the failing path, above the option."""
    pytest.importorskip("fsspec")
    app = write_script(tmp_path, "job.py", """
        import argparse
        import fsspec

        parser = argparse.ArgumentParser()
        parser.add_argument("--proto", default="memory")
        fs = fsspec.filesystem(parser.parse_args().proto)
        print("ok", type(fs).__name__)
        """)
    a = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-a")},
                 argv=[sys.executable, str(app), "--proto", "memory"])
    b = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-b")},
                 argv=[sys.executable, str(app), "--proto", "nosuchproto"])
    assert b["outcome"]["exit_status"] == 1
    ranked = {d.key: d for d in compare(a, b).counted}
    d = ranked["FSSPEC_CONFIG_DIR"]
    assert d.evidence_kind == "failing-path" and d.score > CEILING, (d.score, d.reason)


def test_a_packages_import_read_in_one_process_of_several_keeps_its_read(
        launched: Capture, tmp_path: Path) -> None:
    """Only a worker the program starts imports fsspec: the read is no setting every process
    of the stack takes at start-up, but one process's, which may have decided what the run
    did. It keeps its ``read`` score (91 or more)."""
    pytest.importorskip("fsspec")
    worker = write_script(tmp_path, "worker.py", """
        import fsspec
        print("worker", fsspec.__name__)
        """)
    app = write_script(tmp_path, "job.py", f"""
        import argparse, subprocess, sys

        parser = argparse.ArgumentParser()
        parser.add_argument("--batch", type=int, default=8)
        batch = parser.parse_args().batch
        subprocess.run([sys.executable, {str(worker)!r}], check=True)
        print(f"loss={{1.0 / batch:.4f}}")
        """)
    a = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-a")},
                 argv=[sys.executable, str(app), "--batch", "8"])
    b = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-b")},
                 argv=[sys.executable, str(app), "--batch", "16"])
    ranked = {d.key: d for d in compare(a, b).counted}
    d = ranked["FSSPEC_CONFIG_DIR"]
    assert d.evidence_kind == "read" and d.score > CEILING, (d.score, d.reason)


def test_a_trackers_setting_read_at_import_is_no_candidate(tmp_path: Path,
                                                           base_env: dict[str, str]) -> None:
    """An installed library reads WANDB_MODE in its module body (as transformers' integrations
    do when imported): a library's start-up setting, of a family that says where a run is
    logged, rarely the computation (env-families.tsv: 30). Read at import and nowhere else, it
    is incidental, and the option is the only input the program took in."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    src = tmp_path / "src" / "tracklib"
    (src / "tracklib").mkdir(parents=True)
    (src / "tracklib" / "__init__.py").write_text(
        "import os\nOFFLINE = os.environ.get('WANDB_MODE') == 'offline'\n")
    (src / "setup.py").write_text(
        "from setuptools import setup\n"
        "setup(name='tracklib', version='1.0', packages=['tracklib'])\n")
    pip_install(python, "--no-deps", str(src), tmp=tmp_path)
    app = tmp_path / "fit.py"
    app.write_text("import argparse, tracklib\np = argparse.ArgumentParser()\n"
                   "p.add_argument('--accum', type=int, default=1)\n"
                   "print(f'loss={1.0 / p.parse_args().accum:.4f}')\n")
    a = run([str(python), str(app)], env={**base_env, "WANDB_MODE": "offline"}, cwd=tmp_path,
            output=tmp_path / "a.toml").snapshot
    b = run([str(python), str(app), "--accum", "4"], env={**base_env, "WANDB_MODE": "disabled"},
            cwd=tmp_path, output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    mode = {d.key: d for d in report.differences}["WANDB_MODE"]
    assert mode.evidence_kind == "incidental", mode
    assert "read only while importing tracklib" in mode.reason, mode.reason
    assert (report.confidence, report.candidates[0].key) == ("confident", "--accum"), \
        report.verdict()


def test_a_folder_the_program_reads_but_opens_nothing_under_is_incidental(
        launched: Capture, tmp_path: Path) -> None:
    """The program reads APP_CACHE_DIR (its path, for a cache it never fills on this path)
    and opens only its eval set: no file under either run's folder was opened, so the folder
    decided nothing the runs show; --batch is the only input the program took in."""
    (tmp_path / "eval.txt").write_text("1 2 3\n")
    app = write_script(tmp_path, "job.py", """
        import argparse, os
        cache = os.environ.get("APP_CACHE_DIR", "/tmp/app-cache")
        parser = argparse.ArgumentParser()
        parser.add_argument("--batch", type=int, default=8)
        batch = parser.parse_args().batch
        with open("eval.txt") as f:
            n = len(f.read().split())
        print(f"loss={n / batch:.4f}")
        """)
    report = _batches(launched, app, "APP_CACHE_DIR", str(tmp_path / "cache-a"),
                      str(tmp_path / "cache-b"))
    d = {x.key: x for x in report.differences}["APP_CACHE_DIR"]
    assert d.evidence_kind == "incidental" and "neither run read a file under" in d.reason, d
    assert (report.confidence, [x.key for x in report.candidates]) == ("confident", ["--batch"])


def test_the_hash_seed_decides_a_result_and_is_never_incidental(
        launched: Capture, tmp_path: Path) -> None:
    """A vocabulary built from a set of words: its order, and so the ids and the score, follow
    the hash seed. PYTHONHASHSEED is read by the interpreter at start-up, but another value is
    another result: read evidence (kept below the program's own inputs), the only input that
    differs, confident."""
    app = write_script(tmp_path, "vocab.py", """
        words = "the cat sat on a mat with another cat and a hat".split()
        vocab = {w: i for i, w in enumerate(set(words))}
        print(f"score={sum(vocab[w] * (k + 1) for k, w in enumerate(words))}")
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={"PYTHONHASHSEED": "0"}, argv=argv)
    b = launched(env={"PYTHONHASHSEED": "1"}, argv=argv)
    report = compare(a, b)
    seed = {d.key: d for d in report.differences}["PYTHONHASHSEED"]
    assert seed.evidence_kind == "read" and seed.score <= CEILING + 1, seed  # above libraries' settings
    assert "the seed of str and bytes hashing" in seed.reason
    assert (report.confidence, report.candidates[0].key) == ("confident", "PYTHONHASHSEED"), \
        report.verdict()


def test_the_optimisation_level_decides_a_result_and_is_never_incidental(
        launched: Capture, tmp_path: Path) -> None:
    """A command-line tool builds its help from its functions' docstrings, as transformers
    checks its processors' documented arguments at import: under ``PYTHONOPTIMIZE=2`` the
    docstrings are gone and it fails. The interpreter reads the variable at start-up, but
    another value is another program: read evidence, the only input that differs (fresh10
    ``pythonoptimize-in-ray-image`` called it "read only at start-up", below the
    candidates)."""
    app = write_script(tmp_path, "tool.py", """
        def train():
            '''Train the model: --steps N.'''

        print("commands:", train.__doc__.split(":")[0])
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={}, argv=argv)
    b = launched(env={"PYTHONOPTIMIZE": "2"}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    level = {d.key: d for d in report.differences}["PYTHONOPTIMIZE"]
    assert level.evidence_kind == "read" and "docstrings" in level.reason, level
    assert (report.confidence, report.candidates[0].key) == ("confident", "PYTHONOPTIMIZE"), \
        report.verdict()


def test_the_optimisation_level_stands_apart_from_a_librarys_import_setting(
        launched: Capture, tmp_path: Path) -> None:
    """The same tool, importing fsspec, whose config folder differs between the shells too
    (read at fsspec's import, its files read). B fails with a traceback in the tool's own
    code, where no part of fsspec is: fsspec's start-up setting is no path to it, while the
    interpreter's optimisation level holds for every frame of it. Confident on
    PYTHONOPTIMIZE (fresh10 ``pythonoptimize-in-ray-image`` was undecided between it and two
    libraries' import settings)."""
    pytest.importorskip("fsspec")
    app = write_script(tmp_path, "tool.py", """
        import fsspec

        def train():
            '''Train the model: --steps N.'''

        print("commands:", train.__doc__.split(":")[0])
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-a")}, argv=argv)
    b = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-b"), "PYTHONOPTIMIZE": "2"},
                 argv=argv)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert "read only while importing fsspec" in ranked["FSSPEC_CONFIG_DIR"].reason
    assert (report.confidence, [d.key for d in report.candidates]) == (
        "confident", ["PYTHONOPTIMIZE"]), report.verdict()


def test_a_seed_the_program_read_stands_apart_from_a_librarys_import_setting(
        launched: Capture, tmp_path: Path) -> None:
    """A tune driver exported ``TRAINER_GLOBAL_SEED`` in one shell; the trainer seeds its
    sampler from it, and the loss moves. fsspec's config folder differs too, read at its
    import. A seed the program read is another result by what a seed is: confident on it
    (fresh10 ``pl-global-seed-from-tune-driver`` was undecided between it and two libraries'
    import settings). A variable of no such name keeps the tie (the measured case: a cache
    folder the program read, beside libraries' settings, in healthy non-deterministic runs)."""
    pytest.importorskip("fsspec")
    app = write_script(tmp_path, "fit.py", """
        import os, random
        import fsspec

        def fit():
            rng = random.Random(int(os.environ.get("TRAINER_GLOBAL_SEED", "7")))
            print(f"loss={sum(rng.random() for _ in range(100)) / 100:.4f}")

        fit()
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-a")}, argv=argv)
    b = launched(env={"FSSPEC_CONFIG_DIR": _conf(tmp_path / "conf-b"),
                      "TRAINER_GLOBAL_SEED": "1234"}, argv=argv)
    report = compare(a, b)
    assert (report.confidence, [d.key for d in report.candidates]) == (
        "confident", ["TRAINER_GLOBAL_SEED"]), report.verdict()
