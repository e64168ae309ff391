"""schema.json and the sections' declarations (runsnap/snapshot/shapes.py) say the same, and
real snapshots fit what is declared."""

from __future__ import annotations

import json
import sys
import typing
from typing import Annotated, Any

import pytest

from runsnap.snapshot import shape_compare, shapes
from tests.conftest import ROOT


def _schema() -> dict[str, Any]:
    with open(shapes.SCHEMA, encoding="utf-8") as fh:
        return json.load(fh)


def test_every_section_of_the_schema_is_declared() -> None:
    assert set(_schema()["properties"]) - {"schema"} == set(shapes.DECLARED)


@pytest.mark.parametrize("name", sorted(shapes.DECLARED))
def test_the_schema_of_a_declared_section_is_its_declaration(name: str) -> None:
    assert _schema()["properties"][name] == shapes.schema_of(shapes.DECLARED[name]), (
        f"schema.json's [{name}] is not what runsnap/snapshot/shapes.py declares: rewrite it "
        f"with python -m runsnap.snapshot.shapes")


@pytest.mark.parametrize("name", sorted(shapes.DEFS))
def test_a_declared_definition_is_its_declaration(name: str) -> None:
    assert _schema()["$defs"][name] == shapes.schema_of(shapes.DEFS[name])


def test_writing_the_schema_again_changes_nothing(tmp_path) -> None:
    copy = tmp_path / "schema.json"
    with open(shapes.SCHEMA, encoding="utf-8") as fh:
        text = fh.read()
    copy.write_text(text, encoding="utf-8")
    shapes.write_schema(str(copy))
    assert copy.read_text(encoding="utf-8") == text


def _undeclared(value: Any, shape: Any, at: str) -> list[str]:
    """The places of ``value`` holding a field its declaration ``shape`` does not have."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if origin is Annotated:
        extra = [m.shape for m in shape.__metadata__ if isinstance(m, shapes.Extra)]
        if extra and isinstance(value, dict):
            hints = typing.get_type_hints(args[0], include_extras=True)
            known = {k: v for k, v in value.items() if k in hints}
            rest = {k: v for k, v in value.items() if k not in hints}
            return [*_undeclared(known, args[0], at),
                    *(p for k, v in rest.items() for p in _undeclared(v, extra[0], f"{at}.{k}"))]
        return _undeclared(value, args[0], at)
    if typing.is_typeddict(shape):
        if not isinstance(value, dict):
            return []
        hints = typing.get_type_hints(shape, include_extras=True)
        return [p for k, v in value.items()
                for p in ([f"{at}.{k}"] if k not in hints else _undeclared(v, hints[k], f"{at}.{k}"))]
    if origin is not None and origin not in (list, dict):  # a union: the member that fits
        found = [_undeclared(value, member, at) for member in args]
        return min(found, key=len)
    if origin is list and isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _undeclared(v, args[0], f"{at}[{i}]")]
    if origin is dict and isinstance(value, dict):
        return [p for k, v in value.items() for p in _undeclared(v, args[1], f"{at}.{k}")]
    return []


def _git_capture(path: Any) -> str:
    """A capture of a repository with what only some work trees hold: a renamed file, a
    dangling symlink among the untracked files, a diff over the cap, a submodule."""
    import os

    import runsnap
    from tests.conftest import git, make_repo

    sub = make_repo(path.parent / "sub")
    repo = make_repo(path, {"a.py": "x = 1\n" * 50, "b.py": "y = 2\n"})
    git(repo, "submodule", "add", "-q", str(sub), "sub")
    git(repo, "commit", "-qm", "sub")
    git(repo, "mv", "a.py", "renamed.py")
    (repo / "b.py").write_text("y = 3\n" * 4000)
    os.symlink("nowhere", repo / "dangling")
    snap = runsnap.capture(["true"], cwd=repo, max_diff_bytes=1000, output=str(path.parent / "g.toml"))
    repos = snap["git"]["repos"]
    (only,) = [r for r in repos.values() if "cwd" in r.get("roles", [])]
    assert only.get("submodules") and only.get("diff_stat") and \
        any(c.get("from") for c in only["changed"]) and \
        any("link" in u for u in only["untracked"]), only
    return str(snap.path_text)


@pytest.fixture(scope="module")
def real_snapshots(tmp_path_factory) -> list[tuple[str, dict[str, Any]]]:
    """Snapshots written by runsnap here: a context capture with a model, a traced run of
    Python that failed, a running process (``--pid``), and the recorded schema-1 traced torch
    rank; decoded as ``load`` reads them."""
    import runsnap
    from runsnap.snapshot import loads

    where = tmp_path_factory.mktemp("captures")
    (where / "config.json").write_text('{"model_type": "llama", "architectures": ["X"]}')
    context = runsnap.capture(["true", "--x", "1"], cwd=where, models=[str(where)],
                              output=str(where / "c.toml"))
    ran = runsnap.run([sys.executable, "-c", "import os, sys; os.environ.get('NCCL_ALGO');"
                       " print('loss=1.5'); sys.exit('boom')"],
                      cwd=where, output=str(where / "r.toml")).snapshot
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=where)
    try:
        # captured once it runs its program: between fork and exec a process has no command
        # line of its own yet (CI met that window once)
        import time
        from pathlib import Path

        deadline = time.monotonic() + 30
        while b"time.sleep" not in Path(f"/proc/{child.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the child never started its program"
            time.sleep(0.01)
        pid = runsnap.capture_pid(child.pid, output=str(where / "p.toml"))
    finally:
        child.kill()
        child.wait()
    git_snap = _git_capture(where / "repo")
    # the engines' builds and the CUDA libraries, from files laid out as their wheels lay
    # them out; triton with no version file, so its distribution's version is taken
    from tests.collectors.test_toolchain_builds import dist, wheel_layout

    wheel_layout(where / "site")
    dist(where / "site", "triton", "3.5.0")
    wheels = runsnap.capture([sys.executable, "-c", "pass"], cwd=where,
                             env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where / "site")},
                             output=str(where / "w.toml"))
    assert wheels.records.packages.builds.raw["triton"]["version_from"] == "distribution"
    rank = ROOT / "fixtures" / "runtime" / "torch-rank-schema1.toml"
    # a pytest session (runsnap/pytestplugin): every outcome a test can have, one failing
    (where / "test_shape.py").write_text(
        "import pytest\n"
        "def test_ok(): pass\n"
        "def test_fails(): assert 1 == 2\n"
        "@pytest.mark.skip(reason='r')\ndef test_skip(): pass\n"
        "@pytest.mark.xfail(reason='x')\ndef test_xfail(): assert 0\n"
        "@pytest.fixture\ndef broken(): raise RuntimeError('setup')\n"
        "def test_error(broken): pass\n")
    session = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "--runsnap=s.toml", "test_shape.py"], cwd=where,
                             capture_output=True, text=True, timeout=300)
    assert session.returncode == 1, session.stdout + session.stderr
    out = []
    for name, path in (("context", context.path_text), ("run", ran.path_text),
                       ("pid", pid.path_text), ("git", git_snap), ("rank", rank),
                       ("wheels", wheels.path_text),
                       ("pytest", where / "s.toml")):
        with open(path, encoding="utf-8") as fh:
            out.append((name, loads(fh.read()).to_document()))
    return out


def test_real_snapshots_fit_the_declared_schema(real_snapshots) -> None:
    """Each value has the declared type (schema.json is the declarations, tested above)."""
    from runsnap.snapshot.validate import validate

    for name, doc in real_snapshots:
        validate(doc, name)  # raises SnapshotError naming the place that does not fit


def test_real_snapshots_have_only_declared_fields(real_snapshots) -> None:
    """What the collectors write, at every depth, is what the declarations have."""
    seen = set()
    for name, doc in real_snapshots:
        for section, shape in shapes.DECLARED.items():
            if section in doc:
                seen.add(section)
                assert _undeclared(doc[section], shape, section) == [], name
    assert seen == set(shapes.DECLARED)


def test_every_declared_field_says_how_diff_compares_it() -> None:
    assert shape_compare.unmarked(shapes.DECLARED) == [], (
        "mark each field Compare(score, reason), Compare() (the section's comparer has a rule "
        "for it) or NotCompared(why) in runsnap/snapshot/shapes*.py")


def test_the_comparers_table_is_the_declarations_marks(tmp_path) -> None:
    with open(shape_compare.TABLE, encoding="utf-8") as fh:
        text = fh.read()
    assert shape_compare.write_table(shapes.DECLARED, str(tmp_path / "compared.py")) == text, (
        "runsnap/snapshot/compared.py is not what the marks say: rewrite it with "
        "python -m runsnap.snapshot.shapes")


class _Inner(typing.TypedDict, total=False):
    marked: Annotated[int, shapes.Compare(10, "a reason")]
    forgotten_inside: int


class _Section(typing.TypedDict, total=False):
    kept: Annotated[int, shapes.Compare()]
    left: Annotated[_Inner, shapes.NotCompared("a count")]
    whole: Annotated[_Inner, shapes.Compare()]
    by_field: Annotated[dict[str, _Inner], shapes.Compare(fields=True)]
    forgotten: int


def test_a_field_without_a_mark_is_found_at_every_depth_compared_field_by_field() -> None:
    assert shape_compare.unmarked({"x": _Section}) == ["x.by_field.forgotten_inside", "x.forgotten"]
    assert shape_compare.table_of({"x": _Section})["by_declaration"] == {
        "x.by_field": {"marked": (10, "a reason")}}


def test_the_records_are_the_declarations(tmp_path) -> None:
    """runsnap/snapshot/records*.py, the classes readers read sections as, are generated from
    the declarations (one declaration of each field: a reader's wrong name is a type error)."""
    from runsnap.snapshot import shape_records

    for path, text in shape_records.write_records(shapes.DECLARED, str(tmp_path)).items():
        name = path.rsplit("/", 1)[1]
        with open(f"{shape_records.HERE}/{name}", encoding="utf-8") as fh:
            assert fh.read() == text, (
                f"runsnap/snapshot/{name} is not what the declarations say: rewrite it with "
                "python -m runsnap.snapshot.shapes")


def _field_names(shape: Any, seen: set[Any]) -> set[str]:
    """Every field name a declaration holds, at every depth (an ``Extra``'s entries too)."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if origin is Annotated:
        extra = {n for m in shape.__metadata__ if isinstance(m, shapes.Extra)
                 for n in _field_names(m.shape, seen)}
        return extra | _field_names(args[0], seen)
    if typing.is_typeddict(shape):
        if shape in seen:
            return set()
        seen.add(shape)
        hints = typing.get_type_hints(shape, include_extras=True)
        return set(hints) | {n for h in hints.values() for n in _field_names(h, seen)}
    return {n for a in args for n in _field_names(a, seen)}


#: The snapshot reference: docs/schema.md, and the pages it sends a section's details to.
REFERENCE = ("schema", "launch", "launchers", "runtime", "pytest", "trackers")


@pytest.mark.parametrize("section", sorted(shapes.DECLARED))
def test_every_declared_field_is_named_in_the_reference(section: str) -> None:
    """A field declared is said in docs/schema.md (or the page it links for that part), named
    as `field`: adding one without saying it fails here (docs/development.md's recipe)."""
    text = "".join((ROOT / "docs" / f"{name}.md").read_text() for name in REFERENCE)
    names = _field_names(shapes.DECLARED[section], set()) - {"errors"}
    assert sorted(n for n in names if f"`{n}`" not in text) == [], (
        f"say these [{section}] fields in docs/schema.md, in the section's row")
