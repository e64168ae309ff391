"""Evidence on programs built on real libraries: scans of the environment by suffix (Python's
own urllib keeps ``*_proxy``), settings a generic-feature library (loguru, tqdm) read and then
failed on, config fields read through the aliases the model code declares, and the same
outcome, after which no variable counts. Each pair is two real traced launches.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runsnap.diffing import compare
from tests.diffing.conftest import Capture, write_script

#: Settings two shells of one user differ in, none of which the programs below read.
SETTINGS_A = {"NCCL_ALGO": "Ring", "SGLANG_ENABLE_SPEC_V2": "1", "TORCH_NCCL_BLOCKING_WAIT": "1"}
SETTINGS_B = {"NCCL_ALGO": "Tree", "SGLANG_DISABLE_OUTLINES_DISK_CACHE": "1"}






FETCH = """
    import http.server, threading, urllib.request

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"tokens=42")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1/models"
    print(urllib.request.urlopen(url, timeout=10).read().decode())
    """


def test_a_scan_for_a_suffix_reads_those_variables_and_no_other(launched: Capture,
                                                                 tmp_path: Path) -> None:
    """urllib finds proxies by iterating os.environ for names ending in ``_proxy``: B's
    ``http_proxy`` (a dead port) is read there, on the failing path; the settings the scan
    passed over were not read at all, not "seen in a bulk copy"."""
    app = write_script(tmp_path, "fetch.py", FETCH)
    argv = [sys.executable, str(app)]
    a = launched(env=SETTINGS_A, argv=argv)
    b = launched(env={**SETTINGS_B, "http_proxy": "http://127.0.0.1:9"}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    top = report.candidates[0]
    assert (top.key, top.evidence_kind, report.confidence) == (
        "http_proxy", "failing-path", "confident"), report.verdict()
    assert "*_proxy" in top.reason or "getproxies" in top.reason, top.reason
    for name in ("NCCL_ALGO", "SGLANG_DISABLE_OUTLINES_DISK_CACHE"):
        assert ranked[name].evidence_kind == "unread", ranked[name].reason
        assert "bulk copy" not in ranked[name].reason


def test_a_logging_library_failing_on_the_level_it_read_decided_with_it(
        launched: Capture, tmp_path: Path) -> None:
    """loguru reads LOGURU_LEVEL at import (a logging setting: a generic feature) and then
    fails on it in its own code: that read is on the failing path."""
    pytest.importorskip("loguru")
    app = write_script(tmp_path, "worker.py", """
        from loguru import logger
        logger.info("step=1 loss=0.7")
        print("loss=0.7")
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={**SETTINGS_A, "LOGURU_LEVEL": "WARNING"}, argv=argv)
    b = launched(env={**SETTINGS_B, "LOGURU_LEVEL": "WARN"}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    top = report.candidates[0]
    assert (top.key, top.evidence_kind, report.confidence) == (
        "LOGURU_LEVEL", "failing-path", "confident"), report.verdict()


def test_a_progress_bar_setting_read_for_display_is_no_cause(launched: Capture,
                                                             tmp_path: Path) -> None:
    """tqdm reads its TQDM_* settings; the program then fails in its own code, not in tqdm:
    the setting is no evidence, and the failure's own cause (a bad option) is what is left."""
    pytest.importorskip("tqdm")
    app = write_script(tmp_path, "loop.py", """
        import sys
        from tqdm import tqdm
        def main():
            steps = int(sys.argv[1])
            total = sum(1.0 / (i + 1) for i in tqdm(range(steps), desc="train"))
            if steps > 10:
                raise RuntimeError("too many steps for the budget")
            print(f"loss={total:.4f}")
        main()
        """)
    a = launched(env={"TQDM_MININTERVAL": "1"}, argv=[sys.executable, str(app), "5"])
    b = launched(env={"TQDM_MININTERVAL": "2"}, argv=[sys.executable, str(app), "50"])
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert ranked["TQDM_MININTERVAL"].evidence_kind != "failing-path", \
        ranked["TQDM_MININTERVAL"].reason


MODEL_PACKAGE = {
    "__init__.py": "",
    "configuration_toy.py": """
        class ToyConfig:
            model_type = "toy"
            attribute_map = {"num_attention_heads": "n_head", "hidden_size": "n_embd"}

            def __init__(self, **kw):
                self.__dict__.update(kw)

            def __getattr__(self, name):
                if name in type(self).attribute_map:
                    return getattr(self, type(self).attribute_map[name])
                raise AttributeError(name)
        """,
    "modeling_toy.py": """
        class Attention:
            def __init__(self, config):
                self.embed_dim = config.hidden_size
                self.num_heads = config.num_attention_heads
                if self.embed_dim % self.num_heads:
                    raise ValueError("embed_dim must be divisible by num_heads")


        class Dropout:
            def __init__(self, config):
                self.p = config.attn_pdrop
        """,
}


def test_a_config_field_read_by_an_alias_the_model_code_declares(launched: Capture,
                                                                 tmp_path: Path) -> None:
    """The config file says ``n_head``; the failing code reads ``config.num_attention_heads``,
    which the configuration class maps to it (Hugging Face's ``attribute_map``). Of four
    fields edited at once, that one is the cause."""
    for rel, text in MODEL_PACKAGE.items():
        write_script(tmp_path / "toymodels", rel, text)
    app = write_script(tmp_path, "train.py", """
        import argparse, json, os
        from toymodels.configuration_toy import ToyConfig
        from toymodels.modeling_toy import Attention
        p = argparse.ArgumentParser()
        p.add_argument("--model-path")
        a = p.parse_args()
        with open(os.path.join(a.model_path, "config.json")) as fh:
            config = ToyConfig(**json.load(fh))
        print("heads=", Attention(config).num_heads)
        """)
    model = tmp_path / "model"
    model.mkdir()
    config = {"architectures": ["ToyForCausalLM"], "model_type": "toy", "n_embd": 32,
              "n_head": 4, "attn_pdrop": 0.1, "bos_token_id": 1, "eos_token_id": 2}
    (model / "config.json").write_text(json.dumps(config))
    argv = [sys.executable, str(app), "--model-path", str(model)]
    env = {"PYTHONPATH": str(tmp_path)}
    a = launched(env=env, argv=argv)
    config.update(n_head=5, attn_pdrop=0.2, bos_token_id=0, eos_token_id=3)
    (model / "config.json").write_text(json.dumps(config))
    b = launched(env=env, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    innermost = b["outcome"]["traceback"]["frames"][-1]  # named at capture (launch.frame_names)
    assert (innermost["function"], innermost["names"]) == ("__init__", ["n_embd", "n_head"])
    report = compare(a, b)
    top = report.candidates[0]
    assert (top.key, top.evidence_kind, report.confidence) == (
        "--model-path: n_head", "failing-path", "confident"), report.verdict()


def test_with_the_same_outcome_no_variable_counts_but_the_code_still_does(
        launched: Capture, tmp_path: Path) -> None:
    """Both runs print the same and exit 0: the settings that differ, read or not, changed
    nothing (exit 0 for them alone); another script is still another run."""
    app = write_script(tmp_path, "job.py", """
        import os
        threads = int(os.environ.get("MYJOB_THREADS", "1"))
        print("result=42")
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={**SETTINGS_A, "MYJOB_THREADS": "4"}, argv=argv)
    b = launched(env={**SETTINGS_B, "MYJOB_THREADS": "8"}, argv=argv)
    report = compare(a, b)
    assert report.outcome == "same" and not report, [d.where for d in report.counted]
    assert report.verdict().startswith("the same outcome (both exited 0): no differences "
                                       "that count (")
    hidden = {d.key: d for d in report.hidden}
    assert hidden["MYJOB_THREADS"].reason.startswith("changed nothing the runs show")
    other = write_script(tmp_path, "job2.py", app.read_text().replace("threads", "n"))
    c = launched(env={**SETTINGS_B, "MYJOB_THREADS": "8"}, argv=[sys.executable, str(other)])
    report = compare(a, c)
    assert report and report.outcome == "same"
    assert any(d.section == "command" for d in report.counted), [d.where for d in report.counted]


def test_a_copy_filtered_just_after_it_is_taken_is_a_scan(launched: Capture, tmp_path: Path) -> None:
    """fsspec's shape: ``envdict = dict(os.environ)``, then a loop a few lines below keeps the
    names of its prefix. The prefix's variable is read there; the settings it passed over are
    unread, not "seen in a bulk copy"."""
    write_script(tmp_path / "site", "blobcfg/__init__.py", '''
        import os

        def settings():
            envdict = dict(os.environ)
            out = {}
            for key in envdict:
                if key.startswith("BLOBCFG_"):
                    out[key[8:].lower()] = envdict[key]
            return out

        def open_store():
            return int(settings().get("retries", "3"))
        ''')
    app = write_script(tmp_path, "app.py", """
        import blobcfg
        print("retries=", blobcfg.open_store())
        """)
    argv = [sys.executable, str(app)]
    env = {"PYTHONPATH": str(tmp_path / "site")}
    a = launched(env={**env, **SETTINGS_A, "BLOBCFG_RETRIES": "5"}, argv=argv)
    b = launched(env={**env, **SETTINGS_B, "BLOBCFG_RETRIES": "five"}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    top = report.candidates[0]
    assert (top.key, report.confidence) == ("BLOBCFG_RETRIES", "confident"), report.verdict()
    assert "scan of the BLOBCFG_* variables" in top.reason or "BLOBCFG_" in top.reason
    assert ranked["NCCL_ALGO"].evidence_kind == "unread", ranked["NCCL_ALGO"].reason


def test_a_scan_reads_only_the_names_its_filter_keeps(launched: Capture, tmp_path: Path) -> None:
    """SGLang's ``_handle_deprecated_envs`` shape (python/sglang/srt/environ.py): iterate
    ``os.environ``, keep ``key.startswith("SGL_")``, and write each kept value under the
    ``"SGLANG_"`` name. The filter's literal is what the scan reads: ``SGL_CHUNK`` is read
    there; ``SGLANG_LOG_GC``, which only the rename's other literal would match, is not."""
    write_script(tmp_path / "site", "engenv/__init__.py", '''
        import os
        import warnings

        _DEPRECATED = {"SGL_OLD_FLAG": "gone"}

        def handle_deprecated_envs():
            for key, value in list(os.environ.items()):
                if key.startswith("SGL_") and key not in _DEPRECATED:
                    new_key = key.replace("SGL_", "SGLANG_", 1)
                    warnings.warn(f"{key} is deprecated, please use {new_key}")
                    os.environ[new_key] = value

        def chunk():
            handle_deprecated_envs()
            return int(os.environ.get("SGLANG_CHUNK", "8"))
        ''')
    app = write_script(tmp_path, "serve.py", """
        import engenv
        print("chunk=", engenv.chunk())
        """)
    argv = [sys.executable, str(app)]
    env = {"PYTHONPATH": str(tmp_path / "site")}
    a = launched(env={**env, "SGL_CHUNK": "16"}, argv=argv)
    b = launched(env={**env, "SGL_CHUNK": "sixteen", "SGLANG_LOG_GC": "1"}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert report.candidates[0].key == "SGL_CHUNK", report.verdict()
    assert "SGL_*" in ranked["SGL_CHUNK"].reason or "sixteen" in ranked["SGL_CHUNK"].reason
    gc = ranked.get("SGLANG_LOG_GC") or {d.key: d for d in report.hidden}["SGLANG_LOG_GC"]
    assert gc.evidence_kind == "unread", gc.reason
