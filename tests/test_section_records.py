"""Sections read as frozen records (runsnap/snapshot/records*.py, generated from the
declarations): built once from a snapshot's mapping, absent fields typed defaults, a wrong type
one SnapshotError naming the file, the section and the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runsnap.diffing import differences
from runsnap.errors import SnapshotError
from runsnap.snapshot import Snapshot, load, loads, records_host
from runsnap.snapshot import records as rec
from runsnap.snapshot.sectionrecord import OtherSection

META = {"id": "0" * 32, "captured_at": "2026-01-01T00:00:00+00:00"}


def _snap(**sections: dict) -> Snapshot:
    return Snapshot(meta=META, sections=sections, path="/runs/a.toml")


def test_a_record_reads_each_declared_field_and_nested_records_as_records() -> None:
    snap = _snap(git={"repos": {".": {"commit": "abc", "dirty": True,
                                      "changed": [{"path": "b", "status": "R", "from": "a"}],
                                      "untracked": [{"path": "x", "size": 3}]}}})
    repo = snap.records.git.repos["."]
    assert isinstance(repo, rec.GitRepo)
    assert (repo.commit, repo.dirty, repo.branch) == ("abc", True, None)
    assert repo.changed[0].from_ == "a" and repo.changed[0].status == "R"
    assert repo.untracked == (rec.UntrackedFile({"path": "x", "size": 3}),)
    assert repo.untracked[0].size == 3


def test_an_absent_field_or_section_has_its_typed_default() -> None:
    snap = _snap(outcome={"exit_status": 1})
    out = snap.records.outcome
    assert out.exit_status == 1 and out.signal is None
    assert out.warnings == () and out.metrics == {}
    assert isinstance(out.stdout, rec.Stream) and not out.stdout and out.stdout.lines is None
    assert not snap.records.env and snap.records.env.vars == {}
    assert snap.records.packages.conda is None  # declared Conda | None


def test_the_records_are_built_once_and_frozen() -> None:
    snap = _snap(env={"vars": {"A": "1"}})
    assert snap.records is snap.records and snap.records.env is snap.records.env
    with pytest.raises(AttributeError, match="frozen"):
        snap.records.env.vars = {}  # type: ignore[misc]
    assert snap.records.env.raw == {"vars": {"A": "1"}} and snap.records.env.has("vars")
    assert snap.replace(sections={}).records.env.vars == {}


def test_every_section_reads_its_errors_a_section_no_declaration_covers_too() -> None:
    """``errors`` is declared on every section's record; a section no declaration covers (a
    newer runsnap's) is an OtherSection that declares it alone, the rest read as written."""
    snap = _snap(env={"errors": ["no env"]}, later={"errors": ["no later"], "x": 1})
    assert snap.records.named("env") is snap.records.env
    assert snap.records.env.errors == ["no env"]
    later = snap.records.named("later")
    assert isinstance(later, OtherSection)
    assert (later.errors, later.raw["x"], snap.records.named("gone").errors) == (["no later"], 1, ())
    assert rec.Sections.read("later", {"errors": ["e"]}).errors == ["e"]
    with pytest.raises(SnapshotError, match=r"/runs/a.toml: \[later\] errors: expected an array"):
        _ = _snap(later={"errors": "e"}).records.named("later").errors
    other = _snap(env={"errors": ["no env", "no PATH"]}, later={"x": 1})
    assert [(d.section, d.change, d.a or d.b) for d in differences(snap, other)
            if d.key == "errors"] == [("env", "added", "no PATH"), ("later", "removed", "no later")]


def test_a_wrong_type_is_one_snapshot_error_naming_file_section_and_field() -> None:
    snap = _snap(git={"repos": {"lib": {"commit": 7}}})
    with pytest.raises(SnapshotError) as err:
        snap.records.all()
    assert str(err.value) == ("/runs/a.toml: [git] repos.lib.commit: expected a string, "
                              "found an integer")
    with pytest.raises(SnapshotError, match=r"\[outcome\] stdout: expected a table, found an array"):
        _snap(outcome={"stdout": [1]}).records.all()
    with pytest.raises(SnapshotError, match=r"\[git\] repos.x.untracked\[1\]: expected a table"):
        _snap(git={"repos": {"x": {"untracked": [{}, "y"]}}}).records.all()


def test_a_field_is_read_when_first_asked_and_a_record_built_directly_says_it() -> None:
    read = records_host.VariableRead({"sites": ["x"], "reads": 2})
    assert read.reads == 2  # the other fields are not read yet, so not refused yet
    with pytest.raises(SnapshotError, match=r"^sites\[0\]: expected a table, found a string$"):
        read.sites  # noqa: B018 - reading it is the test
    with pytest.raises(AttributeError, match="no field 'nope'"):
        read.nope  # type: ignore[attr-defined]  # noqa: B018


def test_true_is_not_an_integer_and_an_integer_is_a_number() -> None:
    with pytest.raises(SnapshotError, match=r"exit_status: expected an integer, found true"):
        _snap(outcome={"exit_status": True}).records.all()
    assert _snap(outcome={"duration_s": 2}).records.outcome.duration_s == 2


def test_the_loader_refuses_the_wrong_type_before_any_reader(tmp_path: Path) -> None:
    """The loader checks the whole document against schema.json, written from the same
    declarations: a loaded snapshot's records never raise."""
    good = _snap(git={"repos": {"lib": {"commit": "abc"}}}).save(tmp_path / "good.toml")
    text = Path(good.path_text or "").read_text().replace('commit = "abc"', "commit = 7")
    with pytest.raises(SnapshotError, match="commit"):
        loads(text, path="bad.toml")
    assert load(good.path_text or "").records.git.repos["lib"].commit == "abc"


def _wrong_values() -> list[tuple[str, str, dict]]:
    """(section, the field's place, the section holding a value of the wrong type there) for
    every declared field of every section, and every field of the records they hold."""
    from runsnap.snapshot import sectionrecord as sr

    def fields(cls: type, depth: int) -> list[tuple[str, dict]]:
        out: list[tuple[str, dict]] = []
        for key, kind, arg, _optional in sr.field_specs(cls).values():
            if kind != sr.ANY:
                out.append((key, {key: [1] if kind == sr.SCALAR else 7}))
            if depth and kind in (sr.RECORD, sr.RECORDS, sr.RECORD_TABLE):
                for where, inner in fields(arg, depth - 1):
                    value = inner if kind == sr.RECORD else [inner] if kind == sr.RECORDS \
                        else {"x": inner}
                    at = "[0]" if kind == sr.RECORDS else ".x" if kind == sr.RECORD_TABLE else ""
                    out.append((f"{key}{at}.{where}", {key: value}))
        return out

    return [(name, where, value) for name, cls in rec.Sections._records.items()
            for where, value in fields(cls, 2)]


def test_the_loader_refuses_a_wrong_type_in_every_declared_field(tmp_path: Path) -> None:
    """Whatever reaches a record has passed the loader's check of the same declarations, so a
    reader of a loaded snapshot never meets a wrong type (one line, exit 2, at the load)."""
    cases = _wrong_values()
    assert len(cases) > 300
    for n, (section, where, value) in enumerate(cases):
        meta = {**META, **value} if section == "meta" else META
        sections = {} if section == "meta" else {section: value}
        path = tmp_path / f"{n}.toml"
        Snapshot(meta=meta, sections=sections).save(path)
        with pytest.raises(SnapshotError) as err:
            load(path)
        assert str(path) in str(err.value) and where.rsplit(".", 1)[-1] in str(err.value)
        with pytest.raises(SnapshotError, match=rf"\[{section}\] {re.escape(where)}: expected"):
            Snapshot(meta=meta, sections=sections, path=str(path)).records.all()


#: Host facts and package parts in the forms earlier runsnaps wrote them (before issue 35
#: declared them field by field): AMD devices as amd-smi's and rocm-smi's own keys (2ca4bc7,
#: b356eb0), a cgroup that could not be read, limits and cgroup values of "unlimited", a
#: build of an engine torch does not name, a direct_url.json that was no JSON, the compact
#: ``[runtime]`` form (a bulk site's stack as a number) beside schema 1's (a whole stack).
OLDER = {
    "system": {
        "cgroup": {"version": ""},
        "limits": {"nofile": {"soft": 1024, "hard": "unlimited"}},
        "memory": {"hugepages": {"total": 0, "free": 0, "size_kib": 2048}},
        "numa": {"count": 1, "nodes": {"node0": {"cpus": "0-7"}}},
        "network": {"interfaces": {"lo": {"state": "unknown", "mtu": 65536, "type": "loopback"}},
                    "infiniband": {"mlx5_0": {"ports": {"1": {"state": "4: ACTIVE"}}}}},
        "toolchain": {"ldconfig": {"libnccl.so.2": {"path": "/l/libnccl.so.2",
                                                    "file": "libnccl.so.2.21.5"}},
                      "ld_library_path": {}},
        "gpu": {"topology": {"links": {}, "affinity": {"GPU0": {"cpus": "0-7"}}},
                "amd": {"count": 2, "devices": [
                    {"gpu": 0, "market_name": "MI300X", "gfx_version": "gfx942", "vram_mb": 1},
                    {"card_series": "MI250", "gfx_version": "gfx90a"}]}},
    },
    "packages": {
        "distributions": {"x": {"version": "1", "direct_url": {"error": "not JSON"}}},
        "shadowed": [{"name": "x", "version": "0.9", "location": "/old", "shadowed_by": "/new"}],
        "libraries": {"nccl": {"dir": "/n", "files": ["libnccl.so.2"], "other_dirs": ["/m"]}},
        "builds": {"triton": {"path": "/t", "backends": ["nvidia"]}},
        "conda": {"prefix": "/c", "count": 1, "packages": {"mkl": {"version": "2024", "build": "h"}}},
    },
    "runtime": {"traced": True, "files": [], "frames": ["a.py:1 in f"], "stacks": [[0]],
                "vars": {}, "bulk_sites": [{"stack": 0, "pid": 7, "reads": 1, "scan": False}]},
}


def test_an_older_runsnaps_host_facts_still_load_and_read_as_records(tmp_path: Path) -> None:
    snap = load(_snap(**OLDER).save(tmp_path / "old.toml").path_text or "")
    snap.records.all()  # every field at every depth: none of the wrong type
    system, pk = snap.records.system, snap.records.packages
    assert system.cgroup.version == "" and system.limits["nofile"].hard == "unlimited"
    assert [d.market_name or d.card_series for d in system.gpu.amd.devices or ()] == ["MI300X",
                                                                                        "MI250"]
    assert system.network.interfaces["lo"].speed_mbps is None
    assert system.network.infiniband["mlx5_0"].ports["1"].state == "4: ACTIVE"
    assert (system.toolchain.ldconfig or {})["libnccl.so.2"].file == "libnccl.so.2.21.5"
    assert system.gpu.topology.affinity["GPU0"].numa is None
    assert pk.distributions["x"].direct_url.error == "not JSON"
    assert pk.shadowed[0].name == "x" and pk.libraries["nccl"].other_dirs == ["/m"]
    assert rec.Build(pk.builds.raw["triton"]).backends == ["nvidia"]
    assert (pk.conda.packages if pk.conda else {})["mkl"].build == "h"
    assert snap.records.runtime.bulk_sites[0].stack == 0


def test_a_schema_1_rank_still_loads_and_reads_as_records() -> None:
    from tests.conftest import ROOT

    snap = load(ROOT / "fixtures" / "runtime" / "torch-rank-schema1.toml")
    snap.records.all()
    assert snap.records.runtime.env


def test_a_readers_record_that_adds_a_derived_field_keeps_the_declared_ones() -> None:
    # diff's read found in a scan of the environment: not declared (no snapshot holds one),
    # a VariableRead with the names the scan kept
    from runsnap.diffing.runfacts import ScannedRead, scanned_as

    got = ScannedRead({"python": True, "reads": 2, "scan": "TQDM_*",
                       "sites": [{"stack": ["app.py:3 in main"], "pid": 7}]})
    assert (got.scan, got.reads, got.python) == ("TQDM_*", 2, True)
    assert isinstance(got.sites[0], records_host.ReadSite) and got.sites[0].pid == 7
    assert scanned_as(got) == "TQDM_*"
    assert scanned_as(records_host.VariableRead({"reads": 1, "scan": "X_*"})) is None
    with pytest.raises(AttributeError):
        records_host.VariableRead({"scan": "X_*"}).scan  # noqa: B018
    with pytest.raises(SnapshotError, match=r"scan: expected a string, found an integer"):
        ScannedRead({"scan": 3}).scan  # noqa: B018
