"""The N-way diff at job scale: the bulk loader against the plain one, a folder of rank
snapshots, the odd ones out named by host and rank, and output that fits a screen."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runsnap
from runsnap.diffing.bulkload import SectionCache, load_many, snapshot_files
from runsnap.diffing.result import SnapInfo, who
from runsnap.errors import SnapshotError
from runsnap.render import render
from runsnap.snapshot import Snapshot, load
from runsnap.snapshot.store import bisect_folder_name
from tests.conftest import RUNSNAP

LAUNCH = {"MASTER_ADDR": "10.0.0.1", "NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "WARN"}


def job(base: Snapshot, folder: Path, hosts: int = 4, per_host: int = 4,
        tweak: dict[int, dict[str, str]] | None = None) -> list[Path]:
    """The snapshots srun would leave: one real capture made into each rank (its launcher
    variables, its host), as ``-o {folder}/{host}-{rank}.toml`` names them."""
    paths = []
    vars_ = dict(base["env"]["vars"])
    for r in range(hosts * per_host):
        host = f"node-{r // per_host}"
        env = {**vars_, **LAUNCH, "SLURM_JOB_ID": "77", "SLURM_PROCID": str(r),
               "SLURM_LOCALID": str(r % per_host), "SLURM_NTASKS": str(hosts * per_host),
               "SLURMD_NODENAME": host, **(tweak or {}).get(r, {})}
        meta = {**base.meta, "host": host, "id": f"{r:032x}",
                "captured_at": f"2026-11-30T10:00:{r % 60:02d}.000+00:00"}
        snap = base.replace(meta=meta, sections={**base.sections,
                                                 "env": {**base["env"], "vars": env}})
        paths.append(snap.save(folder / f"{host}-{r}.toml").path)
    return paths


@pytest.fixture
def base(cap) -> Snapshot:
    return cap({}, label="train")


def test_odd_ones_named_by_host_and_rank(base, tmp_path):
    tweak = {r: {"NCCL_IB_HCA": "mlx5_1"} for r in range(8, 12)}  # every rank of node-2
    tweak[5] = {"NCCL_DEBUG": "INFO"}
    job(base, tmp_path / "snaps", tweak=tweak)
    report = runsnap.diff(tmp_path / "snaps")
    assert report.verdict() == ("16 snapshots, 2 keys not the same everywhere (3 per-rank keys "
                                "hidden); odd ones out: node-1 rank 5, node-2 (ranks 8-11)")
    text = render(report, "text")
    assert ("   2. env NCCL_IB_HCA  [83]\n"
            "        node-2 (ranks 8-11) has mlx5_1\n"
            "        the other 12 have mlx5_0\n") in text
    assert ("        node-1 rank 5 has INFO\n"
            "        the other 15 have WARN\n") in text
    assert "  set: 16 snapshots from 4 hosts (node-0 … node-3), ranks 0-15, job 77" in text
    hidden = {r.key: r.kind for r in report.hidden}
    assert hidden == {"SLURM_PROCID": "per-rank", "SLURM_LOCALID": "per-rank",
                      "SLURMD_NODENAME": "per-rank"}
    assert [r.odd_members for r in report.counted] == [(5,), (8, 9, 10, 11)]


@pytest.mark.slow
def test_output_fits_a_screen_whatever_n(base, tmp_path):
    tweak = {r: {f"APP_{r}": "x"} for r in range(0, 300, 7)}  # 43 keys, one odd rank each
    job(base, tmp_path / "snaps", hosts=30, per_host=10, tweak=tweak)
    report = runsnap.diff(tmp_path / "snaps")
    text = render(report, "text")
    assert len(text.splitlines()) <= 60 and "node-29" in text
    assert "19 more keys: see them all with --format json" in text
    assert "        node-0 rank 0 has x\n        the other 299 have it unset\n" in text
    md = render(report, "markdown")
    assert len(md.splitlines()) <= 60 and "<details><summary>16 more keys</summary>" in md


def test_split_and_no_majority(base, tmp_path):
    tweak = {r: {"NCCL_ALGO": "Tree" if r % 2 else "Ring"} for r in range(8)}
    job(base, tmp_path / "s", hosts=2, per_host=4, tweak=tweak)
    report = runsnap.diff(tmp_path / "s")
    row = report.counted[0]
    assert (row.key, row.kind, row.odd_members) == ("NCCL_ALGO", "split", ())
    assert "4 have Ring (node-0 (ranks 0, 2), node-1 (ranks 4, 6))" in render(report)


def test_folder_on_the_command_line(base, tmp_path, cli_invoke):
    job(base, tmp_path / "snaps" / "77", tweak={3: {"NCCL_IB_HCA": "mlx5_9"}})
    out = cli_invoke(["diff", str(tmp_path / "snaps" / "77")], expect=1).stdout
    assert out.startswith("runsnap diff: 16 snapshots, 1 key not the same everywhere (3 per-rank "
                          "keys hidden); odd one out: ")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli_invoke(["diff", str(empty)], expect=2)
    assert result.stderr == f"runsnap: {empty}: no snapshot files (*.toml) in this folder\n"


def test_a_bisections_trials_in_the_folder_are_not_ranks(base, tmp_path, cli_invoke):
    """``runsnap diff .runsnap`` after a bisect: its trials (``bisect-<time>-<id>/``, named by
    the function bisect names them with) are not the job's ranks; a folder of the user's that
    only starts alike is searched as before, and the trials' folder named alone is diffed."""
    folder = tmp_path / ".runsnap"
    job(base, folder, hosts=1, per_host=3)
    trials = folder / bisect_folder_name("20261202T040000Z", "0a1b")
    for name in ("good", "bad", "trial-1"):
        base.save(trials / f"{name}.toml")
    base.save(folder / "bisect-logs" / "extra.toml")
    out = cli_invoke(["diff", str(folder)], expect=1).stdout  # bisect-logs/extra.toml differs
    assert out.startswith("runsnap diff: 4 snapshots"), out
    out = cli_invoke(["diff", str(trials)], expect=0).stdout
    assert out.startswith("runsnap diff: 3 snapshots"), out


def test_sections_shared_and_loaded_as_the_plain_loader_does(base, tmp_path):
    paths = job(base, tmp_path / "snaps", hosts=2, per_host=3)
    cache = SectionCache()
    many = load_many(paths, cache=cache)
    assert many == [load(p) for p in paths]
    assert all(s["packages"] is many[0]["packages"] for s in many)
    one = SectionCache()
    one.load(str(paths[0]))  # the pieces of one file ([meta], [meta.collect_ms], [env.vars]...)
    # then per file only the two pieces that differ: [meta]'s head and [env.vars]
    assert cache.parsed == one.parsed + 2 * (len(paths) - 1)


def test_progress_goes_to_a_terminal(base, tmp_path):
    job(base, tmp_path / "snaps", hosts=2, per_host=2)
    master, slave = os.openpty()
    proc = subprocess.Popen([*RUNSNAP, "diff", str(tmp_path / "snaps")],
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    out, _ = proc.communicate(timeout=60)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert b"runsnap: loading snapshots 4/4" in seen
    assert out.startswith("runsnap diff: 4 snapshots")
    piped = subprocess.run([*RUNSNAP, "diff", str(tmp_path / "snaps")],
                           capture_output=True, text=True)
    assert piped.stderr == ""


# --------------------------------------------------------------------------- the bulk loader

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
trap = st.sampled_from(["[env]", "[[outcome.x]]", "[meta]\nid = 1", "schema = 9", "'''", '"""',
                        "x = 1", "[git.repos.\"a\"]", "# end of runsnap snapshot", "\r\n", "\\"])
values = st.one_of(st.none(), st.integers(), st.booleans(), text,
                   st.lists(st.one_of(text, trap), max_size=4).map("\n".join))
sections = st.dictionaries(st.sampled_from(["env", "git", "outcome", "zeta", "command"]),
                           st.dictionaries(st.sampled_from(["a", "~b", "c d", "vars"]),
                                           st.one_of(values, st.dictionaries(text, values,
                                                                             max_size=3)),
                                           max_size=3), max_size=4)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(docs=st.lists(sections, min_size=1, max_size=4))
def test_bulk_loader_equals_plain_loader_on_generated_snapshots(docs, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gen")
    paths = []
    for i, secs in enumerate(docs):
        snap = Snapshot(meta={"id": str(i), "captured_at": "t", "host": "h"}, sections=secs)
        paths.append(snap.save(folder / f"{i}.toml").path)

    def outcome(read):  # the snapshots, or the message of the first file refused
        try:
            return read()
        except SnapshotError as exc:
            return str(exc)

    assert outcome(lambda: load_many(paths + paths)) == outcome(
        lambda: [load(p) for p in paths + paths])


@pytest.mark.parametrize("content, message", [
    ("", "empty file, not a runsnap snapshot"),
    ("schema = 1\n[meta]\nid = 'x'\ncaptured_at = 't'\n", "the snapshot is truncated"),
    ("schema = 1\n[meta\n", "not valid TOML"),
])
def test_bulk_loader_errors_are_the_plain_loaders(tmp_path, content, message):
    p = tmp_path / "bad.toml"
    p.write_text(content)
    with pytest.raises(SnapshotError) as plain:
        load(p)
    with pytest.raises(SnapshotError) as bulk:
        load_many([p])
    assert str(bulk.value) == str(plain.value) and message in str(plain.value)


def test_snapshot_files_natural_order(tmp_path):
    for name in ("r10.toml", "r9.toml", ".hidden.toml", "notes.txt", "sub/r2.toml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("")
    assert [Path(p).relative_to(tmp_path).as_posix() for p in snapshot_files(tmp_path)] == [
        "r9.toml", "r10.toml", "sub/r2.toml"]


def test_who_names_hosts_and_rank_ranges():
    infos = [SnapInfo(None, str(i), "", "", f"node-{i // 8}", rank=i) for i in range(64)]
    assert who(list(range(8, 16)), infos) == "node-1 (ranks 8-15)"
    assert who([1, 9, 17, 25, 33], infos) == ("node-0 rank 1, node-1 rank 9, node-2 rank 17, "
                                               "2 more (5 snapshots in all)")


def test_the_same_odd_ones_in_several_keys_are_one_entry(base, tmp_path):
    """Rank 5 differs in two variables and a third rank in one: rank 5 is one machine set up
    differently (one entry naming both keys), the other stays a key of its own."""
    tweak = {5: {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}, 9: {"NCCL_IB_HCA": "mlx5_9"}}
    job(base, tmp_path / "s", hosts=2, per_host=8, tweak=tweak)
    report = runsnap.diff(tmp_path / "s")
    assert len(report.counted) == 3  # the rows themselves stay one per key (JSON, --stat)
    text = render(report, "text")
    assert "node-0 rank 5 differs from the other 15 in 2 keys" in text
    assert "        env NCCL_ALGO: Tree; the others have it unset\n" in text
    assert "        env NCCL_PROTO: LL; the others have it unset\n" in text
    assert "env NCCL_IB_HCA  [" in text and "node-1 rank 9 has mlx5_9" in text
    md = render(report, "markdown")
    assert "`node-0 rank 5 differs from the other 15 in 2 keys`" in md
    assert "env NCCL_ALGO: Tree; the others have it unset<br>env NCCL_PROTO: LL" in md
