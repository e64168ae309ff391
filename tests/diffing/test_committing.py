"""When the verdict commits (runsnap/diffing/confidence.py), on real launches of a small real
program from two real shells (other terminals, thread counts, Slurm allocations, tuning
variables nobody reads here): the only difference the program took in is the cause; a second
input that differs undoes it; an error that quotes one option's value singles it out; and a
confident verdict says why beside the cause."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchmarks.diagnosis import diff, run_incident
from benchmarks.incidents import Incident, Launch, _write
from benchmarks.thirdparty import real_shell

PROGRAM = """
    import argparse, os, random, warnings

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--momentum", type=float, default=0.0)
        p.add_argument("--optim", default="sgd")
        p.add_argument("--log-every", type=int, default=10)
        p.add_argument("--warmup", type=int, default=0)
        p.add_argument("--output", default="")
        a = p.parse_args()
        if a.optim not in ("sgd", "adam"):
            raise ValueError(f"unknown optimizer {a.optim!r}")
        tag = os.environ.get("RUN_TAG", "")
        if os.environ.get("OLD_CACHE_DIR"):
            warnings.warn("OLD_CACHE_DIR is deprecated, please use CACHE_DIR instead")
        if os.environ.get("SLOW_CACHE"):
            warnings.warn("SLOW_CACHE is set: the cache is written through")
        rng = random.Random(0)
        w, v = 0.0, 0.0
        for step in range(50):
            grad = (w - 3.0) + 0.01 * rng.random()
            v = a.momentum * v + grad
            w -= (0.02 if step >= a.warmup else 0.01) * v
            if step % a.log_every == 0:
                print(f"{tag}step {step}")
        print(f"loss={(w - 3.0) ** 2:.5f}")
        if a.output:
            with open(a.output, "w") as out:
                out.write(f"{w}\\n")

    main()
    """


def _verdict(tmp: Path, good: tuple[str, ...], bad: tuple[str, ...],
             extra_b: dict[str, str] | None = None) -> dict[str, Any]:
    app = _write(tmp / "train.py", PROGRAM)
    incident = Incident("committing", "", Launch((sys.executable, str(app), *good),
                                                 real_shell(0, tmp), tmp),
                        Launch((sys.executable, str(app), *bad),
                               {**real_shell(1, tmp), **(extra_b or {})}, tmp), ())
    return diff(*run_incident(incident, tmp))


def test_a_reporting_option_or_an_output_destination_is_never_a_candidate(tmp_path: Path) -> None:
    """Beside --momentum, --log-every (how often the program prints) and --output (where each
    run wrote its result: out-a.txt, out-b.txt) differ too: neither is what the program
    computes with, so --momentum is still the only input that differs; both stay listed, with
    why they do not count."""
    report = _verdict(tmp_path, ("--momentum", "0.9", "--log-every", "10", "--output",
                                 str(tmp_path / "out-a.txt")),
                      ("--momentum", "0.0", "--log-every", "20", "--output",
                       str(tmp_path / "out-b.txt")))
    assert report["confidence"] == "confident", report["verdict"]
    assert report["candidates"] == ["command --momentum"]
    got = {d["key"]: d for d in report["differences"]}
    assert got["--log-every"]["score"] < 60 and "reporting option" in got["--log-every"]["reason"]
    assert got["--output"]["score"] < 60, got["--output"]
    assert "run A wrote out-a.txt there" in got["--output"]["reason"]


def test_the_only_input_that_differs_is_the_cause(tmp_path: Path) -> None:
    """Both runs exit 0 and the loss moves; of all differences only --momentum is one the
    program took in (the shells' other variables unread or read at start-up): confident, and
    it says so. One more input that differs (another option; a variable the program reads)
    leaves it undecided between them, the experiment named."""
    report = _verdict(tmp_path / "one", ("--momentum", "0.9"), ("--momentum", "0.0"))
    assert report["outcome"] == "different"
    assert report["confidence"] == "confident", report["verdict"]
    assert report["candidates"] == ["command --momentum"]
    assert report["because"].startswith("the only input that differs")
    assert report["because"] in report["verdict"]
    for good, bad, extra in (
            (("--momentum", "0.9", "--warmup", "0"), ("--momentum", "0.0", "--warmup", "5"),
             None),
            (("--momentum", "0.9"), ("--momentum", "0.0"), {"RUN_TAG": "b-"})):
        report = _verdict(tmp_path / f"two-{len(good)}", good, bad, extra)
        assert report["confidence"] == "undecided", report["verdict"]
        assert "command --momentum" in report["candidates"]
        assert len(report["candidates"]) == 2 and "runsnap bisect" in report["verdict"]
        assert not report.get("because")


def test_an_error_quoting_one_options_value_singles_it_out(tmp_path: Path) -> None:
    """B fails with an error that quotes --optim's value; --log-every differs too and nothing
    names it: the option whose value the error quotes is the cause, said beside it."""
    report = _verdict(tmp_path, ("--optim", "adam", "--log-every", "10"),
                      ("--optim", "radamw", "--log-every", "20"))
    assert report["confidence"] == "confident", report["verdict"]
    assert report["candidates"] == ["command --optim"]
    assert report["because"].startswith("the failing error quotes its value, no other input's")
    top = next(d for d in report["differences"] if not d["hidden"])
    assert (top["key"], top["evidence_kind"], top["quoted"]) == ("--optim", "failing-path", True)


def test_a_warning_one_run_printed_is_no_cause_beside_an_input(tmp_path: Path) -> None:
    """--momentum moves the loss; B's shell also sets a variable the program warns about (a
    warning printed by B only names it). A deprecation notice says the variable decided nothing
    but that line: --momentum is the only input that differs, confident. Another warning says
    the run took the variable in (read), not what it changed: undecided between the two. The
    variable a warning names is never the confident cause."""
    report = _verdict(tmp_path / "notice", ("--momentum", "0.9"), ("--momentum", "0.0"),
                      {"OLD_CACHE_DIR": str(tmp_path)})
    assert report["confidence"] == "confident", report["verdict"]
    assert report["candidates"] == ["command --momentum"]
    old = next(d for d in report["differences"] if d["key"] == "OLD_CACHE_DIR")
    assert old["evidence_kind"] == "incidental", old["reason"]
    report = _verdict(tmp_path / "other", ("--momentum", "0.9"), ("--momentum", "0.0"),
                      {"SLOW_CACHE": "1"})
    assert report["confidence"] == "undecided", report["verdict"]
    assert sorted(report["candidates"]) == ["command --momentum", "env SLOW_CACHE"]
    slow = next(d for d in report["differences"] if d["key"] == "SLOW_CACHE")
    assert slow["evidence_kind"] == "read", slow["reason"]


BOOTSTRAP = """
    import argparse, os, subprocess, sys

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--log-every", type=int, default=10)
        p.parse_args()
        # the communicator's bootstrap runs natively (a helper process here, handed the whole
        # environment): no Python read of the variable to trace
        probe = 'case "$NCCL_SOCKET_IFNAME" in ib*) exit 3;; esac'
        if subprocess.run(["sh", "-c", probe], env=dict(os.environ)).returncode:
            print("host:1:1 [0] NCCL WARN Bootstrap : no socket interface found", file=sys.stderr)
            raise RuntimeError("NCCL error: invalid usage")
        print("ok")

    main()
    """


def test_an_engines_own_message_singles_out_the_setting_it_names(tmp_path: Path) -> None:
    """B fails with NCCL's own bootstrap message (engine-messages.tsv backs NCCL_SOCKET_IFNAME),
    and --log-every differs too, which nothing names: the setting the engine's message is about
    is the cause, said beside it."""
    app = _write(tmp_path / "job.py", BOOTSTRAP)

    def verdict(folder: str, extra_b: dict[str, str]) -> dict[str, Any]:
        d = tmp_path / folder
        d.mkdir()
        incident = Incident("engine", "", Launch((sys.executable, str(app), "--log-every", "10"),
                                                 {**real_shell(0, d), "NCCL_SOCKET_IFNAME": "eth0"},
                                                 d),
                            Launch((sys.executable, str(app), "--log-every", "20"),
                                   {**real_shell(1, d), "NCCL_SOCKET_IFNAME": "ib0", **extra_b},
                                   d), ())
        return diff(*run_incident(incident, d))

    report = verdict("one", {})
    assert report["confidence"] == "confident", report["verdict"]
    assert report["candidates"] == ["env NCCL_SOCKET_IFNAME"]
    assert report["because"].startswith("the failing run's words back it")
    top = next(d for d in report["differences"] if not d["hidden"])
    assert (top["evidence_kind"], top["corroborated"]) == ("named", True)
    assert "NCCL's own message" in top["reason"] or "nccl" in top["reason"].lower()
