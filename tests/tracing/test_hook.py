"""The tracing hook in real Python children: every access path, processes, kills, chaining."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runsnap.redact import is_fingerprint
from tests.tracing.conftest import child_env

ACCESS = """
import os

def helper(name):
    return os.getenv(name)

def deeper(name):
    return helper(name)

print(deeper("SET_GETENV"), helper("UNSET_GETENV"))
print(os.environ.get("SET_GET"), os.environ.get("UNSET_GET", "dflt"))
print("SET_IN" in os.environ, "UNSET_IN" in os.environ)
print(os.environ["SET_ITEM"])
try:
    os.environ["UNSET_ITEM"]
except KeyError:
    print("missing")
print(os.environb.get(b"SET_BYTES"), os.environb.get(b"UNSET_BYTES"))
copy = os.environ.copy()
for _ in range(4):
    os.environ.get("SET_GET")
"""


def _sites(runtime: dict, name: str) -> list[dict]:
    return list(runtime["env"][name].get("sites") or [])


def test_every_access_path_set_and_unset(traced) -> None:
    env = child_env(SET_GETENV="a", SET_GET="b", SET_IN="c", SET_ITEM="d", SET_BYTES="e",
                    ONLY_COPIED="f")
    record, rt, out = traced(ACCESS, env=env)
    assert record.exit_status == 0, out
    assert rt["traced"] is True
    vars_ = rt["env"]
    for name, value, via in [("SET_GETENV", "a", "getenv"), ("SET_GET", "b", "get"),
                             ("SET_IN", "c", "in"), ("SET_ITEM", "d", "[]"),
                             ("SET_BYTES", "e", "bget")]:
        assert vars_[name]["set"] is True, name
        assert vars_[name]["value"] == value
        assert via in vars_[name]["via"], (name, vars_[name]["via"])
        assert vars_[name]["python"] is True
    for name, via in [("UNSET_GETENV", "getenv"), ("UNSET_GET", "get"), ("UNSET_IN", "in"),
                      ("UNSET_ITEM", "[]"), ("UNSET_BYTES", "bget")]:
        assert vars_[name]["set"] is False, name
        assert "value" not in vars_[name]
        assert vars_[name]["reads"] == 1
        assert vars_[name]["via"] == [via]
    assert vars_["SET_GET"]["reads"] == 5  # once, then four times in the loop (another site)
    assert sorted(s["reads"] for s in _sites(rt, "SET_GET")) == [1, 4]
    # copy(): a bulk read of every variable, not one read each
    assert vars_["ONLY_COPIED"]["bulk"] is True
    assert vars_["ONLY_COPIED"]["reads"] == 0 and vars_["ONLY_COPIED"]["bulk_reads"] == 1
    assert vars_["SET_ITEM"]["reads"] == 1 and vars_["SET_ITEM"]["bulk_reads"] == 1
    assert rt["bulk_sites"][0]["stack"][0].endswith(":19 in <module>")


def test_stack_names_the_callers_outside_os_and_the_hook(traced) -> None:
    _record, rt, _out = traced(ACCESS, env=child_env(SET_GETENV="a"))
    (site,) = _sites(rt, "SET_GETENV")
    stack = site["stack"]
    assert stack[0].endswith(":5 in helper"), stack
    assert stack[1].endswith(":8 in deeper")
    assert stack[2].endswith(":10 in <module>")
    assert not any("sitecustomize" in f or "frozen os" in f for f in stack)
    # one variable read through the same helper from two callers: two sites
    _record, rt, _out = traced("""
        import os
        def helper():
            return os.environ.get("X_TWO")
        def a():
            return helper()
        def b():
            return helper()
        a(); b(); b()
    """)
    assert sorted((s["stack"][1].split(" in ")[1], s["reads"]) for s in _sites(rt, "X_TWO")) \
        == [("a", 1), ("b", 2)]


PROBE_VIEW = """
import os, sys
print(os.environ.get("PYTHONPATH"), os.environ.get("LD_PRELOAD"))
print(sorted(k for k in os.environ if k.startswith("RUNSNAP")))
print([p for p in sys.path if "runsnap" in p])
print("sitecustomize" in sys.modules, sys.modules.get("sitecustomize"))
print(sorted(m for m in sys.modules if "runsnap" in m))
print(len(os.environ), sorted(os.environ) == sorted(os.environ.copy()))
sys.stdout.flush()
sys.exit(3)
"""


def test_same_output_and_exit_status_with_and_without_tracing(traced, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    env = child_env(PYTHONPATH=str(extra))
    on, rt_on, out_on = traced(PROBE_VIEW, env=env)
    off, rt_off, out_off = traced(PROBE_VIEW, env=env, trace=False)
    assert out_on == out_off
    assert on.exit_status == off.exit_status == 3
    assert rt_on["traced"] is True
    assert rt_off == {**rt_off, "traced": False, "reason": "tracing was turned off (--no-trace)"}
    # the snapshot's [env] is the environment given, not the launched one
    assert on.snapshot.get("env")["vars"]["PYTHONPATH"] == str(extra)
    assert not any(k.startswith("RUNSNAP_TRACE") for k in on.snapshot.get("env")["vars"])


def test_existing_sitecustomize_still_runs_and_is_traced(traced, tmp_path: Path) -> None:
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "sitecustomize.py").write_text(
        "import os\nprint('custom ran', os.environ.get('CUSTOM_KNOB'))\n")
    _record, rt, out = traced("""
        import sys
        print(sys.modules["sitecustomize"].__file__)
    """, env=child_env(PYTHONPATH=str(custom), CUSTOM_KNOB="7"))
    assert out.splitlines() == ["custom ran 7", str(custom / "sitecustomize.py")]
    assert rt["env"]["CUSTOM_KNOB"]["value"] == "7"
    assert rt["modules"]["sitecustomize"]["origin"] == "pythonpath"


@pytest.mark.slow
def test_multiprocessing_fork_and_spawn_workers(traced) -> None:
    for method in ("fork", "spawn", "forkserver"):
        record, rt, out = traced(f"""
            import multiprocessing as mp, os

            def work(_):
                return os.environ.get("WORKER_ONLY_{method.upper()}", "none")

            if __name__ == "__main__":
                os.environ.get("PARENT_READ")
                with mp.get_context("{method}").Pool(1) as pool:
                    print(pool.map(work, [0]))
        """, env=child_env(**{f"WORKER_ONLY_{method.upper()}": "w"}))
        assert record.exit_status == 0, out
        top = record.result.pid
        entry = rt["env"][f"WORKER_ONLY_{method.upper()}"]
        assert entry["value"] == "w" and entry["reads"] == 1, method
        assert top not in entry["pids"], method
        assert rt["env"]["PARENT_READ"]["pids"] == [top]
        pids = {p["pid"]: p for p in rt["processes"]}
        (worker,) = entry["pids"]
        assert worker in pids, method
        assert pids[worker]["how"] == ("fork" if method != "spawn" else "exec"), method


def test_subprocess_of_another_interpreter_with_explicit_env(traced, tmp_path: Path) -> None:
    venv = tmp_path / "other"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (tmp_path / "inner.py").write_text("import os\nprint('inner', os.environ.get('INNER_VAR'),"
                                       " os.environ.get('PYTHONPATH'))\n")
    record, rt, out = traced(f"""
        import os, subprocess
        py = {str(venv / "bin" / "python")!r}
        env = {{k: v for k, v in os.environ.items()}}
        env["INNER_VAR"] = "given"
        subprocess.run([py, "inner.py"], env=env, check=True)
        subprocess.run([py, "inner.py"], check=True)
    """, env=child_env())
    assert record.exit_status == 0, out
    assert out.splitlines() == ["inner given None", "inner None None"]
    inner = [p for p in rt["processes"] if p["argv"][-1] == "inner.py"]
    assert len(inner) == 2
    assert {p["executable"] for p in inner} == {str(venv / "bin" / "python")}
    assert rt["env"]["INNER_VAR"]["value"] == "given"
    assert rt["env"]["INNER_VAR"]["set"] is True


def test_sigkilled_child_keeps_what_it_read(traced) -> None:
    record, rt, _out = traced("""
        import os, signal
        os.environ.get("BEFORE_KILL")
        import json
        os.kill(os.getpid(), signal.SIGKILL)
        os.environ.get("AFTER_KILL")
    """, env=child_env(BEFORE_KILL="1"))
    assert record.exit_status == 137
    assert rt["env"]["BEFORE_KILL"]["value"] == "1"
    assert "AFTER_KILL" not in rt["env"]
    assert rt["processes"][0]["ended"] == "killed or still running"
    assert record.snapshot.get("outcome")["exit_status"] == 137


def test_program_that_sets_pythonpath_keeps_children_traced(traced, tmp_path: Path) -> None:
    (tmp_path / "child.py").write_text("import os\nprint(os.environ.get('PYTHONPATH'))\n"
                                       "os.environ.get('GRANDCHILD_READ')\n")
    record, rt, out = traced("""
        import os, subprocess, sys
        os.environ["PYTHONPATH"] = "/nowhere"
        subprocess.run([sys.executable, "child.py"], check=True)
    """)
    assert out.strip() == "/nowhere"
    assert rt["env"]["PYTHONPATH"]["written"] is True
    assert "GRANDCHILD_READ" in rt["env"]
    assert len(rt["processes"]) == 2


def test_third_party_package_read_at_import(traced) -> None:
    record, rt, out = traced("import huggingface_hub.constants\n",
                                env=child_env(HF_HUB_OFFLINE="1"))
    assert record.exit_status == 0, out
    offline = rt["env"]["HF_HUB_OFFLINE"]
    assert offline["value"] == "1" and offline["set"] is True
    assert any("huggingface_hub/" in s["stack"][0] for s in offline["sites"])
    assert rt["env"]["HF_HOME"]["set"] is False  # read, unset: the default was taken
    mod = rt["modules"]["huggingface_hub"]
    assert mod["origin"] == "site-packages"
    assert mod["dist"] == "huggingface_hub" or mod["dist"].replace("_", "-") == "huggingface-hub"
    import huggingface_hub

    assert mod["version"] == huggingface_hub.__version__


def test_module_from_pythonpath_checkout_is_visible(traced, tmp_path: Path) -> None:
    checkout = tmp_path / "src"
    (checkout / "mypkg").mkdir(parents=True)
    (checkout / "mypkg" / "__init__.py").write_text("")
    _record, rt, _out = traced("import mypkg\nimport json\n",
                               env=child_env(PYTHONPATH=str(checkout)))
    assert rt["modules"]["mypkg"] == {"file": str(checkout / "mypkg" / "__init__.py"),
                                      "origin": "pythonpath"}
    assert "json" in rt["stdlib_modules"] and "json" not in rt["modules"]


def test_secret_values_read_are_redacted(traced) -> None:
    # made up at run time: the literal would otherwise be in this repository's own git diff,
    # which the snapshot records (runsnap is an editable install here)
    token = "hf_" + os.urandom(18).hex()
    password = "pw-" + os.urandom(6).hex()
    record, rt, _out = traced("import os\nos.environ.get('HF_TOKEN')\n"
                              "os.environ.get('MY_DB_PASSWORD')\n",
                              env=child_env(HF_TOKEN=token, MY_DB_PASSWORD=password))
    assert is_fingerprint(rt["env"]["HF_TOKEN"]["value"])
    assert is_fingerprint(rt["env"]["MY_DB_PASSWORD"]["value"])
    text = Path(record.snapshot.path_text).read_text()
    assert token not in text and password not in text


def test_non_python_child_is_not_traced(traced, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    record, rt, out = traced("", argv=[str(script)])
    assert out == "hi\n" and record.exit_status == 0
    assert rt["traced"] is False
    assert rt["reason"] == f"not a Python program: {script} is a script for /bin/sh"


def test_console_script_with_python_shebang_is_traced(traced, tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text(f"#!{sys.executable}\nimport os\nos.environ.get('TOOL_KNOB')\n")
    script.chmod(0o755)
    record, rt, _out = traced("", argv=[str(script)])
    assert record.exit_status == 0
    assert rt["traced"] is True and "TOOL_KNOB" in rt["env"]


def test_trace_folder_is_private_and_removed(traced, tmp_path: Path, monkeypatch) -> None:
    import stat

    from runsnap import tracing

    own = tmp_path / "tmp"
    own.mkdir()
    monkeypatch.setenv("TMPDIR", str(own))  # other runs on this machine stay out
    made: list[str] = []
    real = tracing._private_dir

    def spy(prefix: str) -> str:
        made.append(real(prefix))
        assert stat.S_IMODE(os.stat(made[-1]).st_mode) == 0o700  # values are raw until merged
        return made[-1]

    monkeypatch.setattr(tracing, "_private_dir", spy)
    _record, rt, _out = traced("import os\nos.environ.get('A')\n")
    assert rt["traced"] is True
    assert len(made) == 1 and os.path.dirname(made[0]) == str(own)
    assert not os.path.exists(made[0])
    # where $TMPDIR cannot be written, tempfile's own search is the answer
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    fallback = real("runsnap-trace-")
    assert os.path.isdir(fallback) and stat.S_IMODE(os.stat(fallback).st_mode) == 0o700
    os.rmdir(fallback)


def test_hook_source_is_stdlib_only() -> None:
    from runsnap.tracing import HOOK_DIR

    parts = ["_runsnap_trace_args.py", "_runsnap_trace_config.py", "_runsnap_trace_files.py",
             "_runsnap_trace_imports.py", "_runsnap_trace_log.py", "_runsnap_trace_spawn.py",
             "sitecustomize.py"]
    assert sorted(p for p in os.listdir(HOOK_DIR) if p != "__pycache__") == parts
    imports = set()
    for part in parts:
        src = Path(HOOK_DIR, part).read_text()
        imports |= {line.split()[1] for line in textwrap.dedent(src).splitlines()
                    if line.strip().startswith(("import ", "from "))}
    # fcntl: only in a process started without a standard stream (the log moved above them)
    assert imports <= {"_thread", "os", "sys", "atexit", "sitecustomize", "fcntl",
                       "_runsnap_trace_log", "_runsnap_trace_spawn", "_runsnap_trace_config",
                       "_runsnap_trace_files", "_runsnap_trace_args",
                       "_runsnap_trace_imports"}, imports


def test_launcher_workers_with_their_own_env_are_told_apart(traced, tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text("import os\nos.environ.get('RANK')\n"
                                        "os.environ.get('WORKER_KNOB')\n")
    record, rt, out = traced("""
        import os, subprocess, sys
        procs = [subprocess.Popen([sys.executable, "worker.py"],
                                  env={**os.environ, "RANK": str(rank)}) for rank in (0, 1)]
        sys.exit(max(p.wait() for p in procs))
    """)
    assert record.exit_status == 0, out
    rank = rt["env"]["RANK"]
    assert {rank["value"], *rank["other_values"]} == {"0", "1"}
    workers = [p["pid"] for p in rt["processes"] if p["argv"][-1] == "worker.py"]
    assert sorted(rank["pids"]) == sorted(workers) and len(workers) == 2
    assert record.result.pid not in rank["pids"]


def test_python_dash_m_is_traced(traced, tmp_path: Path) -> None:
    (tmp_path / "mymod.py").write_text("import os\nos.environ.get('MODULE_KNOB')\n")
    record, rt, _out = traced("", argv=[sys.executable, "-m", "mymod"])
    assert record.exit_status == 0 and rt["traced"] is True
    (site,) = rt["env"]["MODULE_KNOB"]["sites"]
    assert site["stack"][0] == "mymod.py:2 in <module>"


def test_reads_from_threads_are_all_counted(traced) -> None:
    _record, rt, _out = traced("""
        import os, threading
        def work():
            for _ in range(500):
                os.environ.get("THREAD_KNOB")
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
    """)
    # counts are kept without a lock on the hot path: racing threads may lose a few increments
    assert 1500 <= rt["env"]["THREAD_KNOB"]["reads"] <= 2000
    assert len(rt["env"]["THREAD_KNOB"]["sites"]) == 1
