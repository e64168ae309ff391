"""[models] (real model directories copied from fixtures and changed), [system] (GPUs from a
stand-in nvidia-smi replaying recorded output: no GPU here) and [outcome]."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from runsnap.diffing import compare
from tests.collectors.test_gpu import smi_path

from .conftest import asset, counted

SERVE = ["python3", "-m", "sglang.launch_server", "--model-path"]


def edit_config(path: Path, change) -> None:
    cfg_file = path / "config.json"
    cfg = json.loads(cfg_file.read_text())
    change(cfg)
    cfg_file.write_text(json.dumps(cfg, indent=2))


def test_config_fields_weights_and_side_files(cap, model_dir):
    a_dir, b_dir = model_dir("a"), model_dir("b")

    def change(cfg):
        cfg["text_config"]["rope_scaling"]["factor"] = 32.0
        cfg["text_config"]["max_position_embeddings"] = 131072
        cfg["text_config"]["my_new_field"] = True
        del cfg["use_unified_vision_chunk"]

    edit_config(b_dir, change)
    (b_dir / "model-00002-of-00002.safetensors").write_bytes(b"\0" * 400)  # resized
    (b_dir / "extra.safetensors").write_bytes(b"\0" * 8)
    (b_dir / "tokenizer_config.json").write_text('{"model_max_length": 131072}')
    a = cap(argv=[*SERVE, str(a_dir)])
    b = cap(argv=[*SERVE, str(b_dir)])
    report = compare(a, b)
    models = [(k, c) for s, k, c in counted(report) if s == "models"]
    assert models == [
        ("--model-path: text_config.max_position_embeddings", "changed"),
        ("--model-path: text_config.rope_scaling.factor", "changed"),
        ("--model-path: weights extra.safetensors", "added"),
        ("--model-path: weights model-00002-of-00002.safetensors", "changed"),
        ("--model-path: file tokenizer_config.json", "changed"),
        ("--model-path: text_config.my_new_field", "added"),
        ("--model-path: use_unified_vision_chunk", "removed"),
        ("--model-path: path", "changed"),
    ]
    by_key = {d.key: d for d in report.counted}
    ctx = by_key["--model-path: text_config.max_position_embeddings"]
    assert (ctx.a, ctx.b, ctx.score) == (262144, 131072, 88)
    assert "context length" in ctx.reason
    factor = by_key["--model-path: text_config.rope_scaling.factor"]
    assert (factor.a, factor.b) == (64.0, 32.0)
    assert by_key["--model-path: weights model-00002-of-00002.safetensors"].b == 400
    # The option naming the model differs too, and ranks with the other options.
    assert counted(report)[0] == ("command", "--model-path", "changed")


def test_a_config_saved_by_another_library_version_ranks_its_fields_not_the_version(
        cap, model_dir):
    """``save_pretrained`` writes ``transformers_version`` into every config: another version
    that wrote the file beside a field that changed is bookkeeping, under every likely cause
    (60), never a candidate beside the field."""
    a_dir, b_dir = model_dir("a"), model_dir("b")

    def change(cfg):
        cfg["text_config"]["rope_theta"] = 10000.0
        cfg["transformers_version"] = "4.55.0"

    edit_config(b_dir, change)
    report = compare(cap(argv=[*SERVE, str(a_dir)]), cap(argv=[*SERVE, str(b_dir)]))
    by_key = {d.key: d for d in (*report.counted, *report.hidden)}
    version = by_key["--model-path: transformers_version"]
    assert version.score < 60 and "bookkeeping" in version.reason, version
    assert by_key["--model-path: text_config.rope_theta"].score == 88
    assert all(d.key != version.key for d in report.candidates), report.verdict()


def test_same_model_in_two_directories_differs_only_in_path(cap, model_dir):
    report = compare(cap(argv=[*SERVE, str(model_dir("a"))]),
                     cap(argv=[*SERVE, str(model_dir("b"))]))
    assert counted(report) == [("command", "--model-path", "changed"),
                               ("models", "--model-path: path", "changed")]
    assert [d.score for d in report.counted] == [20, 20]
    assert report.counted[0].reason.startswith("another path to the same model")


def test_hugging_face_revision(cap, tmp_path):
    """Two revisions of one repo id in a real-layout Hugging Face cache."""
    hub = tmp_path / "hf" / "hub"
    repo = hub / "models--moonshotai--Kimi-K2.5"
    for rev in ("1111111111111111111111111111111111111111",
                "2222222222222222222222222222222222222222"):
        snap = repo / "snapshots" / rev
        snap.mkdir(parents=True)
        (snap / "config.json").write_text(asset("models", "kimi-k2.5-target", "config.json")
                                          .read_text())
    (repo / "refs").mkdir()
    argv = [*SERVE, "moonshotai/Kimi-K2.5"]
    (repo / "refs" / "main").write_text("1" * 40)
    a = cap({"HF_HUB_CACHE": str(hub)}, argv=argv)
    (repo / "refs" / "main").write_text("2" * 40)
    b = cap({"HF_HUB_CACHE": str(hub)}, argv=argv)
    report = compare(a, b)
    assert counted(report) == [("models", "--model-path: revision", "changed")]
    assert report.counted[0].score == 84
    assert [d.key for d in report.counted[0].related] == ["--model-path: path"]


def test_gpu_model_count_driver_and_cuda(cap, tmp_path, base_env):
    """Two recorded machines (fixtures/nvidia-smi): an H100 on driver 590.48.01 with CUDA 13.1
    and an L40S on 595.80 with CUDA 13.2."""
    path = base_env["PATH"]
    a = cap({"PATH": f"{smi_path(tmp_path, 'h100-r590').split(':', 1)[0]}:{path}"})
    b = cap({"PATH": f"{smi_path(tmp_path, 'l40s-r595').split(':', 1)[0]}:{path}"})
    report = compare(a, b)
    system = [(k, c) for s, k, c in counted(report) if s == "system"]
    assert system == [
        ("gpu.compute_capability", "changed"), ("gpu.models", "changed"),
        ("gpu.cuda_version", "changed"), ("gpu.driver_version", "changed"),
        ("gpu.mig_mode", "changed"), ("gpu.topology", "changed"),
        ("gpu.power_limit_w", "changed"), ("gpu.max_memory_clock_mhz", "changed"),
        ("gpu.max_sm_clock_mhz", "changed"), ("gpu.pcie_gen_max", "changed"),
        ("gpu.persistence_mode", "changed")]
    by_key = {d.key: d for d in report.counted}
    assert by_key["gpu.models"].a == ["1 x NVIDIA H100 80GB HBM3 (81559 MiB)"]
    assert by_key["gpu.models"].b == ["1 x NVIDIA L40S (46068 MiB)"]
    assert (by_key["gpu.cuda_version"].a, by_key["gpu.cuda_version"].b) == ("13.1", "13.2")
    assert "gpu.count" not in by_key and "gpu.uuids" not in by_key  # one GPU each, masked UUIDs


def test_host_and_kernel(cap):
    a = cap()
    sys_b = {**a["system"], "host": "node-7", "kernel": "6.8.0-31-generic"}
    b = a.replace(sections={**a.sections, "system": sys_b})
    report = compare(a, b)
    assert counted(report) == [("system", "kernel", "changed"), ("system", "host", "changed")]



def test_host_facts_that_move_count_only_past_their_tolerance(cap):
    """Two runs on one machine while memory is brought online: MemTotal and a NUMA node's total
    move by a little, free memory by a lot; none of it is a difference. A real change of the
    memory (16 -> 32 GiB) still is, with the NUMA node's."""
    a = cap()
    gib = 1 << 30
    sys_a = {**a["system"], "memory": {**a["system"]["memory"], "total_bytes": 16 * gib,
                                       "available_bytes": 12 * gib},
             "numa": {"nodes": {"node0": {"cpus": "0-1", "memory_bytes": 16 * gib}}}}
    a = a.replace(sections={**a.sections, "system": sys_a})

    def with_memory(total: int, available: int, node: int):
        sys_b = {**sys_a, "memory": {**sys_a["memory"], "total_bytes": total,
                                     "available_bytes": available},
                 "numa": {"nodes": {"node0": {"cpus": "0-1", "memory_bytes": node}}}}
        return a.replace(sections={**a.sections, "system": sys_b})

    onlined = with_memory(16 * gib + (200 << 20), 3 * gib, 16 * gib + (190 << 20))
    assert counted(compare(a, onlined)) == []
    assert [d.key for d in compare(a, onlined).differences] == []
    doubled = with_memory(32 * gib, 12 * gib, 32 * gib)
    assert sorted(counted(compare(a, doubled))) == [
        ("system", "memory.total_bytes", "changed"),
        ("system", "numa.nodes.node0.memory_bytes", "changed")]


OUT_GOOD = {"exit_status": 0, "signal": "", "duration_s": 41.2, "first_error": "",
            "warnings": ["WARNING: draft model context length (131072) is shorter than the "
                         "target's (262144); overwriting"],
            "stdout_tail": [], "stderr_tail": [], "started_at": "2026-11-29T16:00:00Z",
            "ended_at": "2026-11-29T16:00:41Z"}
OUT_BAD = {"exit_status": 1, "signal": "", "duration_s": 12.9,
           "first_error": "ValueError: draft model context length (131072) is shorter than the "
                          "target's (262144)",
           "warnings": [], "stdout_tail": [], "stderr_tail": [],
           "started_at": "2026-11-29T17:00:00Z", "ended_at": "2026-11-29T17:00:12Z"}


def test_outcome_side_by_side_below_the_cause(cap):
    good = cap({"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})
    bad = cap({})
    good = good.replace(sections={**good.sections, "outcome": OUT_GOOD})
    bad = bad.replace(sections={**bad.sections, "outcome": OUT_BAD})
    report = compare(good, bad)
    assert counted(report) == [
        ("env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "removed"),
        ("outcome", "exit_status", "changed"),
        ("outcome", "first_error", "changed"),
        ("outcome", "warnings", "changed"),
    ]
    assert sorted(d.key for d in report.hidden) == ["duration_s", "ended_at", "started_at"]
    warn = next(d for d in report.counted if d.key == "warnings")
    assert warn.evidence == (f"A only: {OUT_GOOD['warnings'][0]}",)
    # An outcome in one snapshot only (B not launched) is still compared.
    report = compare(good, cap({"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}))
    assert ("outcome", "exit_status", "removed") in counted(report)


def test_the_same_lines_logged_at_other_times_are_no_difference(cap):
    """Two runs print the same warnings and fail with the same logged error, each at its own
    time: nothing differs but the clock. A warning of one run only is named without its time
    stamp, so the message is what shows."""
    def out(hour: int, extra: list[str]) -> dict:
        return {**OUT_BAD, "first_error": f"[2026-11-29 {hour}:00:01 TP0] ERROR scheduler: OOM",
                "warnings": [f"WARNING 11-29 {hour}:00:00 [config.py:12] Casting to bfloat16",
                             *extra]}
    a, b = cap({}), cap({})
    a = a.replace(sections={**a.sections, "outcome": out(16, [])})
    b = b.replace(sections={**b.sections, "outcome": out(17, [])})
    assert [d.key for d in compare(a, b).counted if d.section == "outcome"] == []
    b = b.replace(sections={**b.sections, "outcome": out(17, [
        "[2026-11-29 17:00:02,004] WARNING model_config: Overwriting context length"])})
    warn = next(d for d in compare(a, b).counted if d.key == "warnings")
    assert warn.evidence == ("B only: WARNING model_config: Overwriting context length",)


def test_a_warning_kept_once_per_time_stamp_by_an_older_capture_is_named_once(cap):
    a, b = cap({}), cap({})
    old = [f"[2026-11-29 16:00:0{s},000] WARNING sched: queue is full" for s in range(3)]
    a = a.replace(sections={**a.sections, "outcome": {**OUT_BAD, "warnings": old}})
    b = b.replace(sections={**b.sections, "outcome": {**OUT_BAD, "warnings": []}})
    warn = next(d for d in compare(a, b).counted if d.key == "warnings")
    assert warn.evidence == ("A only: WARNING sched: queue is full",)


def test_a_config_edit_inside_a_git_tree_is_one_difference_with_both_views(cap, repo):
    # the model directory is part of the working tree: the edit is a config field and an
    # uncommitted file at once, listed once, the field first and the file's diff under it
    import shutil

    from tests.conftest import asset
    from tests.diffing.conftest import git

    model = repo / "model"
    shutil.copytree(asset("models", "kimi-k2.5-target"), model)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "model")
    a = cap(argv=[*SERVE, str(model)], cwd=repo)
    edit_config(model, lambda cfg: cfg["text_config"].update(max_position_embeddings=131072))
    b = cap(argv=[*SERVE, str(model)], cwd=repo)
    report = compare(a, b)
    top = [d for d in report.counted if d.section in ("models", "git")]
    assert [(d.section, d.key) for d in top] == [
        ("models", "--model-path: text_config.max_position_embeddings")]
    assert sorted(r.key.rpartition(": ")[2] for r in top[0].related if r.section == "git") == [
        "model/config.json", "work.dirty"]
    # the text shows both views at once: the field, and under it the file's edit itself
    from runsnap.render.diff import render_text

    text = render_text(report, width=80)
    field = text.index("1. models --model-path: text_config.max_position_embeddings")
    edit = text.index("model/config.json", field)
    assert re.search(r"\n +\+ +\"max_position_embeddings\": 131072", text[edit:]), text


#: An evaluator that reads its tokenizer's settings from the model folder, as transformers'
#: ``get_tokenizer_config`` does: left padding moves the score it prints.
EVAL = """
import argparse, json, os
p = argparse.ArgumentParser()
p.add_argument("--model-path")
p.add_argument("--batch-size", type=int, default=16)
a = p.parse_args()
with open(os.path.join(a.model_path, "tokenizer_config.json")) as fh:
    side = json.load(fh).get("padding_side", "right")
print(f"accuracy={0.396 if side == 'left' else 0.292}")
"""


def test_a_tokenizer_file_the_program_opened_is_read_evidence(launched, model_dir,
                                                               tmp_path: Path) -> None:
    """Between the runs the model store's tokenizer_config.json was replaced by a decoder's
    (left padding) and the batch size changed: the file the program opened ranks first, with
    where it was opened, above the option (fresh5 ``tokenizer-padding-side-metric`` put
    ``--batch-size`` first: the models view of the file carried no evidence, and the
    ``[runtime.data_files]`` view that had it is folded into the models view)."""
    model = model_dir("store")
    (model / "tokenizer_config.json").write_text('{"padding_side": "right"}')
    app = tmp_path / "eval_intent.py"
    app.write_text(EVAL)
    argv = [sys.executable, str(app), "--model-path", str(model)]
    a = launched(env={}, argv=[*argv, "--batch-size", "16"])
    (model / "tokenizer_config.json").write_text('{"padding_side": "left"}')
    b = launched(env={}, argv=[*argv, "--batch-size", "12"])
    report = compare(a, b)
    top = report.counted[0]
    assert top.key == "--model-path: file tokenizer_config.json", report.verdict()
    assert top.evidence_kind == "read" and "eval_intent.py" in top.reason, top.reason
    assert [d.key for d in report.candidates] == [
        "--model-path: file tokenizer_config.json", "--batch-size"]  # both may move a metric
