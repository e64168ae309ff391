"""``runsnap show``: a readable summary of one snapshot (its facts, :mod:`runsnap.views.facts`, key
facts first, then each section with its counts), one section in full, or the snapshot as JSON or
Markdown."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from runsnap.base.terminal import clean, fit, neutralise_data, neutralise_json, wrap
from runsnap.errors import UsageError
from runsnap.render.hostsummary import render_markdown, render_text
from runsnap.render.style import fence, md_text
from runsnap.snapshot import Snapshot, encode, ordered_sections
from runsnap.snapshot.records import Distribution, GitRepo, Outcome, Runtime
from runsnap.snapshot.records_host import VariableRead
from runsnap.snapshot.runtime import variables as runtime_variables
from runsnap.snapshot.writer import table_chunks
from runsnap.views.facts import Facts, facts

__all__ = ["FORMATS", "SECTIONS", "page", "render", "render_section", "render_summary", "size",
           "status_line", "summary_lines"]

#: ``show --format`` names.
FORMATS = ("text", "json", "markdown", "html")

def size(n: int) -> str:
    """Bytes for humans.

    >>> size(0), size(1536), size(3 * 1024**3)
    ('0 B', '1.5 KiB', '3.0 GiB')
    """
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def render_summary(snap: Snapshot, width: int = 0, with_environment: bool = True,
                   every_read: bool = False) -> str:
    """The text ``runsnap show`` prints; lines longer than ``width`` (0: no limit) are cut,
    and a value's control characters are shown escaped. The facts come from
    :func:`runsnap.views.facts.facts`; ``every_read`` (``show --all``): every variable the run
    read, those read while unset too (else counted on one line)."""

    # every value escaped before it is laid out, so a newline inside one cannot fake a line
    snap = snap.replace(meta=neutralise_data(dict(snap.meta)),
                        sections=neutralise_data(dict(snap.sections)))

    out: list[str] = []
    for line in "\n".join(summary_lines(facts(snap), with_environment, every_read)).split("\n"):
        line = clean(line)
        if line.startswith("  first error ("):  # the line that matters most: never cut
            parts = wrap(line[2:], width - 2 if width else 0, "  ")
            out += [f"  {part}" for part in parts]
        else:
            out.append(fit(line, width))
    return "".join(line + "\n" for line in out)


def summary_lines(f: Facts, with_environment: bool = True, every_read: bool = False
                  ) -> list[str]:
    """The summary of a snapshot's facts, line by line (not yet fitted to a terminal): one block
    a section, in :data:`BLOCKS`' order, a blank line between them; the environment in
    collect_env's order follows the system block unless ``with_environment`` is false;
    ``every_read``: the runtime block lists the variables read while unset too."""
    lines = _head(f)
    for block in BLOCKS:
        if block is _environment_block and not with_environment:
            continue
        got = runtime_lines(f.runtime, every_read) if block is _runtime_block and f.runtime \
            else block(f)
        if got:
            lines += ["", *got]
    return lines


def _head(f: Facts) -> list[str]:
    title = f"runsnap snapshot {f.id[:12]}" + (f"  [{f.label}]" if f.label else "")
    lines = [title, f"  captured  {f.captured_at} on {f.host} (runsnap {f.runsnap_version}, "
                    f"schema {f.schema})"]
    if f.path:
        lines.append(f"  file      {f.path}")
    return lines


def _command_block(f: Facts) -> list[str]:
    lines = ["command", f"  $ {shlex.join(f.argv)}" if f.argv else
             "  (no command: the current context)", f"  cwd        {f.cwd}"]
    if f.argv:
        exe = f.executable or "(not found)"
        real = f.executable_real
        lines.append(f"  executable {exe}" + (f" -> {real}" if real and real != exe else ""))
    if f.option_count:
        lines.append(f"  options    {f.option_count} long options parsed")
    return lines


def _outcome_block(f: Facts) -> list[str]:
    outcome = f.outcome
    if not outcome:
        return ["outcome", "  none recorded: the launch never reported back (runsnap was "
                           "killed, or still runs)"] if f.outcome_missing else []
    lines = ["outcome", f"  {status_line(outcome)}"]
    if outcome.peak_rss_bytes:
        lines.append(f"  peak memory of the process tree: {size(outcome.peak_rss_bytes)}")
    if outcome.first_error:
        lines.append(f"  first error ({_or(outcome.first_error_stream)}): {outcome.first_error}")
    warnings = outcome.warnings
    if warnings:
        lines.append(f"  warnings ({_or(outcome.warnings_count, len(warnings))}):")
        lines.extend(f"    {w}" for w in warnings[:5])
        if len(warnings) > 5:
            lines.append(f"    ... and {len(warnings) - 5} more")
    log = outcome.log
    if log:
        lines.append(f"  log {log.path} ({size(_or(log.bytes, 0))}, "
                     f"sha256 {str(_or(log.sha256, ''))[:12]})")
    return lines


def _or(found: Any, what: Any = "?") -> Any:
    """A field as written, ``what`` when it was not (``mapping.get(key, what)``)."""
    return what if found is None else found


def _runtime_block(f: Facts) -> list[str]:
    return runtime_lines(f.runtime) if f.runtime else []


def _process_block(f: Facts) -> list[str]:
    process = f.process
    if not process:
        return []
    lines = ["process (snapshotted while running)",
             f"  pid {process.pid} ({_or(process.name)}), user {_or(process.user)}, started "
             f"{_or(process.started_at)}, {_or(process.status)}",
             f"  exe {_or(process.exe)}"]
    if process.children:
        lines.append(f"  {len(process.children)} child processes")
    count = len(process.libraries)
    notable = ", ".join(f.notable_libraries)
    lines.append(f"  {count} shared libraries mapped" + (f": {notable}" if notable else ""))
    return lines


#: Tests of a session ``show`` names among those that did not pass (the rest are counted).
MAX_TESTS_SHOWN = 10


def _tests_block(f: Facts) -> list[str]:
    """A pytest session's tests: the counts, then those that failed or errored, with their
    first error line."""
    tests = f.tests
    if not tests:
        return []
    counts = tests.counts
    lines = ["tests", f"  {sum(int(n) for n in counts.values())} by {_or(tests.runner)}: "
                      + ", ".join(f"{n} {k}" for k, n in counts.items())]
    bad = [(n, c) for n, c in tests.cases.items() if c.outcome in ("failed", "error")]
    for nodeid, case in bad[:MAX_TESTS_SHOWN]:
        lines.append(f"  {case.outcome} {nodeid}: {_or(case.error, '')}")
    if len(bad) > MAX_TESTS_SHOWN:
        lines.append(f"  ... and {len(bad) - MAX_TESTS_SHOWN} more (show --section tests)")
    return lines


def _git_block(f: Facts) -> list[str]:
    lines = ["git"] + ([] if f.repos else ["  no repository"])
    for name, repo in f.repos.items():
        lines += _repo_lines(name, repo)
    lines.extend(f"  {path}: not a git repository" for path in f.not_repositories)
    return lines


def _repo_lines(name: str, repo: GitRepo) -> list[str]:
    commit = (repo.commit or "")[:12] or "(no commit)"
    state = "dirty" if repo.dirty else "clean"
    branch = repo.branch or ("detached HEAD" if repo.detached else "")
    lines = [f"  {name}: {commit} {branch} {state} ({', '.join(repo.roles)})".rstrip()]
    changed, untracked = len(repo.changed), repo.untracked_count or 0
    if changed or untracked:
        diff_note = f", diff {size(repo.diff_bytes or 0)}"
        if repo.diff_truncated:
            diff_note += " (truncated)"
        lines.append(f"    {changed} changed, {untracked} untracked{diff_note}")
    flags = (("bare", repo.bare), ("shallow", repo.shallow), ("unborn", repo.unborn))
    lines.extend(f"    {flag} repository" for flag, holds in flags if holds)
    return lines


def _packages_block(f: Facts) -> list[str]:
    lines = ["packages",
             f"  {f.package_count} distributions for {f.interpreter} (Python {f.python_version})",
             f"  chosen because: {f.interpreter_reason}"]
    if f.editable:
        lines.append(f"  editable: {', '.join(f.editable)}")
    if f.stack_versions:
        lines.append("  " + ", ".join(f"{n} {v}" for n, v in f.stack_versions))
    if f.shadowed:
        lines.append(f"  {f.shadowed} shadowed by an earlier copy on sys.path")
    return lines


def _models_block(f: Facts) -> list[str]:
    lines = ["models"] + ([] if f.models else ["  none in play"])
    for m in f.models:
        lines.append(f"  {m.source}: {m.path}")
        lines.append(f"    {m.architecture}"
                     + (f", max_position_embeddings {m.max_positions}" if m.max_positions else "")
                     + f", {m.weights_count} weight files ({size(m.weights_bytes)})")
        if m.revision:
            lines.append(f"    {m.repo_id} @ {m.revision[:12]}")
    return lines


def _system_block(f: Facts) -> list[str]:
    system = f.system
    cpu, mem, gpu = system.cpu, system.memory, system.gpu
    lines = ["system",
             f"  {_or(system.host)}: {_or(system.os)}, kernel {_or(system.kernel)}, "
             f"{_or(system.machine, '')}",
             f"  {_or(cpu.model)}, {_or(cpu.logical)} CPUs, {size(_or(mem.total_bytes, 0))} memory"]
    if gpu.available:
        inferred = " (from the driver branch)" if gpu.cuda_version_from and gpu.cuda_version else ""
        lines.append(f"  {gpu.count} x {', '.join(f.gpu_names)}; driver "
                     f"{gpu.driver_version}, CUDA {gpu.cuda_version or 'unknown'}{inferred}")
    else:
        lines.append(f"  no GPU ({_or(gpu.reason, 'unknown')})")
    if gpu.source:  # read from the driver's files: say so, and why
        why = gpu.nvidia_smi_error or "nvidia-smi failed"
        note = f"; {gpu.count_note}" if gpu.count_note else ""
        lines.append(f"  GPUs read from {gpu.source} ({why}){note}")
    return lines


def _environment_block(f: Facts) -> list[str]:
    if not f.environment:
        return []
    return ["environment (in torch.utils.collect_env's order)", *render_text(f.environment)]


def _env_block(f: Facts) -> list[str]:
    lines = ["env", f"  {f.variable_count} variables, {f.secret_count} secrets replaced by "
                    "fingerprints"]
    lines.extend(f"  {k}={v}" for k, v in f.notable_env[:40])
    if len(f.notable_env) > 40:
        lines.append(f"  ... and {len(f.notable_env) - 40} more of these families")
    return lines


def _errors_block(f: Facts) -> list[str]:
    if not f.errors:
        return ["errors: none"]
    return [f"errors ({len(f.errors)})", *(f"  [{name}] {e}" for name, e in f.errors)]


#: The blocks of :func:`summary_lines` after its head, in order; an empty block is left out.
#: What a person reads first leads (what ran and how it ended, the code, the packages, the
#: models, the notable variables); what the run read, the host and collect_env's long list
#: follow, and the errors close it, where the end of a terminal's scroll shows them.
BLOCKS: tuple[Callable[[Facts], list[str]], ...] = (
    _command_block, _outcome_block, _tests_block, _process_block, _git_block, _packages_block,
    _models_block, _env_block, _runtime_block, _system_block, _environment_block,
    _errors_block)


#: Variables and read sites ``show`` lists from ``[runtime]`` (the rest are counted).
MAX_READ_SHOWN = 30
MAX_SITES_SHOWN = 2


def runtime_lines(runtime: Runtime, every_read: bool = False) -> list[str]:
    """The ``runtime`` part of ``show``: variables read (with where), then modules imported
    from somewhere other than site-packages (a source checkout on ``PYTHONPATH``, the cwd).
    The variables read while unset (a library probing its settings: often dozens of
    ``AOT_INDUCTOR_*``) are one counted line unless ``every_read`` (then each is listed, and
    no list is capped)."""
    if not runtime.traced:
        return ["runtime", f"  not traced: {_or(runtime.reason, 'unknown')}"]
    native = str(_or(runtime.native, ""))
    out = ["runtime", f"  traced: {len(runtime.processes)} Python process(es); native reads "
                      f"{'observed' if native.startswith('observed') else native}"]
    # schema 1's records of the reads, from either schema's form (runsnap.snapshot.runtime)
    env = {n: VariableRead(e) for n, e in runtime_variables(runtime.raw).items()
           if isinstance(e, Mapping)}
    read = [n for n, e in env.items() if e.reads]
    native_only = [n for n, e in env.items() if not e.reads and e.native]
    bulk = [n for n, e in env.items() if e.bulk]
    unset = [n for n in read if not env[n].set]
    out.append(f"  {len(read)} variables read from Python ({len(unset)} unset: the default "
               f"taken), {len(native_only)} only natively, {len(bulk)} only in whole-"
               f"environment copies")
    shown = read if every_read else [n for n in read if env[n].set]
    cap = len(shown) if every_read else MAX_READ_SHOWN
    for name in shown[:cap]:
        e = env[name]
        value = f"={_or(e.value, '')}" if e.set else " (unset)"
        out.append(f"    {name}{value}  {e.reads} read(s)")
        for site in e.sites[:MAX_SITES_SHOWN]:
            stack = site.stack
            if stack:
                out.append(f"      at {' <- '.join(str(f) for f in stack[:3])}")
    if len(shown) > cap:
        out.append(f"    ... and {len(shown) - cap} more set (show --all lists them)")
    if unset and not every_read:
        out.append(f"    {len(unset)} read while unset, the default taken (show --all lists "
                   f"them)")
    modules = runtime.modules
    elsewhere = {n: m for n, m in modules.items() if m.origin != "site-packages"}
    out.append(f"  {len(modules)} packages imported, {len(elsewhere)} from outside "
               f"site-packages" + (":" if elsewhere else ""))
    for name, mod in elsewhere.items():
        dist = f" ({mod.dist} {_or(mod.version, '')})" if mod.dist else ""
        out.append(f"    {name}  {mod.origin}  {mod.file}{dist}")
    return out


def status_line(outcome: Outcome) -> str:
    """How the run ended, in one line.

    >>> status_line(Outcome({"status": "signalled", "signal": "SIGKILL", "exit_status": 137,
    ...                      "duration_s": 1.5}))
    'killed by SIGKILL (exit status 137) after 1.5 s'
    """
    status = outcome.status
    code = _or(outcome.exit_status)
    if status == "signalled":
        text = f"killed by {_or(outcome.signal)} (exit status {code})"
    elif status in ("not_found", "not_executable", "failed"):
        text = f"did not start: {_or(outcome.error, status)} (exit status {code})"
    else:
        text = f"exit status {code}"
    if outcome.duration_s is not None:
        text += f" after {outcome.duration_s} s"
    return text


#: ``show --section`` names: every section a snapshot may hold.
SECTIONS = ("meta", "command", "env", "git", "packages", "models", "system", "outcome",
            "process", "runtime", "tests")


def render_section(snap: Snapshot, name: str, width: int = 0) -> str:
    """One section in full: ``packages`` lists every distribution (name, version, where),
    ``env`` every variable (``NAME=value``); any other section (and ``meta``) as TOML, as the
    snapshot writer writes it. ``width``: a terminal's, each line cut to it (0: whole lines,
    for a pipe or ``--all``)."""

    if name == "meta":
        data: Mapping[str, Any] = snap.meta
    elif name in snap.sections:
        data = snap.sections[name]
    else:
        have = ", ".join(["meta", *ordered_sections(snap.sections)])
        raise UsageError(f"--section {name}: this snapshot has no such section ({have})")
    lines: list[str] = []
    if name == "packages":
        pk = snap.records.packages
        lines.append(f"{_or(pk.count, 0)} distributions for {_or(pk.interpreter)} "
                     f"(Python {_or(pk.python_version)})")
        rows = [(n, str(_or(d.version, "")), _where(d)) for n, d in sorted(
            pk.distributions.items(), key=lambda kv: kv[0].lower())]
        wide = max((len(r[0]) for r in rows), default=0)
        wver = max((len(r[1]) for r in rows), default=0)
        lines += [f"{n:<{wide}}  {v:<{wver}}  {w}".rstrip() for n, v, w in rows]
        for d in pk.shadowed:
            lines.append(f"{d.name}  {_or(d.version, '')}  shadowed: {_or(d.location, '')}")
        lines += [f"error: {e}" for e in pk.errors]
    elif name == "env":
        env = snap.records.env
        lines += [f"{k}={v}" for k, v in sorted(env.vars.items())]
        lines += [f"error: {e}" for e in env.errors]
    else:
        lines += "".join(table_chunks(encode({name: dict(data)}), "")).splitlines()
    return "".join(fit(clean(line), width) + "\n" for line in lines)


def _where(d: Distribution) -> str:
    if d.editable:
        return f"editable: {d.source or _or(d.location, '')}"
    return str(_or(d.location, ""))


def render(snap: Snapshot, fmt: str = "text", width: int = 0, every_read: bool = False) -> str:
    """``runsnap show`` in ``fmt``: ``text`` (:func:`render_summary`; ``every_read``: see
    there), ``json`` (the whole snapshot as one JSON object) or ``markdown`` (the summary, and
    each section folded in ``<details>``, to paste into an issue)."""

    if fmt == "json":
        return neutralise_json(
            json.dumps(snap.to_document(), indent=2, ensure_ascii=False, default=str) + "\n")
    if fmt == "markdown":
        return _markdown(snap)  # escapes each value for Markdown itself (its own rules)
    if fmt == "text":
        return render_summary(snap, width, every_read=every_read)
    if fmt == "html":
        return page(render_summary(snap), [(name, render_section(snap, name))
                                           for name in ordered_sections(snap.sections)])

    raise UsageError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")


def page(summary: str, sections: list[tuple[str, str]]) -> str:
    """One self-contained HTML page of a snapshot: ``summary`` first, then each (name, text)
    of ``sections`` folded."""
    # deferred: the page renderer, only --format html needs it
    from runsnap.render.html_docs import render_show

    return render_show(summary, sections)


#: GitHub's limit on an issue or comment body: ``show --format markdown`` fits it.
MD_LIMIT = 65536


def _markdown(snap: Snapshot, limit: int = MD_LIMIT) -> str:
    """The summary, the collect_env facts, then each section folded in ``<details>``; within
    ``limit`` characters: the largest section is shortened first (halved, again and again),
    saying how many lines were left out and where they are in full."""
    summary = render_summary(snap, with_environment=False).splitlines()
    title = summary[0] if summary else "runsnap snapshot"
    body = summary[1:]
    lines = [f"### {md_text(title)}", "", *fence(body), ""]
    # the facts maintainers ask for, as tables in collect_env's order
    lines.append(render_markdown(facts(snap).environment, "Environment (as "
                                 "torch.utils.collect_env reports it)", level=4).rstrip("\n"))
    sections: list[tuple[str, list[str], int]] = []
    for name in ordered_sections(snap.sections):
        text = render_section(snap, name).rstrip("\n").splitlines()
        if text:
            sections.append((name, text, len(text)))

    def layout() -> str:
        out = list(lines)
        for name, text, total in sections:
            left = total - len(text)
            more = [f"... {left} more lines: `runsnap show --section {name}` or `--format "
                    "json` has them"] if left else []
            out += ["", f"<details><summary>{name} ({total} lines)</summary>", "",
                    *fence([*text, *more]), "", "</details>"]
        return "\n".join(out) + "\n"

    result = layout()
    while len(result) > limit:
        i = max(range(len(sections)), key=lambda j: sum(len(x) for x in sections[j][1]),
                default=None)
        if i is None or not sections[i][1]:
            return result[: limit - 40].rsplit("\n", 1)[0] + "\n\n(cut here to fit)\n"
        name, text, total = sections[i]
        sections[i] = (name, text[: len(text) // 2], total)
        result = layout()
    return result
