"""[command]: argv option by option, the remaining arguments, the resolved executable, cwd."""

from __future__ import annotations

import os
import sys

import pytest

from runsnap.diffing import compare

from .conftest import counted

SERVER = [sys.executable, "-m", "json.tool"]


def test_options_added_removed_changed(cap):
    a = cap(argv=[*SERVER, "--tp", "8", "--speculative-algorithm", "EAGLE3", "--trust-remote-code",
                  "--context-length=131072"])
    b = cap(argv=[*SERVER, "--tp", "4", "--speculative-algorithm", "EAGLE3",
                  "--context-length=262144", "--enable-metrics"])
    report = compare(a, b)
    assert counted(report) == [
        ("command", "--context-length", "changed"),
        ("command", "--enable-metrics", "added"),
        ("command", "--tp", "changed"),
        ("command", "--trust-remote-code", "removed"),
    ]
    by_key = {d.key: d for d in report.counted}
    assert (by_key["--tp"].a, by_key["--tp"].b) == ("8", "4")
    assert (by_key["--trust-remote-code"].a, by_key["--trust-remote-code"].b) == (True, None)
    assert {d.score for d in report.counted} == {88}


def test_positional_arguments_compared_by_position(cap):
    a = cap(argv=[sys.executable, "-m", "json.tool", "--indent", "2", "in.json"])
    b = cap(argv=[sys.executable, "-m", "json.tool", "--indent", "2", "other.json"])
    c = cap(argv=[sys.executable, "-m", "json.tool", "--indent", "2", "in.json", "out.json"])
    assert counted(compare(a, b)) == [("command", "argument 3", "changed")]
    report = compare(a, c)
    assert counted(report) == [("command", "arguments", "changed")]
    assert report.counted[0].evidence == ("+ out.json",)


def test_same_name_other_interpreter(cap, tmp_path, base_env):
    """``python3`` on PATH is another program in B: a wrapper script in front of PATH."""
    wrapper_dir = tmp_path / "otherbin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    real_dir = tmp_path / "realbin"
    real_dir.mkdir()
    (real_dir / "python3").symlink_to(sys.executable)
    path = base_env["PATH"]
    a = cap({"PATH": f"{real_dir}:{path}"}, argv=["python3", "-c", "pass"])
    b = cap({"PATH": f"{wrapper_dir}:{path}"}, argv=["python3", "-c", "pass"])
    report = compare(a, b)
    # Another interpreter is one cause; the command's program is a consequence, under it.
    first = report.counted[0]
    assert (first.section, first.key) == ("packages", "interpreter")
    by_key = {(d.section, d.key): d for d in first.related}
    exe = by_key[("command", "executable")]
    assert exe.a == os.path.realpath(sys.executable)
    assert exe.b == str(wrapper)
    assert exe.evidence[1] == f"B: {wrapper} -> {wrapper}"
    assert "another program" in exe.reason


def test_working_directory(cap, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    report = compare(cap(), cap(cwd=other))
    assert ("command", "cwd", "changed") in counted(report)
    d = next(d for d in report.counted if d.key == "cwd")
    assert d.score == 30 and d.b == str(other)


#: The ranker service's scorer: its model file, named by the parsed default of --model, is
#: opened from native code (libc's fopen through ctypes, as a C++ runtime opens a model), out of
#: the trace's sight; a model whose batch is fixed refuses the batch asked for.
SERVE = (
    "import argparse, ctypes, json, sys\n"
    "p = argparse.ArgumentParser()\n"
    "p.add_argument('--model', default='model/ranker.json')\n"
    "p.add_argument('--intra-op-threads', type=int, default=2)\n"
    "p.add_argument('--batch-size', type=int, default=64)\n"
    "p.add_argument('--on-mismatch', default='InvalidArgument: Got invalid dimensions for input')\n"
    "a = p.parse_args()\n"
    "libc = ctypes.CDLL(None)\n"
    "libc.fopen.restype = ctypes.c_void_p\n"
    "libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]\n"
    "libc.fread.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]\n"
    "libc.fclose.argtypes = [ctypes.c_void_p]\n"
    "f = libc.fopen(a.model.encode(), b'rb')\n"
    "buf = ctypes.create_string_buffer(4096)\n"
    "n = libc.fread(buf, 1, 4096, f)\n"
    "libc.fclose(f)\n"
    "m = json.loads(buf.raw[:n])\n"
    "if m['batch'] not in (None, a.batch_size):\n"
    "    sys.exit(f\"{a.on_mismatch}: Got {a.batch_size} Expected {m['batch']}\")\n"
    "print('scored', a.batch_size)\n")


@pytest.mark.parametrize(("threads", "error", "candidates"), [
    # parallel in both runs, the error about shapes: how many at once is no candidate
    (("2", "4"), "InvalidArgument: Got invalid dimensions for input",
     ["serve: model/ranker.json"]),
    # one thread against four: whether the work is parallel differs, a candidate still
    (("1", "4"), "InvalidArgument: Got invalid dimensions for input",
     ["serve: model/ranker.json", "--intra-op-threads"]),
    # the failing run ran out of memory: how many work at once may be why
    (("2", "4"), "MemoryError: Cannot allocate memory",
     ["serve: model/ranker.json", "--intra-op-threads"]),
])
def test_a_thread_count_against_a_model_file_a_native_library_opened(
        tmp_path, base_env, threads, error, candidates):
    """B's model file was re-exported (uncommitted) and B's launch asks for more threads; B
    fails. The file is opened from native code, so the trace cannot see the read; the option
    that names it (its parsed default) says the program was handed it. A thread count says how
    many work at once, not what is computed: with both runs parallel (2 and 4) and nothing
    saying a resource ran out, it is no candidate (fresh5 ``onnxruntime-fixed-batch``)."""
    import subprocess

    from runsnap.capturing import run
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "serve", {
        "model/ranker.json": '{"batch": null, "width": 12}\n', "serve.py": SERVE})
    argv = [sys.executable, "serve.py", "--on-mismatch", error]
    a = run([*argv, "--intra-op-threads", threads[0]], env=base_env, cwd=repo,
            output=tmp_path / "a.toml").snapshot
    (repo / "model" / "ranker.json").write_text('{"batch": 1, "width": 12}\n')
    b = run([*argv, "--intra-op-threads", threads[1]], env=base_env, cwd=repo,
            output=tmp_path / "b.toml").snapshot
    assert subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout.strip() == "M model/ranker.json"
    assert "model/ranker.json" not in str(dict(b.records.runtime.data_files))  # native: unseen
    report = compare(a, b)
    assert [d.key for d in report.candidates] == candidates, report.verdict()
    assert (report.confidence == "confident") == (len(candidates) == 1), report.verdict()
    model = next(d for d in report.counted if d.key == "serve: model/ranker.json")
    assert model.evidence_kind == "read" and "--model is 'model/ranker.json' (its default)" \
        in model.reason, model.reason
    threads_d = next(d for d in report.counted if d.key == "--intra-op-threads")
    assert threads_d.score == (55 if len(candidates) == 1 else 70), threads_d.reason
