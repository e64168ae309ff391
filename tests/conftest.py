"""Shared test helpers: real git repositories, the CLI runner, fixture paths."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

#: Where programs are, the same for every caller: never an activated venv's or conda's ``bin``.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: The caller's variables a test may see: who runs it and where temporary files go. Everything
#: else (``VIRTUAL_ENV``, ``PYTHONPATH``, ``COLUMNS``, ``NO_COLOR``, ``CUDA_*``, ``RUNSNAP_*``, ...)
#: stays out; a test that wants one sets it.
KEPT = ("USER", "LOGNAME", "TMPDIR")

#: The environment every test starts from (built once by :func:`pytest_configure`).
BASE_ENV: dict[str, str] = {}


def hermetic_base(home: str) -> dict[str, str]:
    """The fixed environment of the suite: the system's PATH, an empty home, a UTF-8 locale,
    and the few caller variables in :data:`KEPT`."""
    env = {k: os.environ[k] for k in KEPT if k in os.environ}
    env.update(PATH=SYSTEM_PATH, HOME=home, LANG="C.UTF-8")
    return env


def pytest_configure(config: pytest.Config) -> None:
    """Run the same whoever started the suite, and how.

    The process's own environment becomes :func:`hermetic_base` before any test module is
    imported, so a module-level ``{**os.environ}`` is hermetic too, and :func:`hermetic_env`
    puts it back before each test. A shell that starts the suite in the background
    (``pytest &`` in a script) makes it ignore SIGINT and SIGQUIT (``nohup``: SIGHUP), every
    runsnap the tests start inherits that, and runsnap (like ``nohup``) then leaves an ignored
    signal alone, so the tests of forwarding would see nothing arrive: all three get their
    default handlers back."""
    stale = Path(__file__).resolve().parent.parent / "runsnap.egg-info"
    if stale.exists():  # the development install puts the checkout itself on sys.path
        raise pytest.UsageError(
            f"{stale} is left from a setuptools install of runsnap: every capture in this venv "
            "would list a second, shadowed runsnap. Remove it: rm -rf runsnap.egg-info")
    home = tempfile.mkdtemp(prefix="runsnap-tests-home-")
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    keep = {k: v for k, v in os.environ.items() if k.startswith("PYTEST_")}
    BASE_ENV.clear()
    BASE_ENV.update(hermetic_base(home))
    os.environ.clear()  # unsetenv too: children started without env= see the same
    os.environ.update({**BASE_ENV, **keep})
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) is signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:  # run under nohup
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: the order below is kept
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files that hold ``slow`` tests first, then the others, each group by its number of
    tests, most first; a file's own tests keep their order.

    The README's command shares whole files between two processes (``--dist loadfile``),
    handing the next file to whichever is free. pytest-xdist's own order (by number of tests
    alone) left files of a few long tests (a tracking server's, a first save's) to the end,
    where one process ran them while the other had nothing left: start the long ones first,
    and the many short files fill the gaps."""
    counts: dict[Path, int] = {}
    slow: set[Path] = set()
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1
        if item.get_closest_marker("slow") is not None:
            slow.add(item.path)
    items.sort(key=lambda item: (item.path not in slow, -counts[item.path]))


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def asset(*parts: str) -> Path:
    """A path under fixtures/, asserting that it exists."""
    path = FIXTURES.joinpath(*parts)
    assert path.exists(), f"missing fixture {path}"
    return path


def shared_who_reads_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of who-reads indexes the tests of this process share (one per xdist
    worker). An index is keyed by its distribution's name, version and location (and an
    editable checkout's file times), and the suite never changes the packages of an
    interpreter it did not make for one test: so a diff that searches this environment's ~110
    distributions for static evidence indexes them once a process, not once a test (~1 s of
    CPU each time). Tests of the index's own caching use venvs of their own."""
    shared = tmp_path_factory.getbasetemp() / "shared-who-reads-index"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                 ) -> dict[str, str]:
    """Each test's own environment, in ``os.environ`` and returned as a dict to pass to the
    programs it starts: :data:`BASE_ENV` (whatever an earlier test or import left is removed)
    plus its own fingerprint key file and cache folder, never the user's; only the who-reads
    indexes in that folder are shared (:func:`shared_who_reads_index`)."""
    for name in list(os.environ):
        if name not in BASE_ENV and not name.startswith("PYTEST_"):
            monkeypatch.delenv(name)
    for name, value in BASE_ENV.items():
        monkeypatch.setenv(name, value)
    key = tmp_path_factory.mktemp("key") / "fingerprint.key"
    cache = key.parent / "cache"
    cache.mkdir()
    (cache / "who-reads").symlink_to(shared_who_reads_index(tmp_path_factory),
                                     target_is_directory=True)
    monkeypatch.setenv("RUNSNAP_KEY_FILE", str(key))
    monkeypatch.setenv("RUNSNAP_CACHE_DIR", str(cache))
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


@pytest.fixture
def key_file(hermetic_env: dict[str, str]) -> Path:
    """This test's fingerprint key file (not created yet)."""
    return Path(hermetic_env["RUNSNAP_KEY_FILE"])


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity and return its stdout."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd),
    }
    out = subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always",
                          *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return out.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A real repository at ``path`` with one commit of ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, text in (files or {"README": "hello\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh repository with two commits."""
    r = make_repo(tmp_path / "proj", {"app.py": "print('v1')\n", "lib/util.py": "X = 1\n"})
    (r / "app.py").write_text("print('v2')\n")
    git(r, "commit", "-qam", "second")
    return r


@pytest.fixture
def cli_invoke(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """Run the CLI in-process; print output and traceback on an unexpected exit status (a bug
    of runsnap's own is a traceback here, ``RUNSNAP_TRACEBACK``, not the users' one line)."""
    from runsnap.cli.app import cli

    monkeypatch.delenv("RUNSNAP_FORMAT", raising=False)  # the user's defaults stay out
    monkeypatch.setenv("RUNSNAP_TRACEBACK", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)

    def invoke(args: Sequence[str], expect: int = 0, **kwargs: Any) -> Result:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=True, **kwargs)
        if result.exit_code != expect:
            print(result.output)
            if result.exc_info and not isinstance(result.exception, SystemExit):
                traceback.print_exception(*result.exc_info)
        assert result.exit_code == expect
        return result

    return invoke


#: How the tests start runsnap as a real process: this interpreter, ``-m runsnap``.
RUNSNAP = (sys.executable, "-m", "runsnap")


def run_runsnap(*args: str, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
                input: str | None = None, timeout: float = 300, **kwargs: Any
                ) -> subprocess.CompletedProcess[Any]:
    """``python -m runsnap ARGS`` as a real process: the suite's one runner.

    ``env`` is the whole environment (the test's own ``os.environ`` by default, which
    :func:`hermetic_env` built; readline, once imported, exports a ``COLUMNS`` that
    ``os.environ`` never shows, so it is always passed explicitly). Standard input is empty
    unless ``input`` is given; other keyword arguments go to :func:`subprocess.run`."""
    env = dict(os.environ if env is None else env)
    if input is None:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
    kwargs.setdefault("text", True)
    return subprocess.run([*RUNSNAP, *args], cwd=cwd, env=env,
                          capture_output=True, input=input, timeout=timeout, **kwargs)


def pip_install(python: Path, *args: str, tmp: Path) -> None:
    """``pip install ARGS`` into the environment of ``python``, which needs no pip of its own:
    this test environment's pip runs in that interpreter (``pip --python``, as pip documents
    it), so a test venv is made ``--without-pip`` (ensurepip costs ~4 s of CPU a venv). It
    never needs the network: no index, and no build isolation, with setuptools from this test
    environment on the build's path (not its other packages). Always a PEP 517 build, as pip
    23.1 and later make it: Debian 12's pip 23.0 without ``wheel`` would install the legacy
    way (an ``.egg-info``, and ``-e`` through ``setup.py develop``, which fails on a venv with
    no pip), so a fixture would not have the shape its test describes."""
    import setuptools

    site = Path(setuptools.__path__[0]).parent
    shim = tmp / "build-backend"
    shim.mkdir(exist_ok=True)
    dist_info = [p.name for p in site.glob("setuptools-*.dist-info")]  # its entry points
    for name in ("setuptools", "pkg_resources", "_distutils_hack", *dist_info):
        if (site / name).exists() and not (shim / name).exists():
            (shim / name).symlink_to(site / name)
    env = {**os.environ, "PYTHONPATH": str(shim), "PIP_NO_INDEX": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-build-isolation", "--use-pep517", *args], check=True, capture_output=True, env=env)


def venv_with_package(root: Path, name: str, source: str) -> Path:
    """A venv under ``root`` (no pip of its own) with package ``name`` 1.0 installed from
    ``source`` (its ``__init__.py``), as a user's ``pip install ./proj``: its python."""
    proj = root / "proj"
    (proj / name).mkdir(parents=True)
    (proj / name / "__init__.py").write_text(source)
    (proj / "setup.py").write_text("from setuptools import setup\n"
                                   f"setup(name={name!r}, version='1.0', packages=[{name!r}])\n")
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    pip_install(env / "bin" / "python", "--no-deps", str(proj), tmp=root)
    return env / "bin" / "python"


def no_git_path(tmp_path: Path) -> str:
    """A PATH holding python but not git."""
    bindir = tmp_path / "nogit-bin"
    bindir.mkdir(exist_ok=True)
    for prog in ("python", "python3"):
        (bindir / prog).symlink_to(sys.executable)
    assert shutil.which("git", path=str(bindir)) is None
    return str(bindir)


@pytest.fixture(scope="session")
def stack_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv (``python -m venv``) with two distributions installed by pip from local
    projects, shaped as the real ones are where it matters: ``sglang`` 0.5.23 (a package with
    no version file of its own) and ``triton`` 3.8.0 (a ``backends`` folder, no version file):
    their versions are only in the package list."""
    import textwrap

    root = tmp_path_factory.mktemp("stack")
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    projects = []
    for name, version, extra in (("sglang", "0.5.23", "srt"), ("triton", "3.8.0", "backends")):
        proj = root / f"{name}-src"
        projects.append(proj)
        pkg = proj / name
        (pkg / extra).mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / extra / "__init__.py").write_text("")
        (proj / "setup.py").write_text(textwrap.dedent(f"""
            from setuptools import setup, find_packages
            setup(name={name!r}, version={version!r}, packages=find_packages())
        """))
    pip_install(env / "bin" / "python", "--no-deps", *map(str, projects), tmp=root)  # one pip
    for proj in projects:
        shutil.rmtree(proj)
    return env
