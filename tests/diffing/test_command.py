"""[command]: argv option by option, the remaining arguments, the resolved executable, cwd."""

from __future__ import annotations

import os
import sys

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


def test_a_thread_count_ranks_below_an_edited_input(tmp_path, base_env):
    """B's model file was re-exported (uncommitted) and B's launch asks for more threads; B
    fails on the model's input shape. The thread count says how many work at once, not what is
    computed: still a candidate, ranked after the file (it was first, 88 over the file's 80)."""
    import subprocess

    from runsnap.capturing import run
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "serve", {
        "model.json": '{"batch": null, "width": 12}\n',
        "serve.py": ("import argparse, json\n"
                     "p = argparse.ArgumentParser()\n"
                     "p.add_argument('--intra-op-threads', type=int, default=2)\n"
                     "p.add_argument('--batch-size', type=int, default=64)\n"
                     "a = p.parse_args()\n"
                     "m = json.load(open('model.json'))\n"
                     "if m['batch'] not in (None, a.batch_size):\n"
                     "    raise SystemExit(f'Got invalid dimensions for input: Got {a.batch_size}"
                     " Expected {m[\"batch\"]}')\n"
                     "print('scored', a.batch_size)\n")})
    argv = [sys.executable, "serve.py"]
    a = run([*argv, "--intra-op-threads", "2"], env=base_env, cwd=repo,
            output=tmp_path / "a.toml").snapshot
    (repo / "model.json").write_text('{"batch": 1, "width": 12}\n')
    b = run([*argv, "--intra-op-threads", "4"], env=base_env, cwd=repo,
            output=tmp_path / "b.toml").snapshot
    assert subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout.strip() == "M model.json"
    report = compare(a, b)
    keys = [d.key for d in report.candidates]
    assert keys[:2] == ["serve: model.json", "--intra-op-threads"], report.verdict()
    threads = next(d for d in report.counted if d.key == "--intra-op-threads")
    assert threads.score == 70 and "thread or job count" in threads.reason
