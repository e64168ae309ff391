"""Differential evidence, judged where the read happened: real programs (argparse scripts,
huggingface_hub, a package installed in a venv) captured for real with the tracing hook.

A failure both runs share is no evidence; a read made for a generic feature (argparse sizing
its help by ``COLUMNS``) is not the program's decision; a library function that read its
setting and then made the call that raised did decide with it; a package's module-level read
at import counts when its code is on the failing traceback.
"""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

from runsnap.diffing import compare
from runsnap.snapshot.runtime import variables
from tests.diffing.conftest import Capture, write_script

#: What two interactive shells differ in, as real shells set it.
SHELL_A = {"COLUMNS": "120", "LINES": "40", "_": "/usr/bin/ls", "TERM": "xterm-256color",
           "SSH_TTY": "/dev/pts/3", "OLDPWD": "/home/alice", "SHLVL": "1", "TMUX_PANE": "%1",
           "SLURM_JOB_ID": "81723"}
SHELL_B = {"COLUMNS": "80", "LINES": "24", "_": "/usr/bin/cat", "TERM": "tmux-256color",
           "SSH_TTY": "/dev/pts/9", "OLDPWD": "/data", "SHLVL": "2", "TMUX_PANE": "%4",
           "SLURM_JOB_ID": "81790"}

SERVE = """
    import argparse
    def main():
        p = argparse.ArgumentParser(description="serve a model")
        p.add_argument("--workers", type=int, default=1)
        a = p.parse_args()
        p.format_help()
        for _ in range(a.workers - 1):
            raise RuntimeError("cannot start workers: address in use")
        print("serving")
    main()
    """




def test_the_same_failure_and_shell_noise_is_no_difference(launched: Capture, tmp_path: Path) -> None:
    app = write_script(tmp_path, "serve.py", SERVE)
    argv = [sys.executable, str(app), "--workers", "3"]
    a, b = launched(env=SHELL_A, argv=argv), launched(env=SHELL_B, argv=argv)
    assert a["outcome"]["exit_status"] == b["outcome"]["exit_status"] == 1
    # argparse read COLUMNS and LINES in main, the function that raised
    assert "COLUMNS" in variables(a["runtime"])
    report = compare(a, b)
    assert not report, [(d.where, d.reason) for d in report.counted]
    # duration_s is a noise difference only when the two runs' durations differ: two runs can
    # take the same milliseconds (11 then; the run that failed this way in a README test run)
    noise = 11 + (a["outcome"]["duration_s"] != b["outcome"]["duration_s"])
    assert report.verdict() == ("the same outcome (both failed with RuntimeError, the same "
                                f"way): no differences that count ({noise} noise hidden)")


def test_the_terminal_size_argparse_reads_is_no_cause(launched: Capture, tmp_path: Path) -> None:
    app = write_script(tmp_path, "serve.py", SERVE)
    a = launched(env=SHELL_A, argv=[sys.executable, str(app), "--workers", "1"])
    b = launched(env=SHELL_B, argv=[sys.executable, str(app), "--workers", "2"])
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    assert [d.where for d in report.counted if d.section != "outcome"] == ["command --workers"]
    hidden = {d.key: d for d in report.hidden}
    assert {"COLUMNS", "LINES", "_"} <= set(hidden)
    assert "the terminal size" in hidden["COLUMNS"].reason
    assert "the terminal size" in hidden["LINES"].reason


def test_a_read_at_import_of_a_package_on_the_failing_traceback(launched: Capture,
                                                                   tmp_path: Path) -> None:
    """huggingface_hub reads HF_HOME at import (constants.py); hf_hub_download fails in
    file_download.py when the cache it names lacks the file."""
    snap = tmp_path / "cache" / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text('{"hidden_size": 8}')
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("abc123")
    app = write_script(tmp_path, "fetch.py", """
        from huggingface_hub import hf_hub_download
        def main():
            print(open(hf_hub_download("acme/tiny", "config.json")).read())
        main()
        """)
    argv = [sys.executable, str(app)]
    a = launched(env={**SHELL_A, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "cache")},
            argv=argv)
    b = launched(env={**SHELL_B, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "empty")},
            argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    top = compare(a, b).counted[0]
    assert (top.where, top.evidence_kind) == ("env HF_HOME", "failing-path"), top.reason
    assert "read at import of huggingface_hub" in top.reason


def _venv_with(path: Path, name: str, files: dict[str, str]) -> Path:
    """A real venv with one package installed in its site-packages (no pip needed)."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    py = path / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "top_level.txt").write_text(name + "\n")
    for rel, text in files.items():
        write_script(site / name, rel, text)
    return py


def test_a_library_function_that_read_its_setting_then_called_what_raised(
        launched: Capture, tmp_path: Path) -> None:
    """The read is three calls above the raise, in the library's function on the traceback:
    the library decided with it. A program read as far above the raise does not count."""
    py = _venv_with(tmp_path / "venv", "kvstore", {"__init__.py": """
        import os
        def _check(layout, pages):
            if layout == "paged" and pages % 16:
                raise ValueError("pages must be a multiple of 16")
        def _plan(layout, pages):
            _check(layout, pages)
        def _reserve(layout, pages):
            _plan(layout, pages)
        def open_store(pages):
            layout = os.environ.get("KVSTORE_LAYOUT", "flat")
            _reserve(layout, pages)
            return layout
        """})
    app = write_script(tmp_path, "app.py", """
        import os, kvstore
        def main():
            mode = os.environ.get("APP_MODE", "0")
            print(kvstore.open_store(40), mode)
        main()
        """)
    a = launched(env={**SHELL_A, "APP_MODE": "1"}, argv=[str(py), str(app)])
    b = launched(env={**SHELL_B, "KVSTORE_LAYOUT": "paged", "APP_MODE": "2"},
            argv=[str(py), str(app)])
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    ranked = {d.key: d for d in compare(a, b).counted}
    assert ranked["KVSTORE_LAYOUT"].evidence_kind == "failing-path"
    assert "kvstore/__init__.py" in ranked["KVSTORE_LAYOUT"].reason
    assert ranked["APP_MODE"].evidence_kind == "read"  # main, far above the raise
    assert ranked["KVSTORE_LAYOUT"].score > ranked["APP_MODE"].score


def test_the_interpreters_start_up_reads_are_not_the_programs(launched: Capture,
                                                                tmp_path: Path) -> None:
    app = write_script(tmp_path, "app.py", """
        import os
        def main():
            if os.environ.get("APP_STRICT") == "1":
                raise SystemExit("strict mode: refusing to start")
        main()
        """)
    a = launched(env={"PYTHONUNBUFFERED": "1"}, argv=[sys.executable, str(app)])
    b = launched(env={"APP_STRICT": "1", "PYTHONDONTWRITEBYTECODE": "1"},
            argv=[sys.executable, str(app)])
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert next(iter(ranked)) == "APP_STRICT"
    for name in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"):
        assert ranked[name].evidence_kind == "incidental", ranked[name].reason
        assert "interpreter" in ranked[name].reason
    # read only incidentally: no candidate beside the read on the failing path
    assert report.confidence == "confident", report.verdict()


RANK_APP = """
    import os, sys
    def main():
        rank = int(os.environ["RANK"])
        if rank == 0:
            import huggingface_hub  # the first rank fetches, the others wait
            retries = os.environ.get("GLOO_DISABLE_CONNECTION_RETRIES", "0")
            timeout = os.environ.get("APP_STORE_TIMEOUT", "300")
            print("rank 0 store", retries, timeout)
        print("all-reduce ok")
    main()
    """


def test_two_healthy_ranks_of_one_job_differ_in_nothing_that_counts(launched: Capture,
                                                                       tmp_path: Path) -> None:
    """Ranks take other paths by design: a read or an import in one rank only is no cause."""
    app = write_script(tmp_path, "job.py", RANK_APP)
    job = {"TORCHELASTIC_RUN_ID": "job-1", "WORLD_SIZE": "2", "MASTER_PORT": "29500",
           "MASTER_ADDR": "127.0.0.1", "GROUP_RANK": "0", "LOCAL_WORLD_SIZE": "2"}
    # torchrun gives each rank its own error file, numbered by its local rank
    errors = "/tmp/torchelastic_0kmkd890/job-1_f4h/attempt_0/{}/error.json"
    a = launched(env={**job, "RANK": "0", "LOCAL_RANK": "0", "TORCHELASTIC_ERROR_FILE":
                 errors.format(0)}, argv=[sys.executable, str(app)])
    b = launched(env={**job, "RANK": "1", "LOCAL_RANK": "1", "TORCHELASTIC_ERROR_FILE":
                 errors.format(1)}, argv=[sys.executable, str(app)])
    report = compare(a, b)
    assert not report, report.verdict()
    assert report.verdict().startswith("the same outcome (both exited 0): no differences")
    folded = {d.key for d in report.consequences}
    assert {"env GLOO_DISABLE_CONNECTION_RETRIES", "module huggingface_hub"} <= folded
    per_rank = {d.key: d.reason for d in report.hidden}["TORCHELASTIC_ERROR_FILE"]
    assert per_rank.startswith("one value per rank in one job")


def test_what_one_run_did_after_the_other_stopped_is_folded(launched: Capture,
                                                             tmp_path: Path) -> None:
    """B stops at start-up; A goes on to read twenty settings and import a package: those
    are counted on one line under the outcome, never ranked as causes."""
    app = write_script(tmp_path, "train.py", """
        import os
        def check_world():
            if os.environ.get("APP_WORLD") != "1":
                raise RuntimeError("this job needs one process")
        def train():
            import huggingface_hub
            return [os.environ.get(f"APP_SETTING_{i}") for i in range(20)]
        check_world()
        print(len(train()))
        """)
    a = launched(env={"APP_WORLD": "1"}, argv=[sys.executable, str(app)])
    b = launched(env={"APP_WORLD": "2"}, argv=[sys.executable, str(app)])
    report = compare(a, b)
    assert [d.where for d in report.counted if d.section != "outcome"] == ["env APP_WORLD"]
    assert len(report.consequences) >= 21
    assert report.to_dict()["confidence"] == "confident"
    from runsnap.render.diff import render

    text = render(report, "text", width=80)
    assert re.search(r"Consequences, not causes: 2\d variables read and 1 module imported in"
                     r"\s+one run\s+only", text), text
    assert "APP_SETTING_3" not in text


def test_two_reads_at_import_of_one_module_are_a_tie_left_to_bisect(launched: Capture,
                                                                     tmp_path: Path) -> None:
    """huggingface_hub reads HF_HOME and HF_HUB_DISABLE_TELEMETRY at import, in one module;
    only the first matters here, and nothing in the runs tells them apart: undecided, never
    a cause picked by order or by name."""
    app = write_script(tmp_path, "fetch.py", """
        from huggingface_hub import hf_hub_download
        print(open(hf_hub_download("acme/tiny", "config.json")).read())
        """)
    snap = tmp_path / "cache" / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("abc123")
    argv = [sys.executable, str(app)]
    a = launched(env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "cache"),
                 "HF_HUB_DISABLE_TELEMETRY": "1"}, argv=argv)
    b = launched(env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "other")}, argv=argv)
    report = compare(a, b)
    data = report.to_dict()
    assert data["confidence"] == "undecided"
    assert sorted(data["candidates"]) == ["env HF_HOME", "env HF_HUB_DISABLE_TELEMETRY"]
    assert "undecided between 2 candidates" in report.verdict()
    assert "`runsnap bisect` decides in about 7 launches" in report.verdict()


def test_a_markdown_diff_fits_what_github_accepts(launched: Capture, tmp_path: Path) -> None:
    many = {f"APP_SETTING_{i:04d}": "x" * 60 + str(i) for i in range(1500)}
    # the runs end differently (with the same outcome no difference would count)
    argv = [sys.executable, "-c", "import os; os._exit(0 if 'B' not in os.environ else 3)"]
    a = launched(env={}, argv=argv)
    b = launched(env={**many, "B": "1"}, argv=argv)
    from runsnap.render.diff import render

    report = compare(a, b)
    md = render(report, "markdown")
    assert len(md) <= 65536
    assert "APP_SETTING_0000" in md  # the first table is kept whole
    assert "Left out to fit 65,536 characters" in md
    assert len(render(compare(a, b, show_all=True), "json")) > 65536  # JSON has it all


MODEL_APP = """
    import argparse, json, os, types

    class RotaryEmbedding:
        def __init__(self, config):
            self.base = config.rope_theta
            self.dim = config.hidden_size // config.num_attention_heads

        def forward(self, positions):
            return [self._freq(i) for i in range(0, self.dim, 2)]

        def _freq(self, i):
            return 1.0 / (self.base ** (i / self.dim))

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path")
        a = p.parse_args()
        with open(os.path.join(a.model_path, "config.json")) as fh:
            config = types.SimpleNamespace(**json.load(fh))
        print(sum(RotaryEmbedding(config).forward(list(range(8)))))

    main()
    """


def test_an_edited_config_field_the_failing_code_reads_is_told_apart(launched: Capture,
                                                                    tmp_path: Path) -> None:
    """Five fields edited at once; the failing class reads one of them by attribute access
    (``config.rope_theta``) and the error quotes no value: that field is the cause, the four
    others are not tied with it."""
    import json

    app = write_script(tmp_path, "serve.py", MODEL_APP)
    model = tmp_path / "model"
    model.mkdir()
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
              "num_attention_heads": 4, "rope_theta": 10000.0, "initializer_range": 0.02,
              "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False}
    (model / "config.json").write_text(json.dumps(config))
    argv = [sys.executable, str(app), "--model-path", str(model)]
    a = launched(env={}, argv=argv)
    config.update(rope_theta=0.0, initializer_range=0.01, bos_token_id=0, eos_token_id=3,
                  tie_word_embeddings=True)
    (model / "config.json").write_text(json.dumps(config))
    b = launched(env={}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    top = report.counted[1] if report.counted[0].section == "outcome" else report.counted[0]
    causes = [d for d in report.counted if d.section == "models"]
    assert len(causes) == 5
    assert causes[0].key == "--model-path: rope_theta", [(d.key, d.score) for d in causes]
    assert causes[0].evidence_kind == "failing-path"
    assert "the failing code reads rope_theta" in causes[0].reason
    assert top is causes[0] and report.confidence == "confident", report.verdict()


def test_a_package_scanning_its_prefix_reads_those_variables(launched: Capture,
                                                             tmp_path: Path) -> None:
    """A library that takes its settings by iterating os.environ for its prefix: its
    variable is read (on the failing path, since the scan is in the library's function on
    the traceback); a variable only in the program's copy handed to a child is neither."""
    py = _venv_with(tmp_path / "venv", "tunables", {"__init__.py": """
        import os
        PREFIX = "TUNE_"

        def settings():
            out = {}
            for key, value in os.environ.items():
                if key.startswith(PREFIX):
                    out[key[len(PREFIX):].lower()] = value
            return out

        def build():
            s = settings()
            if int(s.get("block", "64")) % 64:
                raise ValueError("block size must be a multiple of 64")
            return s
        """})
    app = write_script(tmp_path, "app.py", """
        import os, subprocess, sys, tunables
        subprocess.run([sys.executable, "-c", "pass"], env=dict(os.environ), check=True)
        print(tunables.build())
        """)
    a = launched(env={"TUNE_BLOCK": "128", "OTHER_KNOB": "1"}, argv=[str(py), str(app)])
    b = launched(env={"TUNE_BLOCK": "100", "OTHER_KNOB": "2"}, argv=[str(py), str(app)])
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert ranked["TUNE_BLOCK"].evidence_kind == "failing-path", ranked["TUNE_BLOCK"].reason
    assert report.candidates[0].key == "TUNE_BLOCK" and report.confidence == "confident"
    assert ranked["OTHER_KNOB"].evidence_kind == "name"
    assert "seen only in a bulk copy of the environment at app.py:2" in ranked["OTHER_KNOB"].reason


def test_a_read_alone_is_no_confident_cause_over_what_the_runs_cannot_see(
        launched: Capture, tmp_path: Path) -> None:
    """B reads another input file (the cause: its content is bad) and another log level (read,
    harmless). That the program read the level ties it to nothing: undecided, not a
    confident wrong answer."""
    (tmp_path / "good.txt").write_text("1\n2\n3\n")
    (tmp_path / "bad.txt").write_text("1\nx\n3\n")
    app = write_script(tmp_path, "sum.py", """
        import argparse, os
        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--input")
            a = p.parse_args()
            level = os.environ.get("APP_LOG_LEVEL", "info")
            with open(a.input) as fh:
                total = sum(int(line) for line in fh)
            print(level, total)
        main()
        """)
    a = launched(env={"APP_LOG_LEVEL": "info"},
            argv=[sys.executable, str(app), "--input", str(tmp_path / "good.txt")])
    b = launched(env={"APP_LOG_LEVEL": "debug"},
            argv=[sys.executable, str(app), "--input", str(tmp_path / "bad.txt")])
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    assert report.confidence == "undecided", report.verdict()
    assert {d.where for d in report.candidates} >= {"env APP_LOG_LEVEL", "command --input"}
