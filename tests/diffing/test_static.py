"""Static evidence: an untraced run's differing variable read by an installed package."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import runsnap
from runsnap.diffing import compare


def _venv_with_reader(root: Path, name: str = "FASTSRV_ENABLE_OVERLAP") -> Path:
    """A real venv with a package declaring its variables the SGLang way (RECORD included)."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    py = root / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    (site / "fastsrv").mkdir()
    (site / "fastsrv" / "__init__.py").write_text("")
    (site / "fastsrv" / "environ.py").write_text(
        "class EnvBool:\n    def __init__(self, d):\n        self.d = d\n\n"
        f"class Envs:\n    {name} = EnvBool(False)\n\nenvs = Envs()\n")
    (site / "fastsrv" / "sched.py").write_text(
        "from fastsrv.environ import envs\n\ndef plan():\n"
        f"    return envs.{name}.get()\n")
    info = site / "fastsrv-1.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fastsrv\nVersion: 1.2.0\n")
    (info / "RECORD").write_text("fastsrv/__init__.py,,\nfastsrv/environ.py,,\n"
                                 "fastsrv/sched.py,,\nfastsrv-1.2.0.dist-info/METADATA,,\n")
    return py


def test_a_variable_an_installed_package_reads_ranks_above_the_name_rules(tmp_path):
    py = _venv_with_reader(tmp_path / "venv")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "NCCL_ALGO": "Ring"}
    argv = [str(py), "-m", "fastsrv.serve"]
    a = runsnap.capture(argv, env=base, cwd=tmp_path)
    b = runsnap.capture(argv, env={**base, "FASTSRV_ENABLE_OVERLAP": "1", "NCCL_ALGO": "Tree",
                                   "MY_NOTE": "x"}, cwd=tmp_path)
    plain = compare(a, b)
    assert plain.counted[0].key == "NCCL_ALGO"  # names alone: the NCCL family ranks first
    report = compare(a, b, static=True)
    first = report.counted[0]
    assert (first.key, first.evidence_kind) == ("FASTSRV_ENABLE_OVERLAP", "static")
    assert first.reason == ("an installed package reads it: fastsrv 1.2.0  "
                            "fastsrv/environ.py:6  declaration and 1 more")
    assert "fastsrv 1.2.0  fastsrv/sched.py:4  read" in first.evidence
    kinds = {d.key: d.evidence_kind for d in report.counted}
    assert kinds["NCCL_ALGO"] == "name" and kinds["MY_NOTE"] == "name"


def test_check_knows_the_names_installed_packages_declare(tmp_path, cli_invoke):
    """A name one letter from a known one is no misspelling when an installed package of the
    run's interpreter declares it (a newer release than runsnap's list)."""
    from runsnap.checks.rules import check

    newer = "SGLANG_ENABLE_TORCH_COMPILES"
    py = _venv_with_reader(tmp_path / "venv", newer)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), newer: "1",
           "NCCL_NET_GDR_LEVEK": "PHB"}
    snap = runsnap.capture([str(py), "-m", "fastsrv.serve"], env=env, cwd=tmp_path)
    snap = snap.save(tmp_path / "s.toml")
    assert {f.path[-1] for f in check(snap).findings} == {newer, "NCCL_NET_GDR_LEVEK"}
    out = cli_invoke(["check", str(snap.path), "--format", "json"], expect=1).stdout
    assert [f["path"] for f in json.loads(out)["findings"]] == [["env", "NCCL_NET_GDR_LEVEK"]]


def test_a_legacy_egg_info_install_is_searched_too(tmp_path):
    """pip 23.0 without ``wheel`` (Debian 12's) installs a project with no pyproject.toml the
    legacy way: an ``.egg-info`` folder (``name-version-pyX.Y.egg-info``) listing its files in
    ``installed-files.txt``. Its reads are evidence as a wheel's are; the diff once looked for
    ``.dist-info`` folders alone and found no package reading anything."""
    name = "FASTSRV_ENABLE_OVERLAP"
    py = _venv_with_reader(tmp_path / "venv", name)
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    wheel_info = site / "fastsrv-1.2.0.dist-info"
    for f in wheel_info.iterdir():
        f.unlink()
    wheel_info.rmdir()
    info = site / "fastsrv-1.2.0-py3.11.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: fastsrv\nVersion: 1.2.0\n")
    (info / "top_level.txt").write_text("fastsrv\n")
    (info / "installed-files.txt").write_text(
        "../fastsrv/__init__.py\n../fastsrv/environ.py\n../fastsrv/sched.py\nPKG-INFO\n"
        "top_level.txt\n")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    argv = [str(py), "-m", "fastsrv.serve"]
    a = runsnap.capture(argv, env=base, cwd=tmp_path)
    b = runsnap.capture(argv, env={**base, name: "1", "MY_NOTE": "x"}, cwd=tmp_path)
    assert a["packages"]["distributions"]["fastsrv"]["version"] == "1.2.0"
    first = compare(a, b, static=True).counted[0]
    assert (first.key, first.evidence_kind) == (name, "static")
    assert "fastsrv 1.2.0  fastsrv/sched.py:4  read" in first.evidence
