"""A scan of the environment in real third-party code: SGLang 0.5.23's own
``sglang/srt/environ.py`` (fixtures/sglang/README.md), run as SGLang runs it, at import.
Its ``_handle_deprecated_envs`` iterates ``os.environ``, keeps ``key.startswith("SGL_")`` and
writes each kept value back under the ``SGLANG_`` name: the scan reads the ``SGL_`` names and
no other, though the same lines write the ``"SGLANG_"`` literal for the new names."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.diffing import compare
from tests.conftest import asset
from tests.diffing.conftest import Capture, write_script

SERVER = """
    from sglang.srt.environ import envs

    def prefetch_blocks(total_mb):
        return total_mb // envs.SGLANG_PREFETCH_BLOCK_SIZE_MB.get()

    print("blocks", prefetch_blocks(256))
    """


def test_sglangs_own_rename_scan_reads_the_legacy_names_only(launched: Capture,
                                                              tmp_path: Path) -> None:
    """B sets the legacy ``SGL_PREFETCH_BLOCK_SIZE_MB=0`` (SGLang renames it, and the server
    divides by it) and ``SGLANG_LOG_GC=1``, which the rename's other literal would match but
    no code reads: the legacy variable is the cause, read in SGLang's scan of the ``SGL_*``
    names; ``SGLANG_LOG_GC`` was not read."""
    app = write_script(tmp_path, "server.py", SERVER)
    env = {"PYTHONPATH": str(asset("sglang", "0.5.23"))}
    argv = [sys.executable, "-W", "ignore::UserWarning", str(app)]
    a = launched(env={**env, "SGL_PREFETCH_BLOCK_SIZE_MB": "16"}, argv=argv)
    b = launched(env={**env, "SGL_PREFETCH_BLOCK_SIZE_MB": "0", "SGLANG_LOG_GC": "1"},
                 argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    top = report.candidates[0]
    assert (top.key, report.confidence) == ("SGL_PREFETCH_BLOCK_SIZE_MB", "confident"), \
        report.verdict()
    assert "scan of the SGL_* variables" in top.reason, top.reason
    ranked = {d.key: d for d in (*report.counted, *report.hidden)}
    assert ranked["SGLANG_LOG_GC"].evidence_kind == "unread", ranked["SGLANG_LOG_GC"].reason


def test_a_scan_that_keeps_names_by_membership_reads_only_those(launched: Capture,
                                                                tmp_path: Path) -> None:
    """A launcher's module keeps the variables that hold ``NCCL`` and two it names
    (``k in ("MASTER_ADDR", "MASTER_PORT")``) to hand to its workers, and sizes its buffer from
    what it kept. The kept ``NCCL_BUFF_MB`` is read there (the cause: B's ``0`` divides); the
    ``TORCH_LOGS`` it passed over is unread, not "seen in a bulk copy"."""
    write_script(tmp_path / "site", "launchkit/__init__.py", '''
        import os

        def worker_env():
            return {k: v for k, v in os.environ.items()
                    if "NCCL" in k or k in ("MASTER_ADDR", "MASTER_PORT")}

        def buffers(total_mb):
            return total_mb // int(worker_env().get("NCCL_BUFF_MB", "4"))
        ''')
    app = write_script(tmp_path, "launch.py", """
        import launchkit
        print("buffers", launchkit.buffers(64))
        """)
    argv = [sys.executable, str(app)]
    env = {"PYTHONPATH": str(tmp_path / "site"), "MASTER_ADDR": "127.0.0.1"}
    a = launched(env={**env, "NCCL_BUFF_MB": "8", "TORCH_LOGS": "dynamo"}, argv=argv)
    b = launched(env={**env, "NCCL_BUFF_MB": "0", "TORCH_LOGS": "+dynamo"}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    row = next(r for r in a["runtime"]["bulk_sites"] if r.get("scan"))
    assert (row.get("contains"), row.get("kept")) == (["NCCL"], ["MASTER_ADDR", "MASTER_PORT"])
    report = compare(a, b)
    assert (report.candidates[0].key, report.confidence) == ("NCCL_BUFF_MB", "confident"), \
        report.verdict()
    ranked = {d.key: d for d in (*report.counted, *report.hidden)}
    assert ranked["TORCH_LOGS"].evidence_kind == "unread", ranked["TORCH_LOGS"].reason
