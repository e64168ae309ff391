"""capture --track wandb with W&B's real client in offline mode (``WANDB_MODE=offline``: real run
folders, no network): the run folder holds the snapshot, and ``wandb:RUN_ID`` / ``wandb:FOLDER``
name it wherever a snapshot is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from tests.track.conftest import base_env
from tests.track.conftest import runsnap as run_runsnap

#: Real servers, real clients, real launches: seconds each.
pytestmark = pytest.mark.slow

pytest.importorskip("wandb", reason="wandb is not installed (pip install -e '.[test]' brings it)")


def offline_env(tmp: Path, **extra: str) -> dict[str, str]:
    return base_env(tmp, WANDB_MODE="offline", **extra)


def tracked(project: Path, tmp: Path, out: Path, *command: str,
            status: int = 0) -> tuple[runsnap.Snapshot, str]:
    res = run_runsnap(["capture", "--track", "wandb", "-o", str(out), "--", *command], project,
                      offline_env(tmp))
    assert res.returncode == status, res.stderr
    snap = runsnap.load(out)
    assert snap.meta["track"]["errors"] == [], res.stderr
    return snap, snap.meta["track"]["run"].removeprefix("wandb:")


def folders(project: Path, run_id: str) -> list[Path]:
    return sorted((project / "wandb").glob(f"*run-*-{run_id}"))


def test_the_offline_run_folder_holds_the_snapshot(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.toml"
    snap, run_id = tracked(project, tmp_path, out, sys.executable, "train.py", "wandb", "0.1")
    # the child's run took the id runsnap chose: its folder and runsnap's carry the same id
    runs = folders(project, run_id)
    assert len(runs) == 2
    held = [f / "files" / "runsnap" / "snapshot.toml" for f in runs]
    assert [p.is_file() for p in held] == [False, True]
    assert held[1].read_text() == out.read_text()
    assert read_records(runs[0])["config"]["lr"] == 0.1  # the child's own run
    assert "WANDB_RUN_ID" not in snap["env"]["vars"]
    assert snap.meta["track"] == {"tracker": "wandb", "run": f"wandb:{run_id}", "errors": []}
    # the config runsnap logged is in the run's own record (read with W&B's own reader)
    record = read_records(runs[1])
    assert record["config"]["runsnap"]["outcome"] == "exited"
    assert record["config"]["runsnap"]["id"] == snap.id
    assert "runsnap" in record["tags"] and "runsnap/snapshot.toml" in record["files"]


#: Reads an offline run's transaction log (``run-ID.wandb``: a LevelDB-style log of W&B's protobuf
#: records, blocks of 32 KiB, each record with a 7-byte header) with W&B's own record types.
_RECORDS = """
import json, struct, sys
from wandb.proto import wandb_internal_pb2
BLOCK = 32768
data = open(sys.argv[1], "rb").read()
assert data[:4] == b":W&B", data[:7]
pos, part, records = 7, b"", []
while pos + 7 <= len(data):
    left = BLOCK - pos % BLOCK
    _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
    if left < 7 or (kind == 0 and length == 0):  # the rest of a block is padding
        pos += left
        continue
    chunk = data[pos + 7:pos + 7 + length]
    pos += 7 + length
    if kind == 1:
        records.append(chunk)
    elif kind in (2, 3):
        part += chunk
    elif kind == 4:
        records.append(part + chunk)
        part = b""
config, tags, files = {}, [], []
for raw in records:
    rec = wandb_internal_pb2.Record()
    rec.ParseFromString(raw)
    kind = rec.WhichOneof("record_type")
    if kind == "run":
        tags += list(rec.run.tags)
        config.update({i.key: json.loads(i.value_json) for i in rec.run.config.update})
    elif kind == "config":
        config.update({i.key: json.loads(i.value_json) for i in rec.config.update})
    elif kind == "files":
        files += [f.path for f in rec.files.files]
print(json.dumps({"config": config, "tags": tags, "files": files}))
"""


def read_records(folder: Path) -> dict:
    log = next(folder.glob("run-*.wandb"))
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", _RECORDS, str(log)],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_diff_of_two_offline_runs(project: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    _, run_a = tracked(project, tmp_path, a, sys.executable, "train.py", "wandb", "0.1")
    _, run_b = tracked(project, tmp_path, b, sys.executable, "-c", "import sys; sys.exit(4)",
                        status=4)
    env = offline_env(tmp_path)
    files = run_runsnap(["diff", "--format", "json", str(a), str(b)], project, env)
    by_id = run_runsnap(["diff", "--format", "json", f"wandb:{run_a}", f"wandb:{run_b}"],
                        project, env)
    assert files.returncode == by_id.returncode == 1, by_id.stderr

    def differences(text: str) -> list:
        return json.loads(text)["differences"]

    assert differences(by_id.stdout) == differences(files.stdout)
    folder_b = folders(project, run_b)[-1]
    by_folder = run_runsnap(["diff", "--format", "json", f"wandb:{folders(project, run_a)[-1]}",
                             f"wandb:{folder_b}"], tmp_path, env)
    assert differences(by_folder.stdout) == differences(files.stdout)

    listed = run_runsnap(["ls", "--track", "wandb", "--format", "json"], project, env)
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert [e["exit_status"] for e in entries] == [4, 0]
    assert all(e["ref"].startswith("wandb:wandb/offline-run-") for e in entries)
    shown = run_runsnap(["show", entries[0]["ref"]], project, env)
    assert shown.returncode == 0 and "sys.exit(4)" in shown.stdout, shown.stderr

    missing = run_runsnap(["show", "wandb:zzzzzzzz"], project, env)
    assert missing.returncode == 2 and missing.stderr.startswith(
        "runsnap: wandb:zzzzzzzz: no run folder of zzzzzzzz holding a snapshot in ")


def test_a_program_logs_its_own_snapshot_to_its_run(project: Path, tmp_path: Path) -> None:
    script = project / "own.py"
    script.write_text(
        "import wandb, runsnap.track\n"
        "run = wandb.init(project='demo')\n"
        "print(runsnap.track.log_snapshot(label='inside'))\n"
        "run.finish()\n")
    done = subprocess.run([sys.executable, "-W", "ignore", str(script)], cwd=project,
                          env=offline_env(tmp_path), capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    ref = done.stdout.strip().splitlines()[-1]
    run_id = ref.removeprefix("wandb:")
    [folder] = folders(project, run_id)
    snap = runsnap.load(folder / "files" / "runsnap" / "snapshot.toml")
    assert snap.label == "inside" and snap.meta["launch"] == "pid"
    assert read_records(folder)["config"]["runsnap"]["label"] == "inside"
