"""``[runtime] libraries_loaded``: the GPU and interconnect libraries each traced process had
mapped when it ended (the hook reads ``/proc/self/maps``), and what ``diff`` makes of it for a
``toolchain.ld_library_path`` difference (runsnap/diffing/loaded.py): a copy no process loaded
is incidental; a copy a run loaded is read evidence. (A Vertex AI container's
``LD_LIBRARY_PATH=/usr/local/cuda/lib64`` put libcudart.so on the path of runs of torch's CPU
build: listed as "the program may load it" at 60, it split five verdicts of fresh12.)

A real shared library (zlib's, copied under a name the toolchain lists), real captures,
real ``dlopen``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import runsnap
from runsnap.capturing import run
from runsnap.capturing.collectors.toolchain import LIBRARY_PREFIXES
from runsnap.tracing import HOOK_DIR
from tests.tracing.conftest import child_env, mapped_library

PROGRAM = """
import ctypes, sys
if "--load" in sys.argv:
    try:
        ctypes.CDLL("libnccl.so.2")
    except OSError:
        pass
print("done")
"""


def _pair(tmp_path: Path, load: bool) -> runsnap.Report:
    base_env = child_env()
    libs = tmp_path / "cuda" / "lib64"
    libs.mkdir(parents=True)
    shutil.copy(mapped_library(), libs / "libnccl.so.2")
    (tmp_path / "prog.py").write_text(PROGRAM)
    argv = [sys.executable, "prog.py", *(["--load"] if load else [])]
    run(argv, cwd=tmp_path, output=tmp_path / "a.toml",
        env={**base_env, "LD_LIBRARY_PATH": str(libs)})
    run(argv, cwd=tmp_path, output=tmp_path / "b.toml", env=base_env)
    a, b = runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml")
    assert list(a.records.runtime.libraries_loaded or ()) == (["libnccl.so.2"] if load else [])
    assert list(b.records.runtime.libraries_loaded or ()) == []
    report = runsnap.diff(a, b)
    assert isinstance(report, runsnap.Report)
    return report


def test_the_hook_watches_the_libraries_the_toolchain_lists() -> None:
    text = (Path(HOOK_DIR) / "_runsnap_trace_imports.py").read_text()
    start = text.index("LIBRARIES = (")
    listed = text[start:text.index(")", start)]
    assert [x for x in LIBRARY_PREFIXES if f'b"{x}"' not in listed] == []
    assert listed.count('b"') == len(LIBRARY_PREFIXES)


def test_a_copy_on_the_path_that_no_process_loaded_is_incidental(tmp_path: Path) -> None:
    report = _pair(tmp_path, load=False)
    lib = next(d for d in report.differences if d.key == "toolchain.ld_library_path.libnccl.so.2")
    assert lib.evidence_kind == "incidental", (lib.evidence_kind, lib.reason)
    assert "no process of either run loaded libnccl.so.2" in lib.reason
    assert lib not in report.counted


def test_a_copy_a_run_loaded_is_read_evidence(tmp_path: Path) -> None:
    report = _pair(tmp_path, load=True)
    lib = next(d for d in report.differences if d.key == "toolchain.ld_library_path.libnccl.so.2")
    assert lib.evidence_kind == "read", (lib.evidence_kind, lib.reason)
    assert "A's processes loaded libnccl.so.2" in lib.reason
