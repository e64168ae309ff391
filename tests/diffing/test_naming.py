"""What the failing run's own words name (runsnap/diffing/naming.py): a value the error quotes,
an engine's own message (runsnap/knowledge/engine-messages.tsv), a warning raised as an error;
each through two real traced launches of a small program."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.snapshot import Snapshot


def _pair(tmp_path: Path, program: str, a: dict[str, str], b: dict[str, str]
          ) -> tuple[Snapshot, Snapshot]:
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(program))
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    good = run([sys.executable, str(app)], env={**base, **a}, cwd=tmp_path,
               output=tmp_path / "good.toml").snapshot
    bad = run([sys.executable, str(app)], env={**base, **b}, cwd=tmp_path,
              output=tmp_path / "bad.toml").snapshot
    assert good["outcome"]["exit_status"] == 0 and bad["outcome"]["exit_status"] == 1
    return good, bad


def _first(a: Snapshot, b: Snapshot) -> tuple[str, str, int, str, str]:
    report = compare(a, b)
    d = report.counted[0]
    return d.key, d.evidence_kind, d.score, d.reason, report.confidence


def test_a_quoted_value_the_failing_run_read_reached_the_raise(tmp_path: Path) -> None:
    # both variables are read in main, the caller of the function that raised; the error
    # quotes one entry of one of them: that value reached the raise
    a, b = _pair(tmp_path, """
        import os

        def connect(backends, port):
            for name in backends.split(","):
                if name not in ("fast", "slow"):
                    raise ValueError(f"unknown backend {name!r} on port {int(port) % 7}")
            print("connected")

        def main():
            connect(os.environ.get("APP_BACKENDS", "fast"), os.environ.get("APP_PORT", "1"))

        main()
        """, {"APP_BACKENDS": "fast,slow", "APP_PORT": "29500"},
        {"APP_BACKENDS": "fast,quick", "APP_PORT": "29611"})
    key, kind, score, reason, _ = _first(a, b)
    assert (key, kind, score) == ("APP_BACKENDS", "failing-path", 99), reason
    assert "B's value quick" in reason
    ranked = {d.key: d.score for d in compare(a, b).counted}
    assert ranked["APP_PORT"] == 98  # read there too, but nothing the run printed names it


def test_an_engines_own_message_backs_the_setting_that_governs_it(tmp_path: Path) -> None:
    # NCCL's bootstrap message (recorded from a real NCCL 2.28 run on an H200, issue 41),
    # printed by a stand-in for the library: it names no variable
    a, b = _pair(tmp_path, """
        import os, sys

        def config():
            return os.environ.get("NCCL_SOCKET_IFNAME"), os.environ.get("NCCL_IB_HCA")

        def init(ifname, hca):
            if ifname == "ib0":
                print("host:1:1 [0] NCCL WARN Bootstrap : no socket interface found",
                      file=sys.stderr)
                raise RuntimeError("NCCL error: invalid usage (run with NCCL_DEBUG=WARN)")
            print("ok")

        init(*config())
        """, {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "mlx5_0"},
        {"NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5_1"})
    key, kind, score, reason, _ = _first(a, b)
    # both are read in the caller of the function that raised; the message backs one
    assert (key, kind) == ("NCCL_SOCKET_IFNAME", "failing-path"), reason
    assert "NVIDIA/nccl src/bootstrap.cc" in reason


def test_a_warning_raised_as_an_error_backs_pythonwarnings(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, """
        import warnings

        def old_api():
            warnings.warn("old_api is deprecated", DeprecationWarning, stacklevel=2)
            return 1

        print(old_api())
        """, {"PYTHONWARNINGS": "default"}, {"PYTHONWARNINGS": "error"})
    key, kind, _score, reason, confidence = _first(a, b)
    assert (key, kind, confidence) == ("PYTHONWARNINGS", "named", "confident"), reason
    assert "a warning raised as an error" in reason


def test_a_check_finding_of_the_failing_side_backs_its_variable_when_the_failure_says_so(
        tmp_path: Path) -> None:
    # the allocator settings are read by a helper process (no Python read to trace); the
    # program words the refusal itself, quoting neither the variable nor the key: only
    # check's finding (an unknown key, in B only) ties the failure to it
    a, b = _pair(tmp_path, """
        import os, subprocess

        THREADS = int(os.environ.get("OMP_NUM_THREADS", "1"))

        def allocate():
            # the settings are parsed by a helper process, handed the whole environment
            helper = 'case "$PYTORCH_CUDA_ALLOC_CONF" in expandable_segment:*) exit 3;; esac'
            if subprocess.run(["sh", "-c", helper], env=dict(os.environ)).returncode:
                raise RuntimeError("the caching allocator config was refused")
            return [0] * THREADS

        def load():
            return allocate()

        def main():
            print(len(load()))

        main()
        """, {"OMP_NUM_THREADS": "4", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
        {"OMP_NUM_THREADS": "8", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"})
    report = compare(a, b)
    d = report.counted[0]
    assert (d.key, report.confidence) == ("PYTORCH_CUDA_ALLOC_CONF", "confident"), d.reason
    assert any("runsnap check finds in failing run B only" in e for e in (d.reason, *d.evidence))


def test_sglangs_context_length_error_backs_its_variable_over_one_read_at_start_up(
        tmp_path: Path) -> None:
    # the headline launch: an EAGLE3 draft whose context (2048) is shorter than the target's;
    # the check and the message as sglang 0.5.23 writes them (ModelConfig._derive_context_length,
    # engine-messages.tsv), with the variable read at start-up beside another one
    a, b = _pair(tmp_path, """
        import os

        USE_MODELSCOPE = os.environ.get("SGLANG_USE_MODELSCOPE", "false") == "true"
        ALLOW_LONGER = os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "0") == "1"

        def derive_context_length(context_length, derived_context_len, is_draft_model):
            if context_length > derived_context_len:
                reason = "Target model's" if is_draft_model else "User-specified"
                msg = (
                    f"Warning: {reason} context_length ({context_length}) is greater than the "
                    f"derived context_length ({derived_context_len}). This may lead to incorrect "
                    f"model outputs or CUDA errors."
                )
                if ALLOW_LONGER:
                    print(msg)
                    return context_length
                raise ValueError(f"{msg} To allow overriding this maximum, set the env var "
                                 f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
            return context_length

        def main():
            hub = "modelscope" if USE_MODELSCOPE else "huggingface"
            target = derive_context_length(131072, 131072, False)
            draft = derive_context_length(target, 2048, True)
            print("draft context", draft, len(hub))

        main()
        """, {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "SGLANG_USE_MODELSCOPE": "false"},
        {"SGLANG_USE_MODELSCOPE": "true"})
    key, kind, score, reason, confidence = _first(a, b)
    assert (key, kind, confidence) == ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "named",
                                       "confident"), reason
    ranked = {d.key: (d.evidence_kind, d.score) for d in compare(a, b).counted}
    assert ranked["SGLANG_USE_MODELSCOPE"][0] == "read" and ranked["SGLANG_USE_MODELSCOPE"][1] < score


def test_an_sglang_message_that_names_nothing_backs_the_variable_that_turns_it_into_an_error(
        tmp_path: Path) -> None:
    # sglang's TP memory check (distributed/bootstrap.py, _check_tp_memory_balance) warns, or
    # raises when SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK is on; its words name no setting
    a, b = _pair(tmp_path, """
        import os

        USE_MODELSCOPE = os.environ.get("SGLANG_USE_MODELSCOPE", "false") == "true"
        STRICT = os.environ.get("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK", "0") == "1"

        def check_tp_memory_balance(pre_model_load_memory, local_gpu_memory):
            if pre_model_load_memory < local_gpu_memory * 0.9:
                msg = ("The memory capacity is unbalanced. Some GPUs may be occupied by other "
                       f"processes. {pre_model_load_memory=}, {local_gpu_memory=}")
                if STRICT:
                    raise RuntimeError(msg)
                print(msg)

        def main():
            hub = "modelscope" if USE_MODELSCOPE else "huggingface"
            check_tp_memory_balance(41.2, 78.9)
            print("weights from", hub)

        main()
        """, {"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0", "SGLANG_USE_MODELSCOPE": "false"},
        {"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "1", "SGLANG_USE_MODELSCOPE": "true"})
    key, kind, _score, reason, confidence = _first(a, b)
    assert (key, kind, confidence) == ("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK", "named",
                                       "confident"), reason
    assert "sgl-project/sglang python/sglang/srt/distributed/bootstrap.py" in reason, reason
