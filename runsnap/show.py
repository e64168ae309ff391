"""A readable summary of one snapshot: the key facts first, then each section with its counts."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from runsnap.redact import is_fingerprint
from runsnap.snapshot import Snapshot, ordered_sections

__all__ = ["FORMATS", "SECTIONS", "render", "render_section", "render_summary"]

#: ``show --format`` names.
FORMATS = ("text", "json", "markdown")

#: Variable families worth listing by name in a summary (the rest are only counted).
NOTABLE_PREFIXES = ("SGLANG_", "SGL_", "VLLM_", "NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "HF_",
                    "TRANSFORMERS_", "NVIDIA_", "OMP_", "MKL_", "LD_", "PYTHON", "TRITON_",
                    "FLASHINFER_", "TOKENIZERS_", "RUNSNAP_")


def _size(n: int) -> str:
    """Bytes for humans.

    >>> _size(0), _size(1536), _size(3 * 1024**3)
    ('0 B', '1.5 KiB', '3.0 GiB')
    """
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def render_summary(snap: Snapshot, width: int = 0) -> str:
    """The text ``runsnap show`` prints; lines longer than ``width`` (0: no limit) are cut,
    and a value's control characters are shown escaped."""
    lines: list[str] = []
    add = lines.append
    meta = snap.meta
    title = f"runsnap snapshot {meta.get('id', '')[:12]}"
    if snap.label:
        title += f"  [{snap.label}]"
    add(title)
    add(f"  captured  {meta.get('captured_at', '?')} on {meta.get('host', '?')} "
        f"(runsnap {meta.get('runsnap_version', '?')}, schema {snap.schema})")
    if snap.path:
        add(f"  file      {snap.path}")

    cmd = snap.get("command", {})
    argv = cmd.get("argv") or []
    add("")
    add("command")
    add(f"  $ {shlex.join(argv)}" if argv else "  (no command: the current context)")
    add(f"  cwd        {cmd.get('cwd', '')}")
    if argv:
        exe = cmd.get("executable") or "(not found)"
        real = cmd.get("executable_real")
        add(f"  executable {exe}" + (f" -> {real}" if real and real != exe else ""))
    opts = cmd.get("options") or {}
    if opts:
        add(f"  options    {len(opts)} long options parsed")

    outcome = snap.get("outcome")
    if outcome:
        add("")
        add("outcome")
        add(f"  {_status_line(outcome)}")
        if outcome.get("peak_rss_bytes"):
            add(f"  peak memory of the process tree: {_size(outcome['peak_rss_bytes'])}")
        if outcome.get("first_error"):
            add(f"  first error ({outcome.get('first_error_stream', '?')}): "
                f"{outcome['first_error']}")
        warnings = outcome.get("warnings") or []
        if warnings:
            add(f"  warnings ({outcome.get('warnings_count', len(warnings))}):")
            lines.extend(f"    {w}" for w in warnings[:5])
            if len(warnings) > 5:
                add(f"    ... and {len(warnings) - 5} more")
        log = outcome.get("log")
        if log:
            add(f"  log {log.get('path')} ({_size(log.get('bytes', 0))}, "
                f"sha256 {str(log.get('sha256', ''))[:12]})")
    elif snap.meta.get("launch") == "wrapped":
        add("")
        add("outcome")
        add("  none recorded: the launch never reported back (runsnap was killed, or still runs)")

    runtime = snap.get("runtime")
    if runtime:
        add("")
        lines.extend(runtime_lines(runtime))

    process = snap.get("process")
    if process:
        add("")
        add("process (snapshotted while running)")
        add(f"  pid {process.get('pid')} ({process.get('name', '?')}), user "
            f"{process.get('user', '?')}, started {process.get('started_at', '?')}, "
            f"{process.get('status', '?')}")
        add(f"  exe {process.get('exe', '?')}")
        children = process.get("children") or []
        if children:
            add(f"  {len(children)} child processes")
        libs: Mapping[str, Any] = process.get("libraries") or {}
        notable = [f"{lib.get('name')} {lib.get('version', '?')}" for lib in libs.values()
                   if str(lib.get("name", "")).startswith(_NOTABLE_LIBS)]
        add(f"  {len(libs)} shared libraries mapped" + (f": {', '.join(notable)}" if notable else ""))

    git = snap.get("git", {})
    add("")
    add("git")
    repos = git.get("repos") or {}
    if not repos:
        add("  no repository")
    for name, repo in repos.items():
        commit = (repo.get("commit") or "(no commit)")[:12]
        where = repo.get("branch") or ("detached HEAD" if repo.get("detached") else "")
        state = "dirty" if repo.get("dirty") else "clean"
        add(f"  {name}: {commit} {where} {state} ({', '.join(repo.get('roles', []))})".rstrip())
        changed = repo.get("changed") or []
        if changed or repo.get("untracked_count"):
            diff_note = f", diff {_size(repo.get('diff_bytes', 0))}"
            if repo.get("diff_truncated"):
                diff_note += " (truncated)"
            add(f"    {len(changed)} changed, {repo.get('untracked_count', 0)} untracked"
                f"{diff_note}")
        for flag in ("bare", "shallow", "unborn"):
            if repo.get(flag):
                add(f"    {flag} repository")
    for path in git.get("not_repositories", []):
        add(f"  {path}: not a git repository")

    pk = snap.get("packages", {})
    add("")
    add("packages")
    add(f"  {pk.get('count', 0)} distributions for {pk.get('interpreter', '?')} "
        f"(Python {pk.get('python_version', '?')})")
    add(f"  chosen because: {pk.get('reason', '?')}")
    dists: Mapping[str, Any] = pk.get("distributions") or {}
    editable = [n for n, d in dists.items() if d.get("editable")]
    if editable:
        add(f"  editable: {', '.join(editable)}")
    key = [n for n in ("torch", "sglang", "vllm", "transformers", "flashinfer-python",
                       "triton", "nvidia-nccl-cu12", "nvidia-nccl-cu13") if n in dists]
    if key:
        add("  " + ", ".join(f"{n} {dists[n].get('version', '')}" for n in key))
    if pk.get("shadowed"):
        add(f"  {len(pk['shadowed'])} shadowed by an earlier copy on sys.path")

    models = snap.get("models", {}).get("models") or {}
    add("")
    add("models")
    if not models:
        add("  none in play")
    for source, model in models.items():
        cfg = model.get("config") or {}
        arch = ",".join(cfg.get("architectures") or []) or cfg.get("model_type", "?")
        ctx_len = _max_positions(cfg)
        add(f"  {source}: {model.get('path', '?')}")
        add(f"    {arch}" + (f", max_position_embeddings {ctx_len}" if ctx_len else "")
            + f", {model.get('weights_count', 0)} weight files "
            f"({_size(model.get('weights_bytes', 0))})")
        if model.get("revision"):
            add(f"    {model.get('repo_id', '')} @ {model['revision'][:12]}")

    system = snap.get("system", {})
    add("")
    add("system")
    add(f"  {system.get('host', '?')}: {system.get('os', '?')}, kernel {system.get('kernel', '?')}"
        f", {system.get('machine', '')}")
    cpu = system.get("cpu") or {}
    mem = system.get("memory") or {}
    add(f"  {cpu.get('model', '?')}, {cpu.get('logical', '?')} CPUs, "
        f"{_size(mem.get('total_bytes', 0))} memory")
    gpu = system.get("gpu") or {}
    if gpu.get("available"):
        names = sorted({d.get("name", "?") for d in gpu.get("devices", [])})
        add(f"  {gpu.get('count')} x {', '.join(names)}; driver {gpu.get('driver_version')}, "
            f"CUDA {gpu.get('cuda_version')}")
    else:
        add(f"  no GPU ({gpu.get('reason', 'unknown')})")

    env = snap.get("env", {})
    variables: Mapping[str, Any] = env.get("vars") or {}
    add("")
    add("env")
    redacted = [k for k, v in variables.items() if is_fingerprint(v)]
    add(f"  {len(variables)} variables, {len(redacted)} secrets replaced by fingerprints")
    notable = [k for k in variables if k.startswith(NOTABLE_PREFIXES)]
    for k in notable[:40]:
        add(f"  {k}={variables[k]}")
    if len(notable) > 40:
        add(f"  ... and {len(notable) - 40} more of these families")

    errs = [(name, e) for name in ordered_sections(snap.sections)
            for e in snap.sections[name].get("errors", [])]
    errs += [(f"git.{n}", e) for n, r in repos.items() for e in r.get("errors", [])]
    errs += [(f"models.{n}", e) for n, m in models.items() for e in m.get("errors", [])]
    add("")
    if errs:
        add(f"errors ({len(errs)})")
        for name, e in errs:
            add(f"  [{name}] {e}")
    else:
        add("errors: none")
    from runsnap.terminal import clean, fit, wrap

    out: list[str] = []
    for line in "\n".join(lines).split("\n"):
        line = clean(line)
        if line.startswith("  first error ("):  # the line that matters most: never cut
            out += wrap(line, width, "    ")
        else:
            out.append(fit(line, width))
    return "".join(line + "\n" for line in out)


#: Variables and read sites ``show`` lists from ``[runtime]`` (the rest are counted).
MAX_READ_SHOWN = 30
MAX_SITES_SHOWN = 2


def runtime_lines(runtime: Mapping[str, Any]) -> list[str]:
    """The ``runtime`` part of ``show``: variables read (with where), then modules imported
    from somewhere other than site-packages (a source checkout on ``PYTHONPATH``, the cwd)."""
    if not runtime.get("traced"):
        return ["runtime", f"  not traced: {runtime.get('reason', 'unknown')}"]
    procs = runtime.get("processes") or []
    native = str(runtime.get("native", ""))
    out = ["runtime", f"  traced: {len(procs)} Python process(es); native reads "
                      f"{'observed' if native.startswith('observed') else native}"]
    env: Mapping[str, Any] = runtime.get("env") or {}
    read = [n for n, e in env.items() if isinstance(e, Mapping) and e.get("reads")]
    native_only = [n for n, e in env.items() if isinstance(e, Mapping) and not e.get("reads")
                   and e.get("native")]
    bulk = [n for n, e in env.items() if isinstance(e, Mapping) and e.get("bulk")]
    unset = [n for n in read if not env[n].get("set")]
    out.append(f"  {len(read)} variables read from Python ({len(unset)} unset: the default "
               f"taken), {len(native_only)} only natively, {len(bulk)} only in whole-"
               f"environment copies")
    for name in read[:MAX_READ_SHOWN]:
        e = env[name]
        value = f"={e.get('value', '')}" if e.get("set") else " (unset)"
        out.append(f"    {name}{value}  {e.get('reads')} read(s)")
        for site in (e.get("sites") or [])[:MAX_SITES_SHOWN]:
            stack = site.get("stack") or [] if isinstance(site, Mapping) else []
            if stack:
                out.append(f"      at {' <- '.join(str(f) for f in stack[:3])}")
    if len(read) > MAX_READ_SHOWN:
        out.append(f"    ... and {len(read) - MAX_READ_SHOWN} more")
    modules: Mapping[str, Any] = runtime.get("modules") or {}
    elsewhere = {n: m for n, m in modules.items()
                 if isinstance(m, Mapping) and m.get("origin") != "site-packages"}
    out.append(f"  {len(modules)} packages imported, {len(elsewhere)} from outside "
               f"site-packages" + (":" if elsewhere else ""))
    for name, mod in elsewhere.items():
        dist = f" ({mod['dist']} {mod.get('version', '')})" if mod.get("dist") else ""
        out.append(f"    {name}  {mod.get('origin')}  {mod.get('file')}{dist}")
    return out


_NOTABLE_LIBS = ("libnccl", "libcudart", "libcublas", "libcudnn", "libtorch", "libcuda", "libnvrtc")


def _status_line(outcome: Mapping[str, Any]) -> str:
    """How the run ended, in one line.

    >>> _status_line({"status": "signalled", "signal": "SIGKILL", "exit_status": 137,
    ...               "duration_s": 1.5})
    'killed by SIGKILL (exit status 137) after 1.5 s'
    """
    status = outcome.get("status")
    code = outcome.get("exit_status", "?")
    if status == "signalled":
        text = f"killed by {outcome.get('signal', '?')} (exit status {code})"
    elif status in ("not_found", "not_executable", "failed"):
        text = f"did not start: {outcome.get('error', status)} (exit status {code})"
    else:
        text = f"exit status {code}"
    if outcome.get("duration_s") is not None:
        text += f" after {outcome['duration_s']} s"
    return text


def _max_positions(cfg: Mapping[str, Any]) -> Any:
    if "max_position_embeddings" in cfg:
        return cfg["max_position_embeddings"]
    text = cfg.get("text_config")
    if isinstance(text, Mapping):
        return text.get("max_position_embeddings")
    return None


#: ``show --section`` names: every section a snapshot may hold.
SECTIONS = ("meta", "command", "env", "git", "packages", "models", "system", "outcome",
            "process", "runtime")


def render_section(snap: Snapshot, name: str) -> str:
    """One section in full: ``packages`` lists every distribution (name, version, where),
    ``env`` every variable; any other section its keys and values, one per line."""
    from runsnap.errors import UsageError

    if name == "meta":
        data: Mapping[str, Any] = snap.meta
    elif name in snap.sections:
        data = snap.sections[name]
    else:
        have = ", ".join(["meta", *ordered_sections(snap.sections)])
        raise UsageError(f"--section {name}: this snapshot has no such section ({have})")
    lines: list[str] = []
    if name == "packages":
        lines.append(f"{data.get('count', 0)} distributions for {data.get('interpreter', '?')} "
                     f"(Python {data.get('python_version', '?')})")
        dists: Mapping[str, Any] = data.get("distributions") or {}
        rows = [(n, str(d.get("version", "")), _where(d)) for n, d in sorted(
            dists.items(), key=lambda kv: kv[0].lower())]
        wide = max((len(r[0]) for r in rows), default=0)
        wver = max((len(r[1]) for r in rows), default=0)
        lines += [f"{n:<{wide}}  {v:<{wver}}  {w}".rstrip() for n, v, w in rows]
        for d in data.get("shadowed") or []:
            lines.append(f"{d.get('name')}  {d.get('version', '')}  shadowed: "
                         f"{d.get('location', '')}")
    elif name == "env":
        variables: Mapping[str, Any] = data.get("vars") or {}
        lines += [f"{k}={v}" for k, v in sorted(variables.items())]
    else:
        lines += _flat(data, "")
    for e in data.get("errors") or [] if name != "meta" else []:
        lines.append(f"error: {e}")
    from runsnap.terminal import clean

    return "".join(clean(line) + "\n" for line in lines)


def _where(d: Mapping[str, Any]) -> str:
    if d.get("editable"):
        return f"editable: {d.get('source') or d.get('location', '')}"
    return str(d.get("location", ""))


def _flat(data: Any, prefix: str) -> list[str]:
    """``key = value`` lines, nested keys joined with dots.

    >>> _flat({"a": 1, "b": {"c": [1, 2]}}, "")
    ['a = 1', 'b.c = [1, 2]']
    """
    if isinstance(data, Mapping):
        out: list[str] = []
        for k, v in data.items():
            if k == "errors":
                continue
            out += _flat(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    text = str(data) if not isinstance(data, str) else data
    if "\n" in text:
        return [f"{prefix} =", *(f"  {ln}" for ln in text.splitlines())]
    return [f"{prefix} = {text}"]


def render(snap: Snapshot, fmt: str = "text", width: int = 0) -> str:
    """``runsnap show`` in ``fmt``: ``text`` (:func:`render_summary`), ``json`` (the whole
    snapshot as one JSON object) or ``markdown`` (the summary, and each section folded in
    ``<details>``, to paste into an issue)."""
    if fmt == "json":
        import json

        return json.dumps(snap.to_document(), indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "markdown":
        return _markdown(snap)
    if fmt == "text":
        return render_summary(snap, width)
    from runsnap.errors import UsageError

    raise UsageError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")


def _markdown(snap: Snapshot) -> str:
    summary = render_summary(snap).splitlines()
    title = summary[0] if summary else "runsnap snapshot"
    body = summary[1:]
    fence = "````" if any("```" in line for line in body) else "```"
    lines = [f"### {title}", "", fence, *body, fence]
    for name in ordered_sections(snap.sections):
        text = render_section(snap, name).rstrip("\n").splitlines()
        if not text:
            continue
        inner = "````" if any("```" in line for line in text) else "```"
        lines += ["", f"<details><summary>{name} ({len(text)} lines)</summary>", "", inner,
                  *text, inner, "", "</details>"]
    return "\n".join(lines) + "\n"
