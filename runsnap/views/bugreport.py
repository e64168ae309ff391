"""``runsnap report``: what a maintainer asks for first, from one or two snapshots, as parts that
a renderer lays out and trims to a size budget (:mod:`runsnap.render.bugreport`).

Every snapshot is passed through today's secret rules again first
(:func:`runsnap.redact.scrub.scrub_snapshot`), so a snapshot written by an older runsnap, or by
someone else, reaches the report scrubbed like a new one; the renderers then make every value
safe for Markdown and terminals. Each part has a priority: the budget trims the least important
first (the full package list, the git diff, the output tail...), a part with a shorter form is
shortened before it is dropped, and the report says what went and how to get it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.checks import rules as checks
from runsnap.diffing import compare
from runsnap.knowledge.env import family_of, family_owners, noise_reason
from runsnap.knowledge.models import config_field_reason
from runsnap.knowledge.packages import is_core_package, normalize_name, stack_packages
from runsnap.redact import Redactor, load_policy
from runsnap.redact.fingerprint import load_key
from runsnap.redact.scrub import scrub_snapshot
from runsnap.snapshot import Snapshot, atomic_write, dumps
from runsnap.snapshot.records import Distribution
from runsnap.snapshot.records_host import VariableRead
from runsnap.snapshot.runtime import variables as runtime_variables
from runsnap.views.report_blocks import Block, Part, ReportDoc, code, details, items, para, table
from runsnap.views.report_title import status_words, title_of

__all__ = ["Block", "Part", "ReportDoc", "attach", "build"]


#: Traceback frames shown, innermost last.
FRAMES = 8
#: Warnings listed.
WARNINGS = 20
#: Variables listed before the rest fold away.
VARIABLES = 40
#: An output line longer than this is cut (a capture keeps 4,096 bytes of a line).
LINE_CHARS = 4096


def build(snaps: Sequence[Snapshot]) -> ReportDoc:
    """The report of one snapshot, or of two (A the reference, B the run reported) with the
    ranked diff between them. The snapshots are scrubbed again with today's rules first."""

    clean = [scrub_snapshot(s, Redactor(load_key(), load_policy(None))) for s in snaps]
    main = clean[-1]
    parts: list[Part] = [_command(main), _outcome(main)]
    if len(clean) == 2:
        parts.append(_diff(clean[0], main))
    parts += [_facts(main), _variables(main), _git(main), _models(main), _packages(main)]
    if len(clean) == 2:
        parts.append(_outcome(clean[0], key="outcome-a", title="Outcome of A (the reference)",
                              priority=6))
    title = title_of(main)
    return ReportDoc(title, tuple(p for p in parts if p.blocks), tuple(
        s.path_text or "" for s in snaps), tuple(_name(s) for s in snaps), _scrub_note(clean),
        tuple(clean))


def attach(doc: ReportDoc, folder: str) -> list[str]:
    """Write each scrubbed snapshot into ``folder`` as ``runsnap-<name>-<id>.txt`` (GitHub takes
    .txt attachments, not .toml); return the file names."""


    os.makedirs(folder, exist_ok=True)
    names = []
    for name, snap in zip(doc.names, doc.snapshots, strict=False):
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:40] or "snapshot"
        file = f"runsnap-{safe}-{snap.id[:8]}.txt"
        atomic_write(os.path.join(folder, file), dumps(snap).encode("utf-8"))
        names.append(file)
    return names


def _name(s: Snapshot) -> str:
    return s.label or (s.path_text or s.id).rsplit("/", 1)[-1]


def _or(found: Any, what: Any = "?") -> Any:
    """A field as written, ``what`` when it was not (``mapping.get(key, what)``)."""
    return what if found is None else found


def _command(s: Snapshot) -> Part:
    c, meta = s.records.command, s.records.meta
    argv = [str(a) for a in c.argv]
    rows: list[tuple[str, Any]] = [("working directory", c.cwd),
                                   ("label", s.label or None),
                                   ("captured", f"{_or(meta.captured_at, '')} on "
                                                f"{_or(meta.host, '')}"),
                                   ("runsnap", meta.runsnap_version)]
    launcher = meta.launcher
    if meta.has("launcher"):
        rows.append(("launcher", f"{launcher.name}: rank {_or(launcher.rank)} of "
                                 f"{_or(launcher.world_size)}, job {_or(launcher.job)}"))
    blocks = [code([shlex.join(argv) if argv else "(no command: the context alone)"]),
              table(("", ""), [(k, v) for k, v in rows if v], code=(1,))]
    return Part("command", "Command", tuple(blocks), 0)


def _outcome(s: Snapshot, key: str = "outcome", title: str = "Outcome", priority: int = 0
             ) -> Part:
    o = s.records.outcome
    if not o:
        return Part(key, title, (para("Not run: this snapshot records the context only."),),
                    priority)
    head = status_words(o) + (f" after {o.duration_s} s" if o.has("duration_s") else "")
    if o.peak_rss_bytes:
        head += f", peak memory {int(o.peak_rss_bytes) / 2**20:.0f} MiB"
    blocks: list[Block] = [para(head[:1].upper() + head[1:] + ".")]
    first = str(o.first_error or "")
    tb = o.traceback if o.has("traceback") else None
    if first:
        blocks += [para("First error (in full):"), code(first.splitlines() or [first])]
    if tb:
        frames = tb.frames
        lines = [f"... {len(frames) - FRAMES} frames above"] if len(frames) > FRAMES else []
        for f in frames[-FRAMES:]:
            lines.append(f'File "{f.file}", line {f.line}, in {f.function}')
            if f.code:
                lines.append(f"    {f.code}")
        lines.append(f"{tb.type}: {tb.message}")
        blocks += [para(f"Traceback, last {min(len(frames), FRAMES)} frames:"), code(lines)]
    warnings = [str(w) for w in o.warnings]
    if warnings:
        count = int(o.warnings_count or len(warnings))
        shown = list(dict.fromkeys(warnings))[:WARNINGS]
        blocks += [para(f"Warnings ({count}):"), items(shown)]
    tails = []
    for stream, t in (("stderr", o.stderr), ("stdout", o.stdout)):
        if t.tail:
            tails.append(details(f"Last {len(t.tail)} lines of {stream}",
                                 [code([_bounded(str(x)) for x in t.tail])]))
    how = "`runsnap show SNAPSHOT --section outcome`"
    if not tails:
        return Part(key, title, tuple(blocks), priority, how=how)
    return Part(key, title, tuple(blocks + tails), max(priority, 5), how=how,
                shorter=Part(key, title, tuple(blocks), priority, how=how))


def _bounded(line: str) -> str:
    """An output line as a report shows it: cut at :data:`LINE_CHARS` characters, saying how
    many more it had (a report fits in 65,536 characters: a longer line is never shown whole,
    and rendering all of it held copies of a 10 MB line). A placeholder the cut would split is
    left out whole.

    >>> _bounded("ok"), _bounded("x" * 5000)[-30:]
    ('ok', 'xxxx ... (904 more characters)')
    """
    if len(line) <= LINE_CHARS:
        return line
    head = line[:LINE_CHARS]
    cut = head.rfind("<redacted:", LINE_CHARS - 64)
    if cut >= 0 and ">" not in head[cut:]:
        head = head[:cut]
    return f"{head} ... ({len(line) - len(head):,} more characters)"


def _dists(s: Snapshot) -> dict[str, Distribution]:
    return {normalize_name(k): v for k, v in s.records.packages.distributions.items()}


def _facts(s: Snapshot) -> Part:
    sysm, pk = s.records.system, s.records.packages
    gpu, cpu = sysm.gpu, sysm.cpu
    dists = _dists(s)
    mem = sysm.memory.total_bytes
    devices = gpu.devices or ()
    names = list(dict.fromkeys(str(d.name) for d in devices))
    gpus = (f"{len(devices)} x {', '.join(names)}" if devices else
            f"none ({_or(gpu.reason, 'not seen')})")
    memory_mib = devices[0].memory_mib if devices else None
    if memory_mib:
        gpus += f", {memory_mib} MiB each"
    nccl = next((f"{v.version} ({n})" for n, v in dists.items() if n.startswith("nvidia-nccl")),
                None)
    cuda_rt = next((f"{v.version} ({n})" for n, v in dists.items()
                    if n.startswith("nvidia-cuda-runtime")), None)
    rows = [
        ("Python", f"{_or(pk.python_version)} {_or(pk.implementation, '')} ({_or(pk.interpreter)})"),
        ("OS", f"{_or(sysm.os)}, kernel {_or(sysm.kernel)} ({_or(sysm.machine, '')})"),
        ("CPU", f"{_or(cpu.model)}, {_or(cpu.logical)} logical CPUs"),
        ("memory", f"{int(mem) / 2**30:.0f} GiB" if isinstance(mem, int) else None),
        ("GPU", gpus),
        ("driver", gpu.driver_version or None),
        ("CUDA (driver)", gpu.cuda_version or None),
        ("CUDA runtime", cuda_rt),
        ("NCCL", nccl),
    ]
    torch = pk.builds.torch
    for fact, label in (("cuda_available", "torch.cuda.is_available()"),
                        ("xpu_available", "torch.xpu.is_available()")):
        found = getattr(torch, fact)
        if isinstance(found, bool) and (fact == "cuda_available" or found):
            rows.append((label, f"{found} ({getattr(torch, fact + '_reason') or '?'})"))
    stack = [n for n in stack_packages("report") if n in dists]
    stack += sorted(n for n in dists if is_core_package(n) and n not in stack
                    and not n.startswith(("nvidia-nccl", "nvidia-cuda-runtime")))
    for n in stack:
        v = dists[n]
        where = " (editable)" if v.editable else ""
        rows.append((n, f"{_or(v.version)}{where}"))
    missing = [n for n in stack_packages("expected") if n not in dists]
    blocks = [table(("", ""), [(k, v) for k, v in rows if v], code=(1,))]
    if missing:
        blocks.append(para("Not installed: " + ", ".join(missing) + "."))
    return Part("facts", "Environment", tuple(blocks), 1)


def _variables(s: Snapshot) -> Part:
    env = s.records.env.vars
    # schema 1's records of the reads, from either schema's form (runsnap.snapshot.runtime)
    reads = {n: VariableRead(r) for n, r in runtime_variables(s.records.runtime.raw).items()
             if isinstance(r, Mapping)}
    traced = bool(s.records.runtime.traced)
    rows: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for name, r in sorted(reads.items()):
        if noise_reason(name):
            continue
        fam = family_of(name)
        if not fam and not r.set:
            continue  # an interpreter's start-up probe (PYTHON*, LC_*): noise for a report
        if not r.set and not r.sites and name.startswith(("PYTHON", "LC_", "LANG")):
            continue  # the interpreter's own start-up look-ups, made by every Python
        value = (r.value if r.has("value") else env.get(name)) if r.set else None
        site = next((str(st.stack[0]) for st in r.sites if st.stack), "")
        how = ("read" if r.set else "read, not set (the program took its default)")
        rows.append((name, "(unset)" if value is None else str(value),
                     how + (f" at {site}" if site else "")))
        seen.add(name)
    installed = {normalize_name(str(n)) for n in _dists(s)}
    for name in sorted(env):
        if name in seen or not family_of(name) or noise_reason(name):
            continue
        owners = family_owners(name)
        if owners and not owners & installed:
            continue  # a family of a stack this run does not have (JAX_* without jax)
        rows.append((name, str(env[name]), "set, not seen read" if traced else "set"))
    rows.sort(key=lambda r: (not r[2].startswith("read"), -(family_of(r[0]) or (0, ""))[0], r[0]))
    blocks: list[Block] = []
    if traced:
        blocks.append(para("Read at run time (traced), then the other variables of known "
                           "families that were set:"))
    else:
        blocks.append(para("Variables of known families (NCCL_*, CUDA_*, SGLANG_*, VLLM_*, "
                           "TORCH_*, HF_* ...) that were set; the run was not traced:"))
    head = table(("variable", "value", "seen"), rows[:VARIABLES], code=(0, 1))
    blocks.append(head)
    if len(rows) > VARIABLES:
        blocks.append(details(f"{len(rows) - VARIABLES} more variables",
                              [table(("variable", "value", "seen"), rows[VARIABLES:],
                                     code=(0, 1))]))
    blocks += _findings(s)
    if not rows:
        blocks = [para("No variable of a known family was set or read.")] + _findings(s)
    return Part("variables", "Variables that matter", tuple(blocks),
                5 if len(rows) > VARIABLES else 2, how="`runsnap show SNAPSHOT --section env`",
                shorter=Part("variables", "Variables that matter", (blocks[0], head), 2,
                             how="`runsnap show SNAPSHOT --section env`"))


def _findings(s: Snapshot) -> list[Block]:
    """The findings of ``runsnap check`` on this snapshot, most important first."""
    found = checks.check(s).findings
    texts = [f.message + "".join(f"; {d}" for d in f.details) for f in found]
    return [para("Findings of `runsnap check`:"), items(texts)] if texts else []


def _git(s: Snapshot) -> Part:
    repos = s.records.git.repos
    if not repos:
        return Part("git", "Git", (para("No git repository in play."),), 3)
    rows = []
    diffs: list[Block] = []
    for name, r in repos.items():
        changed = [str(c.path) for c in r.changed]
        state = "dirty" if r.dirty else "clean"
        if changed:
            state += f": {len(changed)} changed ({', '.join(changed[:8])}" + \
                (", ..." if len(changed) > 8 else "") + ")"
        if r.untracked:
            state += f", {len(r.untracked)} untracked"
        rows.append((r.path or name, str(_or(r.commit, ""))[:12], r.branch or r.describe or "",
                     state))
        if r.diff:
            diffs.append(details(f"Uncommitted diff of {r.path or name} "
                                 f"({_or(r.diff_bytes, len(str(r.diff)))} bytes)",
                                 [code(str(r.diff).splitlines())]))
    head = table(("repository", "commit", "branch", "state"), rows, code=(0, 1))
    how = "`runsnap show SNAPSHOT --section git`"
    return Part("git", "Git", (head, *diffs), 7 if diffs else 3, how=how,
                shorter=Part("git", "Git", (head,), 3, how=how) if diffs else None)


def _config_rows(cfg: Any, prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if not isinstance(cfg, Mapping):
        return out
    for k, v in cfg.items():
        path = f"{prefix}{k}"
        if isinstance(v, Mapping) and not config_field_reason(path):
            out += _config_rows(v, path + ".")
        elif config_field_reason(path):
            text = v if isinstance(v, str) else _compact(v)
            out.append((path, text))
    return out


def _compact(v: Any) -> str:

    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str)


def _models(s: Snapshot) -> Part:
    blocks: list[Block] = []
    full: list[Block] = []
    for src, m in s.records.models.models.items():
        config = m.config.raw if m.config else {}  # the whole config.json as read
        rows = _config_rows(config)
        blocks += [para(f"{src}: {_or(m.path, '')}"),
                   table(("config field", "value"), rows, code=(0, 1)) if rows else
                   para("(no config.json read)")]
        if config:
            full.append(details(f"config.json of {src}",
                                [code(json.dumps(config, indent=1).splitlines())]))
    if not blocks:
        return Part("models", "Models", (), 5)
    how = "`runsnap show SNAPSHOT --section models`"
    return Part("models", "Models (the config fields that matter)", tuple(blocks + full),
                6 if full else 4, how=how, shorter=Part("models", "Models (the config fields that matter)",
                                      tuple(blocks), 4, how=how) if full else None)


def _packages(s: Snapshot) -> Part:
    dists = s.records.packages.distributions
    if not dists:
        return Part("packages", "Packages", (), 9)
    lines = [f"{n}=={_or(v.version)}" for n, v in sorted(dists.items())]
    return Part("packages", "All packages", (details(f"{len(lines)} distributions "
                                                     f"(pip freeze style)", [code(lines)]),), 8,
                how="`runsnap show SNAPSHOT --section packages`")


def _diff(a: Snapshot, b: Snapshot) -> Part:

    report = compare(a, b, git_log=False)
    full = Part("diff", "Why A and B differ (runsnap diff A B)", (Block("diff", diff=report),), 4,
                how="`runsnap diff A B`")
    top = report.replace(differences=report.differences[:10])
    short = Part("diff", "Why A and B differ (runsnap diff A B, the first 10)",
                 (Block("diff", diff=top),), 1, how="`runsnap diff A B`")
    return full.replace(shorter=short)


def _scrub_note(snaps: Sequence[Snapshot]) -> str:
    where = sorted({str(x) for s in snaps for x in s.records.meta.redacted})
    listed = ", ".join(where[:12]) + (f" and {len(where) - 12} more" if len(where) > 12 else "")
    return ("Scrubbed by runsnap: every value here passed its secret rules (at capture and again "
            "now). A secret is never shown: it is replaced by a fingerprint "
            "(`<redacted:hmac-sha256:…>`, a keyed HMAC-SHA256 whose key stays on the machine "
            "that captured; equal fingerprints mean equal values, and no value can be read "
            "back). " + (f"Replaced here: {listed}." if where else "Nothing needed replacing."))
