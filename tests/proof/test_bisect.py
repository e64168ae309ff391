"""``runsnap bisect`` on real children written for each case: one cause among many, a pair that
acts only together, an option, a config.json field, a server, a flaky launch."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from runsnap.experiments.bisecting import Options
from tests.conftest import RUNSNAP
from tests.proof.conftest import bisect, capture, child, keys, runsnap


def _knobs(value: str, n: int = 30) -> dict[str, str | None]:
    return {f"KNOB_{i:02d}": value for i in range(1, n + 1)}


@pytest.mark.slow
def test_one_variable_among_30_found_in_about_2_log2_n_trials(tmp_path: Path) -> None:
    # Every knob is read, so the diff's ranking cannot single one out: the search does it.
    prog = child(tmp_path / "launch.py",
                 "knobs = {k: os.environ.get(k) for k in sorted(os.environ) if 'KNOB' in k}\n"
                 "if knobs.get('KNOB_17') == 'b':\n"
                 "    sys.exit('RuntimeError: knob 17 is not supported')\nprint('ok')\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], _knobs("a"))
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)], _knobs("b"))
    proc, answer = bisect(good, bad)
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env KNOB_17"]
    assert answer["cause"][0] == {"section": "env", "key": "KNOB_17", "path": ["env", "KNOB_17"],
                                  "a": "a", "b": "b"}
    search = answer["trials"] - 4  # two re-runs of the answer, two of GOOD's launch
    assert search <= 2 * math.log2(30) + 1, answer["runs"]
    assert [r["verdict"] for r in answer["runs"][-4:]] == ["bad", "bad", "good", "good"]
    assert answer["runs"][-1]["applied"] == []
    # The search trials run with only what their verdict needs (a log, no snapshot); the
    # re-checks the answer rests on are snapshots of their own under .runsnap/bisect-<id>/.
    folder = Path(answer["folder"])
    assert folder.parent == tmp_path / ".runsnap" and folder.name.startswith("bisect-")
    assert all(run["snapshot"] is None for run in answer["runs"][:-4])
    for run in answer["runs"][-4:]:
        text = Path(run["snapshot"]).read_text()
        assert "[outcome]" in text
    assert len(list(folder.glob("trial-*.log"))) == len(answer["runs"])
    assert json.loads((folder / "bisect.json").read_text())["cause"] == answer["cause"]
    assert "trial 1: 30 of 30 applied: bad" in proc.stderr  # progress on stderr


@pytest.mark.slow
def test_two_variables_needed_together_are_found_as_a_pair(tmp_path: Path) -> None:
    prog = child(tmp_path / "launch.py",
                 "e = os.environ\n"
                 "if e.get('KNOB_03') == 'b' and e.get('KNOB_06') == 'b':\n"
                 "    sys.exit('ValueError: 3 and 6 together')\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], _knobs("a", 8))
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)], _knobs("b", 8))
    proc, answer = bisect(good, bad, "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env KNOB_03", "env KNOB_06"]
    assert answer["message"].startswith("cause found: 2 changes acting together")


@pytest.mark.slow
def test_a_command_line_option_among_options_and_variables(tmp_path: Path) -> None:
    prog = child(tmp_path / "server.py",
                 "import argparse\np = argparse.ArgumentParser()\n"
                 "p.add_argument('--tp', type=int)\np.add_argument('--port')\n"
                 "p.add_argument('--log-level')\np.add_argument('--trust-remote-code', "
                 "action='store_true')\na = p.parse_args()\n"
                 "if a.tp == 4:\n    sys.exit('AssertionError: tp 4 does not divide 6 heads')\n")
    base = ["python3", str(prog), "--port", "30000"]
    good = capture(tmp_path / "good.toml", [*base, "--tp", "2", "--log-level", "info"],
                   {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "WARN"})
    bad = capture(tmp_path / "bad.toml", [*base, "--tp", "4", "--log-level", "debug",
                                          "--trust-remote-code"],
                  {"NCCL_ALGO": "Tree", "NCCL_DEBUG": None})
    text = runsnap("bisect", str(good), str(bad))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("runsnap bisect: cause found: 1 change in ")
    assert lines[2] == "  command --tp: GOOD 2 -> BAD 4"
    assert lines[4].startswith("Re-checked: bad again with it applied (trials ")


@pytest.mark.slow
def test_a_config_json_field_edited_in_place(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(b"\0" * 4096)
    config = {"architectures": ["Llama"], "vocab_size": 32000, "torch_dtype": "bfloat16",
              "rope_scaling": {"type": "yarn", "factor": 4.0}, "max_position_embeddings": 8192}
    (model / "config.json").write_text(json.dumps(config))
    prog = child(tmp_path / "serve.py",
                 "cfg = json.load(open(os.path.join(sys.argv[2], 'config.json')))\n"
                 "if cfg['rope_scaling']['factor'] > 8:\n"
                 "    sys.exit('ValueError: rope factor too large for this kernel')\n"
                 "open(os.path.join(sys.argv[2], 'model.safetensors'), 'rb').read()\n")
    argv = ["python3", str(prog), "--model-path", str(model)]
    good = capture(tmp_path / "good.toml", argv)
    edited = {**config, "vocab_size": 32064, "torch_dtype": "float16",
              "rope_scaling": {"type": "yarn", "factor": 16.0}, "sliding_window": 4096}
    (model / "config.json").write_text(json.dumps(edited))
    bad = capture(tmp_path / "bad.toml", argv)
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    proc, answer = bisect(good, bad)
    assert proc.returncode == 0, proc.stderr
    assert answer["cause"] == [{
        "section": "models", "key": "--model-path: rope_scaling.factor",
        "path": ["models", "--model-path", "config", "rope_scaling", "factor"],
        "a": 4.0, "b": 16.0}]
    # The user's files are never touched; trials read a copy whose weights are links.
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
    copies = list(Path(answer["folder"]).glob("trial-*-models/model"))
    assert copies
    for copy in copies:
        assert (copy / "model.safetensors").is_symlink()
        assert os.path.realpath(copy / "model.safetensors") == str(weights)


def _server(tmp_path: Path) -> Path:
    return child(tmp_path / "server.py",
                 "open(os.path.join(os.environ['PIDS'], str(os.getpid())), 'w').close()\n"
                 "print('loading weights', flush=True)\n"
                 "time.sleep(0.3)\n"
                 "if os.environ.get('SERVER_CHUNKED_PREFILL') == '0':\n"
                 "    sys.exit('RuntimeError: prefill without chunks ran out of memory')\n"
                 "print('The server is fired up and ready to roll!', flush=True)\n"
                 "time.sleep(600)\n")


def _all_gone(pids: Path) -> bool:
    """Whether every process that wrote its pid into ``pids`` has ended. A zombie has ended:
    its parent died first, and reaping it is the job of PID 1 (this sandbox's init reaps late,
    and ``kill(pid, 0)`` still finds it until then)."""
    for p in pids.iterdir():
        try:
            os.kill(int(p.name), 0)
            with open(f"/proc/{p.name}/stat") as fh:
                if fh.read().rpartition(")")[2].split()[0] == "Z":
                    continue
        except (ProcessLookupError, FileNotFoundError):
            continue
        return False
    return True


@pytest.mark.slow
def test_a_server_that_keeps_running_when_good(tmp_path: Path) -> None:
    prog = _server(tmp_path)
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {"PIDS": str(pids), "SERVER_LOG": "1", "SERVER_THREADS": "8"}
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], env, run=False)
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {**env, "SERVER_LOG": "2", "SERVER_THREADS": "16",
                   "SERVER_CHUNKED_PREFILL": "0"}, run=False)
    # No outcome recorded: without --timeout or --test there is nothing to compare with.
    refused = runsnap("bisect", str(good), str(bad))
    assert refused.returncode == 2 and "--timeout" in refused.stderr
    start = time.monotonic()
    proc, answer = bisect(good, bad, "--timeout", "20", "--ready-line", "ready to roll",
                          "--kill-after", "2")
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env SERVER_CHUNKED_PREFILL"]
    # Good trials stop as soon as the server is ready, not after --timeout.
    assert time.monotonic() - start < 20 * 2
    assert any("ready after" in r["why"] for r in answer["runs"])
    assert _all_gone(pids)
    # Without --ready-line: still running after S seconds counts as good (each good trial
    # runs S seconds; a bad one fails within a second, 3 s leave it room on a loaded machine).
    proc, answer = bisect(good, bad, "--timeout", "3")
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env SERVER_CHUNKED_PREFILL"]
    assert any("still running after 3s" in r["why"] for r in answer["runs"])
    assert _all_gone(pids)


@pytest.mark.slow
def test_a_flaky_launch_yields_no_false_cause(tmp_path: Path) -> None:
    # Fails every other run, whatever its environment: any cause would be a false one.
    prog = child(tmp_path / "flaky.py",
                 "n = int(open('count').read()) + 1 if os.path.exists('count') else 1\n"
                 "open('count', 'w').write(str(n))\n"
                 "if n % 2:\n    sys.exit('RuntimeError: NCCL timeout')\n")
    (tmp_path / "count").write_text("1")  # GOOD is run 2 (passes), BAD run 3 (fails)
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], _knobs("a", 6))
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)], _knobs("b", 6))
    assert "[outcome]" in bad.read_text() and "NCCL timeout" in bad.read_text()
    assert "NCCL timeout" not in good.read_text()
    (tmp_path / "count").unlink()  # trial 1 (everything applied) fails: the search goes on
    proc, answer = bisect(good, bad)
    assert proc.returncode == 1, proc.stderr
    assert answer["cause"] == []
    assert answer["status"] == "not-reproducible", answer["message"]
    assert answer["runs"][0]["verdict"] == "bad" and len(answer["runs"]) > 2


@pytest.mark.slow
def test_path_list_entries_are_tried_one_by_one(tmp_path: Path) -> None:
    prog = child(tmp_path / "launch.py",
                 "if '/opt/src/sglang' in os.environ['PLUGIN_PATH'].split(':'):\n"
                 "    sys.exit('ImportError: cannot import name flashinfer_ops')\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)],
                   {"PLUGIN_PATH": "/usr/lib/a:/usr/lib/b"})
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"PLUGIN_PATH": "/opt/src/sglang:/usr/lib/a:/opt/extra"})
    proc, answer = bisect(good, bad)
    assert proc.returncode == 0, proc.stderr
    assert answer["cause"] == [{"section": "env", "key": "PLUGIN_PATH entry /opt/src/sglang",
                                "path": ["env", "PLUGIN_PATH", "+", "/opt/src/sglang"],
                                "a": None, "b": "/opt/src/sglang"}]


@pytest.mark.slow
def test_refuses_unapplicable_differences_unless_forced(tmp_path: Path) -> None:
    prog = child(tmp_path / "a.py", "sys.exit(1 if os.environ.get('X') == '2' else 0)\n")
    other = child(tmp_path / "b.py", "sys.exit(1)\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], {"X": "1"})
    bad = capture(tmp_path / "bad.toml", ["python3", str(other)], {"X": "2"})
    refused = runsnap("bisect", str(good), str(bad))
    assert refused.returncode == 2
    assert "different programs" in refused.stderr and "--force" in refused.stderr
    assert refused.stderr.count("\n") == 1  # one clear line, no traceback
    proc, answer = bisect(good, bad, "--force")
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env X"]


@pytest.mark.slow
def test_dry_run_and_max_trials(tmp_path: Path) -> None:
    prog = child(tmp_path / "launch.py", "sys.exit(3 if os.environ.get('KNOB_05') == 'b' else 0)\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], _knobs("a", 8))
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)], _knobs("b", 8))
    dry = runsnap("bisect", str(good), str(bad), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "8 changes to search" in dry.stdout and "trial 1: all 8 changes" in dry.stdout
    assert not (tmp_path / ".runsnap").exists()  # nothing was launched
    import runsnap as api

    answer_md = api.render_markdown(api.bisect(api.load(str(good)), api.load(str(bad)),
                                               Options(dry_run=True)))
    assert answer_md.startswith("### runsnap bisect: 8 changes to search")
    assert "| `env KNOB_05` | `a` | `b` |" in answer_md
    proc, answer = bisect(good, bad, "--max-trials", "3")
    assert proc.returncode == 1
    assert answer["status"] == "max-trials" and answer["trials"] == 3
    assert answer["cause"] == [] and len(answer["best_so_far"]) <= 4


def test_ctrl_c_stops_the_running_trial_and_prints_the_best_so_far(tmp_path: Path) -> None:
    prog = _server(tmp_path)
    pids = tmp_path / "pids"
    pids.mkdir()
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], {"PIDS": str(pids)}, run=False)
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"PIDS": str(pids), "SERVER_CHUNKED_PREFILL": "0", "A": "1"}, run=False)
    proc = subprocess.Popen([*RUNSNAP, "bisect", str(good), str(bad),
                             "--timeout", "60", "--ready-line", "never printed"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(pids.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in out
    assert _all_gone(pids)


@pytest.mark.slow
def test_a_test_command_decides_when_both_runs_exit_0(tmp_path: Path) -> None:
    prog = child(tmp_path / "batch.py",
                 "scale = 2 if os.environ.get('KERNEL') == 'fused' else 1\n"
                 "open(os.environ['OUT'], 'w').write(str(21 * 2 // scale))\n")
    out = tmp_path / "answer.txt"
    env = {"OUT": str(out), "BATCH": "8", "KERNEL": "plain"}
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], env)
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {**env, "BATCH": "16", "KERNEL": "fused", "SEED": "3"})
    refused = runsnap("bisect", str(good), str(bad))  # both exited 0: the outcome cannot tell
    assert refused.returncode == 2 and "--test" in refused.stderr
    check = f"test \"$(cat {out})\" = 42 && test -n \"$RUNSNAP_TRIAL_SNAPSHOT\""
    proc, answer = bisect(good, bad, "--test", check)
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env KERNEL"]
    assert {r["why"] for r in answer["runs"]} == {"--test exited 0", "--test exited 1"}


@pytest.mark.slow
def test_ready_url_says_when_a_server_is_up(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a free port on this machine for the server to take
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    prog = child(tmp_path / "http_server.py",
                 "import http.server\n"
                 "if os.environ.get('BIND_ALL') == '1':\n"
                 "    sys.exit('OSError: [Errno 98] Address already in use')\n"
                 "time.sleep(0.5)\n"
                 "srv = http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])),\n"
                 "                             http.server.SimpleHTTPRequestHandler)\n"
                 "srv.serve_forever()\n")
    env = {"PORT": str(port), "WORKERS": "1"}
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], env, run=False)
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {**env, "WORKERS": "4", "BIND_ALL": "1"}, run=False)
    url = f"http://127.0.0.1:{port}/"
    proc, answer = bisect(good, bad, "--timeout", "30", "--ready-url", url)
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env BIND_ALL"]
    assert any(r["why"].startswith("ready after") for r in answer["runs"])
    # With --test too, the test runs against the server once it is up, then the trial stops.
    check = f"python3 -c \"import urllib.request; urllib.request.urlopen('{url}', timeout=2)\""
    proc, answer = bisect(good, bad, "--timeout", "30", "--ready-url", url, "--test", check)
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env BIND_ALL"]
    assert "--test exited 0" in {r["why"] for r in answer["runs"]}


@pytest.mark.slow
def test_another_commit_blocks_unless_forced_and_is_listed_as_skipped(tmp_path: Path) -> None:
    from tests.conftest import git, make_repo

    repo = make_repo(tmp_path / "repo", {"serve.py": "import os, sys\n"
                                                     "sys.exit(os.environ.get('MODE') == 'x')\n"})
    os.chdir(repo)
    good = capture(tmp_path / "good.toml", ["python3", "serve.py"], {"MODE": "y"})
    with (repo / "serve.py").open("a") as fh:
        fh.write("# a comment: another commit, the same behaviour\n")
    git(repo, "commit", "-qam", "comment")
    bad = capture(tmp_path / "bad.toml", ["python3", "serve.py"], {"MODE": "x"})
    refused = runsnap("bisect", str(good), str(bad))
    assert refused.returncode == 2, refused.stderr
    assert "cannot be applied" in refused.stderr and "git" in refused.stderr
    assert "--force" in refused.stderr
    proc, answer = bisect(good, bad, "--force")
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env MODE"]
    blocking = [s for s in answer["skipped"] if s["blocking"]]
    assert blocking and blocking[0]["section"] == "git" and "commit" in blocking[0]["why"]


@pytest.mark.slow
def test_secrets_are_restored_or_skipped_and_never_written(tmp_path: Path) -> None:
    good_token, bad_token = "hf_" + "G" * 34, "hf_" + "B" * 34
    prog = child(tmp_path / "launch.py",
                 "assert os.environ.get('HF_TOKEN', '').startswith('hf_'), 'no token'\n"
                 "sys.exit('ValueError: bad mode' if os.environ['MODE'] == 'x' else 0)\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)],
                   {"HF_TOKEN": good_token, "MODE": "y"})
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"HF_TOKEN": bad_token, "MODE": "x"})
    here = {**os.environ, "HF_TOKEN": good_token}  # GOOD's secret is here, BAD's is not
    proc, answer = bisect(good, bad, env=here)
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env MODE"]
    skipped = {s["key"]: s["why"] for s in answer["skipped"]}
    assert "not in this environment" in skipped["HF_TOKEN"]
    written = [proc.stdout, proc.stderr] + [p.read_text(errors="replace")
                                            for p in Path(answer["folder"]).rglob("*")
                                            if p.is_file()]
    assert not any(good_token in w or bad_token in w for w in written)
    missing = runsnap("bisect", str(good), str(bad),
                      env={k: v for k, v in here.items() if k != "HF_TOKEN"})
    assert missing.returncode == 2 and "HF_TOKEN" in missing.stderr


@pytest.mark.slow
def test_the_text_answer_fits_the_terminal(tmp_path: Path) -> None:
    """The answer a person reads wraps to the terminal's width (each line under its own
    indent); piped without COLUMNS it keeps whole lines."""
    prog = child(tmp_path / "launch.py",
                 "if os.environ.get('KNOB_LONG_NAME_FOR_A_SETTING') == 'b':\n"
                 "    sys.exit('RuntimeError: no')\nprint('ok')\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)],
                   {"KNOB_LONG_NAME_FOR_A_SETTING": "a"})
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"KNOB_LONG_NAME_FOR_A_SETTING": "b"})
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    whole = runsnap("bisect", str(good), str(bad), env=env, cwd=tmp_path)
    narrow = runsnap("bisect", str(good), str(bad), env={**env, "COLUMNS": "60"}, cwd=tmp_path)
    assert whole.returncode == narrow.returncode == 0, narrow.stderr
    assert max(len(line) for line in whole.stdout.splitlines()) > 60
    assert all(len(line) <= 60 for line in narrow.stdout.splitlines()), narrow.stdout
    # the trials' progress on stderr too (each trial's error is in its log)
    assert all(len(line) <= 60 for line in narrow.stderr.splitlines()), narrow.stderr
    assert max(len(line) for line in whole.stderr.splitlines()) > 60
    assert "env KNOB_LONG_NAME_FOR_A_SETTING: GOOD a -> BAD b" in narrow.stdout

    def words(text: str) -> list[str]:  # all but the trials' folder and the time taken
        return [w for w in text.partition("Trials:")[0].split() if not w.endswith("s)")]

    assert words(narrow.stdout) == words(whole.stdout)  # only the breaks and indents differ
