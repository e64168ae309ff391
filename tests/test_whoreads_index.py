"""``who-reads`` indexes every name in one pass (a new name then reads no file but those that
hold it), and ranks the package's own code above its tests and examples (issue 27, item 9)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runsnap.whoreads.search import who_reads
from tests.conftest import pip_install, run_runsnap


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv with ``knobpkg`` installed by pip: its own code reads two variables, its
    tests and examples read one of them too. One for the module: a test that edits the
    installed code puts it back (each test has a cache folder of its own)."""
    tmp_path = tmp_path_factory.mktemp("knob")
    proj = tmp_path / "src"
    pkg = proj / "knobpkg"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "examples").mkdir()
    for d in (pkg, pkg / "tests", pkg / "examples"):
        (d / "__init__.py").write_text("")
    (pkg / "threads.py").write_text(
        "import os\n\nTHREADS = int(os.environ.get('KNOB_NUM_THREADS', '1'))\n"
        "MODE = os.getenv('KNOB_MODE')\n")
    (pkg / "tests" / "test_threads.py").write_text(
        "import os\n\ndef test_it():\n    os.environ['KNOB_NUM_THREADS'] = '2'\n")
    (pkg / "examples" / "run.py").write_text("import os\nos.getenv('KNOB_NUM_THREADS')\n")
    (proj / "setup.py").write_text(textwrap.dedent("""
        from setuptools import setup, find_packages
        setup(name="knobpkg", version="1.0", packages=find_packages())
    """))
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    pip_install(env / "bin" / "python", "--no-deps", str(proj), tmp=tmp_path)
    return env


def _installed(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages/knobpkg"))


def test_a_new_name_is_answered_from_the_one_pass_index(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    assert [(h.path, h.line) for h in who_reads("KNOB_MODE", python)] == [
        ("knobpkg/threads.py", 4)]
    # written after the index was built, with the installed version unchanged: a search that
    # made a new pass for a new name would find it; the one-pass index answers without reading
    own = _installed(venv) / "threads.py"
    text = own.read_text()
    own.write_text(text + "LATE = os.getenv('KNOB_LATE_NAME')\n")
    try:
        assert who_reads("KNOB_LATE_NAME", python) == []
        found = who_reads("KNOB_NUM_THREADS", python)  # asked for the first time: from the index
        assert ("knobpkg/threads.py", 3, "read") in [(h.path, h.line, h.kind) for h in found]
        fresh = who_reads("KNOB_LATE_NAME", python, cache=False)  # no cache: a pass of its own
        assert [(h.path, h.line) for h in fresh] == [("knobpkg/threads.py", 5)]
    finally:
        own.write_text(text)


def test_distributions_given_are_checked_as_the_probe_answer_is(venv: Path) -> None:
    """``who_reads(dists=...)``: the probe's distributions of the venv, then one given by its
    place and metadata folder alone (its name and version missing: filled in as the probe's
    answer is, empty), and one whose name is not text (refused, naming it)."""
    from runsnap.whoreads.search import distributions

    python = str(venv / "bin" / "python")
    dists = [d for d in distributions(python) if d["name"] == "knobpkg"]
    assert [(h.dist, h.path) for h in who_reads("KNOB_MODE", dists=dists)] == [
        ("knobpkg", "knobpkg/threads.py")]
    bare = [{"location": dists[0]["location"], "metadata_dir": dists[0]["metadata_dir"]}]
    assert [(h.dist, h.path) for h in who_reads("KNOB_MODE", dists=bare, cache=False)] == [
        ("", "knobpkg/threads.py")]
    with pytest.raises(ValueError, match=r"distributions\[0\]\.name is not a string"):
        who_reads("KNOB_MODE", dists=[{"name": 3, "location": dists[0]["location"]}])


def test_own_code_first_tests_and_examples_only_when_asked(venv: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    python = str(venv / "bin" / "python")
    r = run_runsnap("who-reads", "KNOB_NUM_THREADS", "--python", python, env=env)
    assert r.returncode == 0, r.stderr
    assert [ln.split()[2] for ln in r.stdout.splitlines()] == ["knobpkg/threads.py:3"]
    assert "2 more in tests, examples and benchmarks (--include-tests" in r.stderr, r.stderr
    r = run_runsnap("who-reads", "KNOB_NUM_THREADS", "--python", python, "--include-tests",
                    env=env)
    places = [ln.split()[2] for ln in r.stdout.splitlines()]
    assert places[0] == "knobpkg/threads.py:3" and sorted(places[1:]) == [
        "knobpkg/examples/run.py:2", "knobpkg/tests/test_threads.py:4"], r.stdout


def test_the_cache_stays_the_size_of_the_index_however_many_names_are_asked(
        venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of names asked, in batches as diff asks them: the cache keeps the index
    (which answers any variable-shaped name again) and a bounded number of names of other
    shapes, not every answer ever given."""
    from runsnap.whoreads.search import CACHED_NAMES

    monkeypatch.setenv("RUNSNAP_CACHE_DIR", str(tmp_path / "cache"))
    python = str(venv / "bin" / "python")

    def size() -> int:
        return sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*.json"))

    who_reads(["KNOB_MODE"], python)
    first = size()
    for batch in range(4):
        who_reads([f"KNOB_ASKED_{batch}_{i}" for i in range(2000)]
                  + [f"knob_lower_{batch}_{i}" for i in range(300)], python)
    per_dist = len(list((tmp_path / "cache").rglob("*.json")))
    assert size() <= first + per_dist * CACHED_NAMES * 64, (first, size(), per_dist)
    # answers are the same from the bounded cache
    assert [(h.path, h.line) for h in who_reads("KNOB_MODE", python)] == [
        ("knobpkg/threads.py", 4)]
