"""Issue 41, items 1, 3 and 8: an error that quotes an input's value decides for every kind of
input (runsnap/diffing/naming.py, confidence.py); a message that names an input by its words
(runsnap/diffing/bywords.py); a value an engine's message implies
(runsnap/knowledge/implied-values.tsv). Each through two real traced launches of a small
program; the engines' messages are their real texts, printed by a stand-in where the engine
itself (torch, aiohttp) is not installed here."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from benchmarks.diagnosis import diff, run_incident
from benchmarks.tune5 import aiohttp_body_size_quoted, uvicorn_concurrency_env_warning
from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.diffing.result import Report
from runsnap.snapshot import Snapshot


def _pair(tmp_path: Path, program: str, good: tuple[dict[str, str], list[str]],
          bad: tuple[dict[str, str], list[str]], fails: bool = True) -> tuple[Snapshot, Snapshot]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(program))
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    snaps = []
    for name, (env, argv) in (("good", good), ("bad", bad)):
        snaps.append(run([sys.executable, str(app), *argv], env={**base, **env}, cwd=tmp_path,
                         output=tmp_path / f"{name}.toml").snapshot)
    assert snaps[0]["outcome"]["exit_status"] == 0
    assert snaps[1]["outcome"]["exit_status"] == (1 if fails else 0)
    return snaps[0], snaps[1]


_BACKEND = """
    import os

    def connect():
        backend = os.environ.get("APP_BACKEND", "fast")
        region = os.environ.get("APP_REGION", "eu")
        if backend not in ("fast", "slow"):
            raise ValueError(f"unknown backend {backend!r}{MORE}")
        print("connected", region)

    connect()
    """


def test_a_quoted_variable_stands_apart_from_one_read_in_the_function_that_raised(
        tmp_path: Path) -> None:
    """Both variables are read in the function that raised (99 each): the error quotes one
    value, no other input's, and the passing run never printed it: confident on it."""
    a, b = _pair(tmp_path, _BACKEND.replace("{MORE}", ""),
                 ({"APP_BACKEND": "fast", "APP_REGION": "eu"}, []),
                 ({"APP_BACKEND": "quick", "APP_REGION": "us"}, []))
    report = compare(a, b)
    top = report.counted[0]
    assert (top.key, top.evidence_kind, top.quoted) == ("APP_BACKEND", "failing-path", True)
    assert report.confidence == "confident", report.verdict()
    assert report.because.startswith("the failing error quotes its value, no other input's")
    region = next(d for d in report.counted if d.key == "APP_REGION")
    assert (region.evidence_kind, region.score, region.quoted) == ("failing-path", 99, False)


def test_a_value_both_inputs_hold_or_both_quoted_singles_out_neither(tmp_path: Path) -> None:
    """The error quotes both inputs' values (undecided), or a token the other input holds too
    (no quote counts)."""
    a, b = _pair(tmp_path, _BACKEND.replace("{MORE}", " in region {region}"),
                 ({"APP_BACKEND": "fast", "APP_REGION": "eu"}, []),
                 ({"APP_BACKEND": "quick", "APP_REGION": "us-west"}, []))
    report = compare(a, b)
    assert report.confidence == "undecided", report.verdict()
    assert {d.key for d in report.counted[:2]} == {"APP_BACKEND", "APP_REGION"}
    assert all(d.quoted for d in report.counted[:2])
    a, b = _pair(tmp_path, _BACKEND.replace("{MORE}", ""),
                 ({"APP_BACKEND": "fast", "APP_REGION": "eu"}, []),
                 ({"APP_BACKEND": "quick", "APP_REGION": "quick,eu"}, []))
    report = compare(a, b)
    assert report.confidence == "undecided" and not any(d.quoted for d in report.counted)


def test_a_value_the_passing_run_printed_too_is_no_quote(tmp_path: Path) -> None:
    """A lists the backends it knows, ``quick`` among them: B's error quoting ``quick`` does
    not single out B's value."""
    program = _BACKEND.replace("{MORE}", "").replace(
        "    def connect():", "    print('known backends: fast slow quick')\n\n    def connect():")
    a, b = _pair(tmp_path, program, ({"APP_BACKEND": "fast", "APP_REGION": "eu"}, []),
                 ({"APP_BACKEND": "quick", "APP_REGION": "us"}, []))
    report = compare(a, b)
    assert report.confidence == "undecided" and not any(d.quoted for d in report.counted)


def test_a_config_field_the_error_quotes_over_one_the_constructor_read(tmp_path: Path) -> None:
    """A model's config.json: the constructor reads both fields that differ (99 each, the
    frame that raised reads them); the KeyError quotes hidden_act's value: confident on it."""
    for side, (act, heads) in (("a", ("gelu", 4)), ("b", ("gelu_fast2", 8))):
        (tmp_path / side).mkdir()
        (tmp_path / side / "config.json").write_text(json.dumps(
            {"model_type": "toy", "hidden_act": act, "num_attention_heads": heads}))
    a, b = _pair(tmp_path, """
        import argparse, json

        ACT = {"gelu": 1, "relu": 2}

        class Toy:
            def __init__(self, cfg):
                self.heads = cfg["num_attention_heads"]
                self.act = ACT[cfg["hidden_act"]] if cfg["hidden_act"] in ACT else None
                if self.act is None:
                    raise KeyError(f"activation {cfg['hidden_act']} not found in ACT2FN")

        p = argparse.ArgumentParser()
        p.add_argument("--model-path")
        cfg = json.load(open(p.parse_args().model_path + "/config.json"))
        Toy(cfg)
        """, ({}, ["--model-path", str(tmp_path / "a")]),
        ({}, ["--model-path", str(tmp_path / "b")]))
    report = compare(a, b)
    fields = {d.key: d for d in report.differences if d.section == "models"}
    act, heads = fields["--model-path: hidden_act"], fields["--model-path: num_attention_heads"]
    assert (act.evidence_kind, act.quoted) == ("failing-path", True), act.reason
    assert "a field of the config B's model was built from" in act.reason
    assert heads.evidence_kind == "failing-path" and not heads.quoted
    assert report.confidence == "confident" and report.counted[0] is act


_QUEUE = """
    import argparse, sys

    p = argparse.ArgumentParser()
    p.add_argument("--max-queue-size", type=int)
    p.add_argument("--policy")
    a = p.parse_args()
    {A_SAYS}
    if a.max_queue_size < 8:
        raise RuntimeError("{MESSAGE}")
    print("served")
    """


def _queue(tmp_path: Path, message: str, a_says: str = "") -> Report:
    a, b = _pair(tmp_path, _QUEUE.replace("{MESSAGE}", message).replace("{A_SAYS}", a_says),
                 ({}, ["--max-queue-size", "64", "--policy", "fifo"]),
                 ({}, ["--max-queue-size", "4", "--policy", "lifo"]))
    return compare(a, b)


def test_a_message_that_holds_every_word_of_an_options_name_names_it(tmp_path: Path) -> None:
    """``queue size exceeded the maximum`` holds max (as Maximum), queue and size: it names
    --max-queue-size, backed by the error, over --policy nothing names (a worker count, 2
    against 4, would be no candidate: how many, not what)."""
    report = _queue(tmp_path, "request rejected: queue size exceeded the maximum")
    top = report.counted[0]
    assert (top.key, top.evidence_kind, top.corroborated) == ("--max-queue-size", "named", True)
    assert top.reason.startswith("the error of failing run B names --max-queue-size by its "
                                 "words (max, queue, size)"), top.reason
    assert report.confidence == "confident"


def test_a_message_missing_one_word_or_printed_by_both_names_nothing(tmp_path: Path) -> None:
    """One word missing (``queue exceeded the maximum``: no size), or the passing run printed
    the same message as a warning: no words evidence, undecided between the two options."""
    for message, a_says in (
            ("request rejected: queue exceeded the maximum", ""),
            ("request rejected: queue size exceeded the maximum",
             "print('Warning: request rejected: queue size exceeded the maximum')")):
        report = _queue(tmp_path / str(len(a_says)), message, a_says)
        assert report.confidence == "undecided", (message, report.verdict())
        assert all(d.evidence_kind == "name" for d in report.counted[:2])


_STORE = """
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--world-size", type=int)
    p.add_argument("--batch", type=int)
    p.add_argument("--port", type=int)
    a = p.parse_args()
    if a.world_size > 1:  # the master waits for clients nobody starts
        raise RuntimeError("Timed out after 3 seconds waiting for clients. 1/%d clients "
                           "joined." % a.world_size)
    print("joined")
    """


def test_a_value_an_engines_message_implies_names_the_input_that_holds_it(tmp_path: Path
                                                                         ) -> None:
    """c10d's store message (torch 2.13's text) implies a world of 2: --world-size is 2 in B
    only; --batch is 2 in B too, but its name holds no word of a world size; --port is not 2."""
    a, b = _pair(tmp_path, _STORE, ({}, ["--world-size", "1", "--batch", "1",
                                                 "--port", "29500"]),
                 ({}, ["--world-size", "2", "--batch", "2", "--port", "29501"]))
    report = compare(a, b)
    top = report.counted[0]
    assert (top.key, top.evidence_kind) == ("--world-size", "named"), top.reason
    assert "implies world size 2, B's value of --world-size" in top.reason
    assert "test_store_timeout_on_missing_clients" in top.reason  # the row's provenance
    assert next(d for d in report.counted if d.key == "--batch").evidence_kind == "name"
    assert report.confidence == "confident"


def _incident(build: Any, tmp_path: Path) -> dict[str, Any]:
    """A tune5 incident (benchmarks/tune5.py) launched for real with this venv's interpreter
    (its test extra has aiohttp, uvicorn and httpx), ranked by ``runsnap diff --format json``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RUNSNAP_CORPUS_PYTHON", sys.executable)
        incident = build(tmp_path)
    return diff(*run_incident(incident, tmp_path))


@pytest.mark.slow
def test_aiohttps_own_413_quotes_the_body_size_option(tmp_path: Path) -> None:
    """aiohttp's 413 text, surfaced by the client, quotes --max-body-size's value and holds
    its words; --batches differs too: confident, the quote said."""
    report = _incident(aiohttp_body_size_quoted, tmp_path)
    top = next(d for d in report["differences"] if not d["hidden"])
    assert (top["key"], top["evidence_kind"], top["quoted"]) == (
        "--max-body-size", "failing-path", True), top["reason"]
    assert "Maximum request body size 1024 exceeded" in top["reason"]
    assert report["confidence"] == "confident"


@pytest.mark.slow
def test_uvicorns_warning_names_its_variable_by_its_words(tmp_path: Path) -> None:
    """uvicorn's command line reads UVICORN_LIMIT_CONCURRENCY; its warning "Exceeded
    concurrency limit." holds the variable's words (UVICORN, the package's own word, left
    out): read evidence backed by the failing side's words, first of the two reads, and the
    verdict stays undecided (a read alone never decides)."""
    report = _incident(uvicorn_concurrency_env_warning, tmp_path)
    shown = [d for d in report["differences"] if not d["hidden"]]
    assert [d["key"] for d in shown[:2]] == ["UVICORN_LIMIT_CONCURRENCY", "APP_SLOW_MS"]
    assert "by its words (limit, concurrency)" in shown[0]["reason"]
    assert (shown[0]["evidence_kind"], shown[0]["corroborated"]) == ("read", True)
    assert report["confidence"] == "undecided"


def test_a_quoted_variable_read_by_name_outranks_one_only_copied_to_a_child(tmp_path: Path
                                                                           ) -> None:
    """The error quotes two values: APP_BACKEND's, which the failing process read by name,
    and APP_MIRROR's, which it only handed to a shell in a copy of its environment (the shell
    echoes it back): the read one is the quote that decides."""
    a, b = _pair(tmp_path, """
        import os, subprocess

        def connect():
            backend = os.environ.get("APP_BACKEND", "fast")
            mirror = subprocess.run(["sh", "-c", 'echo "$APP_MIRROR"'], env=dict(os.environ),
                                    capture_output=True, text=True).stdout.strip()
            if backend not in ("fast", "slow"):
                raise ValueError(f"unknown backend {backend!r} (mirror {mirror})")
            print("connected")

        connect()
        """, ({"APP_BACKEND": "fast", "APP_MIRROR": "eu-mirror"}, []),
        ({"APP_BACKEND": "quick", "APP_MIRROR": "us-mirror"}, []))
    report = compare(a, b)
    ranked = {d.key: d for d in report.counted}
    assert (ranked["APP_BACKEND"].evidence_kind, ranked["APP_BACKEND"].quoted) == (
        "failing-path", True)
    assert (ranked["APP_MIRROR"].evidence_kind, ranked["APP_MIRROR"].quoted) == ("named", False)
    assert report.confidence == "confident" and report.counted[0].key == "APP_BACKEND"


def test_a_traceback_path_or_a_url_scheme_quotes_no_value(tmp_path: Path) -> None:
    """B's shell sets MPLBACKEND=module://matplotlib_inline.backend_inline (a Jupyter
    terminal's), and B fails, for its config, in a file named module.py: the traceback's frame
    line ``.../module.py", line 3`` is where code ran, not words of the run, and ``module`` is
    the URL's scheme, not an entry of the value. Nothing quotes MPLBACKEND's value."""
    (tmp_path / "module.py").write_text(
        "import os\n\ndef to(device):\n    if device == 'cuda':\n"
        "        raise AssertionError('Torch not compiled with CUDA enabled')\n")
    a, b = _pair(tmp_path, """
        import sys
        sys.path.insert(0, ".")
        import module
        module.to(sys.argv[1] if len(sys.argv) > 1 else "cpu")
        print("served")
        """, ({}, []), ({"MPLBACKEND": "module://matplotlib_inline.backend_inline"}, ["cuda"]))
    report = compare(a, b)
    backend = next(d for d in report.differences if d.key == "MPLBACKEND")
    assert backend.evidence_kind not in ("named", "failing-path"), backend.reason
    assert not (report.confidence == "confident" and report.candidates[0].key == "MPLBACKEND")


#: torch's c10d in miniature: the program reads its backend and hands it to
#: ``init_process_group``, which raises torch's own text (torch/distributed/distributed_c10d.py:
#: ``raise RuntimeError("Distributed package doesn't have NCCL built in")``) on a build without
#: NCCL; it spells the backend its own way.
_C10D = """
    import os

    BUILT = {"gloo": "Gloo", "nccl": "NCCL", "xccl": "XCCL"}

    def init_process_group(backend):
        if backend != "gloo":
            raise RuntimeError(f"Distributed package doesn't have {BUILT[backend]} built in")

    def main():
        backend = os.environ.get("DIST_BACKEND", "gloo")
        level = os.environ.get("DIST_LOG", "warning")
        init_process_group(backend)
        print("ok")

    main()
    """


def test_an_error_that_spells_a_value_in_its_own_case_quotes_it(tmp_path: Path) -> None:
    """``nccl`` read by the program, ``NCCL`` in torch's error: the value is quoted (99,
    confident); the log level the program also read is not."""
    a, b = _pair(tmp_path, _C10D, ({"DIST_LOG": "info"}, []),
                 ({"DIST_BACKEND": "nccl", "DIST_LOG": "debug"}, []))
    report = compare(a, b)
    top = report.counted[0]
    assert (top.key, top.score, top.quoted) == ("DIST_BACKEND", 99, True), report.verdict()
    assert "names B's value nccl, which B read" in top.reason
    assert report.confidence == "confident", report.verdict()


def test_a_word_an_error_uses_for_its_own_reasons_quotes_no_value(tmp_path: Path) -> None:
    """``DEBUG`` in the error is the message's own word: ``debug`` set for a log variable is
    not quoted by it, in any case."""
    program = _C10D.replace("{BUILT[backend]} built in", "{BUILT[backend]} built in (DEBUG)")
    a, b = _pair(tmp_path, program, ({"DIST_LOG": "info"}, []),
                 ({"DIST_BACKEND": "xccl", "DIST_LOG": "debug"}, []))
    report = compare(a, b)
    log = next(d for d in report.counted if d.key == "DIST_LOG")
    assert not log.quoted and "names B's value" not in log.reason, log.reason


#: A rendezvous store as torch's ``_create_c10d_store`` makes one: rank 0 hosts it on
#: MASTER_PORT, unless STORE_USE_AGENT says an agent hosts it, and then it connects as a client
#: (real sockets: the client's connect times out where nothing listens).
_STORE_CLIENT = """
    import os, socket

    def create_store(port):
        if os.environ.get("STORE_USE_AGENT") == "True":
            s = socket.socket()
            s.settimeout(0.3)
            try:
                s.connect(("127.0.0.1", port))
            except OSError:
                raise TimeoutError("The client socket has timed out while trying to connect to "
                                   f"(127.0.0.1, {port}).") from None
            return s
        server = socket.socket()
        server.bind(("127.0.0.1", port))
        server.listen()
        return server

    def rendezvous():
        port = int(os.environ["MASTER_PORT"])
        return create_store(port)

    rendezvous().close()
    print("store ready")
    """


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_quoted_port_is_where_the_run_connected_not_why(tmp_path: Path) -> None:
    """Each shell picked its own free MASTER_PORT; B also says an agent hosts the store, so
    rank 0 connects as a client and nothing listens. The error quotes B's port: that says
    where it connected; the variable read in the function that raised may be why (fresh10
    ``agent-store-var-copied`` named MASTER_PORT, confident and wrong). Undecided between
    the two; with the port alone differing, the quoted port stays the confident cause."""
    a, b = _pair(tmp_path / "agent", _STORE_CLIENT, ({"MASTER_PORT": str(_free_port())}, []),
                 ({"MASTER_PORT": str(_free_port()), "STORE_USE_AGENT": "True"}, []))
    report = compare(a, b)
    assert report.confidence == "undecided", report.verdict()
    # read in the function that raised, first; the port, read in its caller, quoted, second
    assert [d.key for d in report.candidates] == ["STORE_USE_AGENT", "MASTER_PORT"]


def test_a_quoted_port_alone_is_the_cause(tmp_path: Path) -> None:
    """An agent hosts the store in both runs, on A's port; B was given another port where
    nothing listens. Only the port differs, and the error quotes it: confident on it."""
    import socket

    with socket.socket() as agent:
        agent.bind(("127.0.0.1", 0))
        agent.listen()
        port = str(agent.getsockname()[1])
        a, b = _pair(tmp_path / "port", _STORE_CLIENT,
                     ({"MASTER_PORT": port, "STORE_USE_AGENT": "True"}, []),
                     ({"MASTER_PORT": str(_free_port()), "STORE_USE_AGENT": "True"}, []))
    report = compare(a, b)
    assert report.confidence == "confident", report.verdict()
    assert [d.key for d in report.candidates] == ["MASTER_PORT"]
