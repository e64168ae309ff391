"""Measure commands side by side: interleaved rounds, medians, spreads, peak memory, ratios.

A :class:`Case` is a name, a builder that returns the commands to compare (the subject first,
then its peers or floor), and a function that turns the measurements into target checks. Every
command of a case runs once per round, in a rotating order, so they share the machine's noise;
ratios are taken between medians of the same run.

Each run is timed from just before the process is started to the moment it has been reaped;
its CPU time (user + system, of the process and every child it waited for) comes from
``os.wait4`` and is far less disturbed by other work on the machine than the wall time.
Peak resident memory comes from one more, untimed run under GNU ``time`` (``%M``: the largest
of the process and the children it waited for).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


class Skip(Exception):
    """Raised by a case builder when the case cannot run here (``str(exc)`` says why)."""


@dataclass
class Command:
    """One thing to time. ``steps`` (several argvs run one after another) make a composite floor."""

    label: str
    argv: Sequence[str] = ()
    steps: Sequence[Sequence[str]] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    ok: tuple[int, ...] = (0,)
    """Exit statuses that count as success (``runsnap diff`` exits 1 when snapshots differ)."""
    before: Callable[[], None] | None = None
    """Untimed, before each run (e.g. remove a marker file)."""
    after: Callable[[float], dict[str, float]] | None = None
    """Untimed, after each run, given the wall-clock launch time; returns extra metrics."""

    def all_steps(self) -> list[Sequence[str]]:
        return list(self.steps) if self.steps else [self.argv]


@dataclass
class Measured:
    """The samples of one command."""

    command: Command
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    """User + system CPU time of the process and every child it waited for."""
    rss_kib: list[int] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    def spread_ms(self) -> tuple[float, float]:
        """The interquartile range (min and max when there are fewer than four samples)."""
        ms = sorted(s * 1000 for s in self.seconds)
        if len(ms) < 4:
            return ms[0], ms[-1]
        q = statistics.quantiles(ms, n=4)
        return q[0], q[2]

    @property
    def cpu_ms(self) -> float:
        return statistics.median(self.cpu_seconds) * 1000

    @property
    def peak_mib(self) -> float | None:
        return max(self.rss_kib) / 1024 if self.rss_kib else None

    def extra_median(self, name: str) -> float | None:
        vals = self.extra.get(name)
        return statistics.median(vals) if vals else None


@dataclass
class Check:
    """One target of the issue, as measured."""

    what: str
    value: float
    unit: str
    target: float | None
    """None: a figure reported for scale, with no target."""
    met: bool | None = None

    def __post_init__(self) -> None:
        if self.met is None and self.target is not None:
            self.met = self.value <= self.target

    def line(self) -> str:
        if self.target is None:
            return f"{self.what}: {self.value:.2f}{self.unit} (no target; for scale)"
        verdict = "met" if self.met else "NOT met"
        gap = "" if self.met else f" (gap: {self.value - self.target:+.2f}{self.unit})"
        return (f"{self.what}: {self.value:.2f}{self.unit} (target <= {self.target:g}{self.unit})"
                f" - {verdict}{gap}")


@dataclass
class Case:
    """A benchmark case: the subject and its peers, measured in the same run."""

    key: str
    title: str
    build: Callable[[Any], list[Command]]
    """Given the bench context, the commands (subject first); raise :class:`Skip` to skip."""
    checks: Callable[[dict[str, Measured]], list[Check]] = lambda m: []
    repeat: Callable[[int], int] = lambda n: n
    """The number of rounds, given the run's ``--repeat`` (slow cases run fewer)."""
    notes: Callable[[dict[str, Measured]], list[str]] = lambda m: []


@dataclass
class CaseResult:
    case: Case
    measured: dict[str, Measured] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    failed: str = ""


class CommandFailed(Exception):
    pass


#: GNU time, used only for peak memory: a child's ``ru_maxrss`` counts the memory of the process
#: that forked it (the high-water mark survives ``exec``), so the harness's own 40 MiB would show
#: under every command; the child of a small C program does not carry that floor.
GNU_TIME = shutil.which("time", path="/usr/bin:/bin")


def _run(argv: Sequence[str], cmd: Command) -> tuple[float, float]:
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cmd.cwd, env=cmd.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in cmd.ok:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace").strip().splitlines()[-3:]
            raise CommandFailed(f"{cmd.label}: {' '.join(argv[:4])} ... exited "
                                f"{proc.returncode}: {' | '.join(tail)}")
    return seconds, usage.ru_utime + usage.ru_stime


def run_once(cmd: Command) -> tuple[float, float, float]:
    """Run ``cmd`` once, timed: (seconds, CPU seconds, wall-clock launch time)."""
    if cmd.before:
        cmd.before()
    launched = time.time()
    runs = [_run(argv, cmd) for argv in cmd.all_steps()]
    return sum(r[0] for r in runs), sum(r[1] for r in runs), launched


def peak_rss_kib(cmd: Command) -> int | None:
    """Peak resident memory of ``cmd`` (its largest step), from one untimed run under GNU time."""
    if GNU_TIME is None:
        return None
    peak = 0
    for argv in cmd.all_steps():
        if cmd.before:
            cmd.before()
        with tempfile.NamedTemporaryFile("r") as out:
            _run([GNU_TIME, "-q", "-f", "%M", "-o", out.name, *argv], cmd)
            text = out.read().strip().splitlines()
        peak = max(peak, int(text[-1]) if text and text[-1].isdigit() else 0)
    return peak


def measure(commands: list[Command], rounds: int, warmup: int = 1,
            progress: Callable[[str], None] | None = None) -> dict[str, Measured]:
    """Run every command ``warmup + rounds`` times, interleaved; keep the last ``rounds``."""
    out = {c.label: Measured(c) for c in commands}
    for r in range(warmup + rounds):
        k = r % len(commands)
        for cmd in commands[k:] + commands[:k]:  # rotate: nobody always runs first
            seconds, cpu, launched = run_once(cmd)
            extra = cmd.after(launched) if cmd.after else {}
            if r < warmup:
                continue
            m = out[cmd.label]
            m.seconds.append(seconds)
            m.cpu_seconds.append(cpu)
            for name, value in extra.items():
                m.extra.setdefault(name, []).append(value)
        if progress:
            progress(f"  round {r + 1}/{warmup + rounds}")
    for m in out.values():
        rss = peak_rss_kib(m.command)
        if rss is not None:
            m.rss_kib.append(rss)
    return out


def run_case(case: Case, bench: Any, rounds: int,
             progress: Callable[[str], None] | None = None) -> CaseResult:
    result = CaseResult(case)
    try:
        commands = case.build(bench)
    except Skip as exc:
        result.skipped = str(exc)
        return result
    try:
        result.measured = measure(commands, case.repeat(rounds), progress=progress)
    except CommandFailed as exc:
        result.failed = str(exc)
        return result
    result.checks = case.checks(result.measured)
    result.notes = case.notes(result.measured)
    return result


# --------------------------------------------------------------------------- report


def render(results: list[CaseResult]) -> str:
    """The results as Markdown: one table per case, then its checks."""
    lines: list[str] = []
    for res in results:
        lines.append(f"### {res.case.key}. {res.case.title}")
        lines.append("")
        if res.skipped:
            lines += [f"skipped: {res.skipped}", ""]
            continue
        if res.failed:
            lines += [f"FAILED: {res.failed}", ""]
            continue
        subject = next(iter(res.measured.values()))
        n = len(subject.seconds)
        lines.append(f"| command | median ms | IQR ms (n={n}) | CPU ms | peak RSS MiB | "
                     "subject / this |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
        for m in res.measured.values():
            lo, hi = m.spread_ms()
            ratio = subject.median_ms / m.median_ms if m.median_ms else float("nan")
            rss = "n/a" if m.peak_mib is None else f"{m.peak_mib:.1f}"
            lines.append(f"| {m.command.label} | {m.median_ms:.1f} | {lo:.1f}-{hi:.1f} | "
                         f"{m.cpu_ms:.0f} | {rss} | {ratio:.2f}x |")
        lines.append("")
        for c in res.checks:
            lines.append(f"- {c.line()}")
        for note in res.notes:
            lines.append(f"- {note}")
        if res.checks or res.notes:
            lines.append("")
    return "\n".join(lines)
