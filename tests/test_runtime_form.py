"""The stored form of ``[runtime]`` (schema 2) and its reader: the same records as schema 1,
written compactly; older snapshots still read; a snapshot from someone else never breaks it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from runsnap.diffing.sections import runtime as runtime_diff
from runsnap.errors import SnapshotError
from runsnap.snapshot import Snapshot, dumps, load, loads
from runsnap.snapshot.runtime import bulk_sites, names, variable, variables
from runsnap.snapshot.runtime_write import compact

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "runtime"
META = {"id": "x", "captured_at": "2026-12-01T00:00:00Z"}


def asset(name: str) -> Path:
    path = FIXTURES / name
    assert path.is_file(), path
    return path


def schema1_section() -> dict[str, Any]:
    """A schema 1 ``[runtime]`` with every field and form a record can take."""
    st = ["a/b.py:3 in f", "<frozen importlib._bootstrap>:241 in _call_with_frames_removed"]
    return {
        "traced": True, "native": "observed",
        "processes": [
            {"pid": 100, "ppid": 1, "argv": ["python", "x.py"], "executable": "/p", "how": "exec",
             "ended": "exited"},
            {"pid": 101, "ppid": 100, "argv": ["python", "-c", "w"], "executable": "/p",
             "how": "fork", "ended": "os._exit(0)"},
        ],
        "env": {
            "PLAIN": {"set": False, "reads": 1, "bulk_reads": 0, "bulk": False, "python": True,
                      "native": False, "pids": [100, 101], "via": ["get"],
                      "sites": [{"stack": st, "pid": 100, "via": "get", "set": False,
                                 "reads": 1}]},
            "RANK": {"set": True, "reads": 5, "bulk_reads": 1, "bulk": False, "python": True,
                     "native": True, "pids": [100, 4242], "via": ["[]", "in"], "value": "3",
                     "other_values": ["4"], "native_reads": 2, "written": True,
                     "sites": [{"stack": st[:1], "pid": 100, "via": "[]", "set": True,
                                "reads": 4},
                               {"stack": ["odd frame, not FILE:LINE"], "pid": 4242,
                                "via": "in", "set": False, "reads": 1, "later": 1}]},
            "ONE_PID": {"set": False, "reads": 2, "bulk_reads": 0, "bulk": False,
                        "python": True, "native": False, "pids": [101], "via": ["getenv"],
                        "sites": [{"stack": st, "pid": 101, "via": "getenv", "set": False,
                                   "reads": 2}]},
            "NATIVE_ONLY": {"set": False, "reads": 0, "bulk_reads": 0, "bulk": False,
                            "python": False, "native": True, "pids": [100, 101],
                            "native_reads": 3},
            "COPIED": {"set": True, "reads": 0, "bulk_reads": 2, "bulk": True, "python": False,
                       "native": False, "pids": [100, 101], "future_field": [1]},
        },
        "modules": {"torch": {"file": "/t/__init__.py", "origin": "site-packages"}},
        "stdlib_modules": ["os"],
        "bulk_sites": [{"stack": st, "pid": 100, "reads": 1, "names": 30}],
    }


def test_the_stored_form_gives_back_the_records_of_schema_1() -> None:
    old = schema1_section()
    stored = compact(copy.deepcopy(old))
    assert "env" not in stored
    assert variables(stored) == old["env"]
    # read first (from Python or natively), then by name, as schema 1 wrote them
    assert list(variables(stored)) == ["NATIVE_ONLY", "ONE_PID", "PLAIN", "RANK", "COPIED"]
    assert variable(stored, "RANK") == old["env"]["RANK"]
    assert sorted(names(stored)) == sorted(old["env"])
    assert bulk_sites(stored) == old["bulk_sites"]
    # written and read back through TOML: still the same records
    snap = Snapshot(meta=META, sections={"runtime": stored})
    back = loads(dumps(snap))
    assert variables(back["runtime"]) == old["env"]
    # the records of an older snapshot are read as they are
    assert variables(old) == old["env"] and variable(old, "PLAIN") == old["env"]["PLAIN"]


def test_ranks_that_differ_in_pids_and_values_write_the_same_variable_lines() -> None:
    a, b = schema1_section(), schema1_section()
    for proc, pid in zip(b["processes"], (200, 201), strict=True):
        proc["pid"] = pid
    for entry in b["env"].values():
        entry["pids"] = [{100: 200, 101: 201}.get(p, p) for p in entry["pids"]]
        for site in entry.get("sites", []):
            site["pid"] = {100: 200, 101: 201}.get(site["pid"], site["pid"])
    b["env"]["RANK"]["value"] = "7"

    def lines(section: dict[str, Any]) -> list[str]:
        text = dumps(Snapshot(meta=META, sections={"runtime": compact(section)}))
        return text[text.index("[runtime.vars]"):].split("\n[")[0].splitlines()

    assert lines(a) == lines(b)
    found = runtime_diff.compare(compact(a), compact(b))
    assert [(d.key, d.a, d.b) for d in found] == [("env RANK", "3", "7")]
    assert found == runtime_diff.compare(a, b)  # the old form diffs the same


def test_a_real_traced_torch_rank_is_stored_in_at_most_64_kb() -> None:
    """A real capture (a CPU torch rank of ``torchrun --nproc-per-node 2``, gloo, 5 steps),
    as schema 1 wrote it: 305 KB, 290 KB of it ``[runtime]``."""
    old = load(asset("torch-rank-schema1.toml"))
    assert old.schema == 1 and len(dumps(old)) > 300_000
    new = old.replace(sections={**old.sections, "runtime": compact(old["runtime"])}, schema=2)
    text = dumps(new)
    assert len(text.encode()) <= 64_000
    back = loads(text)
    assert variables(back["runtime"]) == old["runtime"]["env"]
    assert list(variables(back["runtime"])) == list(old["runtime"]["env"])


@pytest.mark.parametrize("broken", [
    {"vars": {"X": {"sites": [99, {"stack": "no", "proc": 7}]}}, "stacks": [[5, -1]],
     "frames": [[9, 1, "f"], "plain"], "files": []},
    {"vars": {"X": [1, "two", None]}, "stacks": [None, "no"], "frames": [{}]},
    {"vars": {"X": {"procs": ["a"], "pids": [True, 3], "via": 5}}, "processes": [{}, {"pid": 4}]},
    {"vars": {"X": 3}, "native_reads": {"Y": "many"}, "values": {}, "bulk_sites": [{"stack": 9}]},
])
def test_a_broken_stored_form_gives_less_never_an_exception(broken: dict[str, Any]) -> None:
    """Within what the declaration leaves free (a variable's stored line, a stack's frame
    numbers), a wrong number or type gives a record with less in it."""
    section = {"traced": True, **broken}
    for name in names(section):
        variable(section, name)
    variables(section)
    bulk_sites(section)
    runtime_diff.compare(section, compact(schema1_section()))


@pytest.mark.parametrize(("broken", "said"), [
    ({"stacks": "not a list"}, "[runtime] stacks: expected an array, found a string"),
    ({"frames": {}}, "[runtime] frames: expected an array, found a table"),
    ({"processes": [3]}, "[runtime] processes[0]: expected a table, found an integer"),
    ({"processes": [{"pid": "x"}]}, "[runtime] processes[0].pid: expected an integer, found a string"),
    ({"values": []}, "[runtime] values: expected a table, found an array"),
])
def test_a_declared_field_of_the_wrong_type_is_one_error_naming_it(broken: dict[str, Any],
                                                                   said: str) -> None:
    """The reader reads the section as its declared record: a field the declaration types is
    refused as the loader refuses it, with one error that names it (never a crash deeper in,
    never a silently empty answer)."""
    section = {"traced": True, "vars": {"X": [0]}, **broken}
    with pytest.raises(SnapshotError) as got:
        variables(section)["X"]
    assert str(got.value).startswith(said)
    text = dumps(Snapshot(meta=META, sections={"runtime": section}))
    with pytest.raises(SnapshotError):
        loads(text)
