"""``[models]``: every model directory in play, so a changed checkpoint or config is visible.

Models come from ``--model`` (repeatable) and from the command's own arguments: any argument
value that is a directory holding ``config.json``, or a Hugging Face repo id (``org/name``) that
resolves in the local Hugging Face cache. The network is never used.

Each model is keyed by where it came from (``--model-path``, ``--speculative-draft-model-path``,
``argv[3]``, ``runsnap --model``), which stays the same between two runs of one launch even when
the paths differ between machines.
"""

from __future__ import annotations

import json
import os

from runsnap.base.cache import HashCache
from runsnap.base.files import TooLarge, read_regular
from runsnap.base.paths import path_str, resolve_path
from runsnap.base.patterns import on_use
from runsnap.knowledge.hfcaches import hub_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.capturing.context import CaptureContext

#: Side files hashed: JSON (and these small tokenizer/text files) up to this size.
SIDE_FILE_MAX = 64 * 1024 * 1024

#: A config.json larger than this is not read (real ones are a few KiB; the largest, with
#: quantization tables, a few hundred): the capture records why and the launch goes on.
CONFIG_MAX_BYTES = 4 * 1024 * 1024

#: A config.json nested deeper than this is not kept (real ones nest 3 or 4 levels).
CONFIG_MAX_DEPTH = 32
SIDE_SUFFIXES = (".json", ".txt", ".model", ".tiktoken", ".jinja", ".py")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt", ".h5", ".msgpack",
                   ".onnx", ".npz", ".distcp")
_REPO_ID = on_use(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_REVISION_OPTIONS = ("revision", "model-revision")


def hf_hub_cache(env: Mapping[str, str]) -> str:
    """Where the Hugging Face cache is for this environment (huggingface_hub's own rules)."""
    return hub_cache(env)


def _resolve_hf(repo_id: str, env: Mapping[str, str], revision: str | None) -> dict[str, Any] | None:
    """The snapshot directory of ``repo_id`` in the local cache, or None when it is not there."""
    cache = hf_hub_cache(env)
    repo_dir = path_str(os.path.join(cache, "models--" + repo_id.replace("/", "--")))
    if not os.path.isdir(repo_dir):
        return None
    rev = revision or "main"
    commit = rev
    ref = path_str(os.path.join(repo_dir, "refs", rev))
    try:
        commit = read_regular(ref, 4096).decode("utf-8", "replace").strip() or rev
    except OSError:  # no such ref (a commit given), or not a file: the name itself
        pass
    snap = path_str(os.path.join(repo_dir, "snapshots", commit))
    if not os.path.isdir(snap):
        return None
    return {"path": snap, "repo_id": repo_id, "revision": commit, "ref": rev,
            "cache": cache}


def _arg_values(argv: tuple[str, ...]) -> list[tuple[str, str]]:
    """(source, value) for every argument value: option values named by their option."""
    out = []
    prev_opt: str | None = None
    for i, arg in enumerate(argv):
        if i == 0:
            continue
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
            out.append((name, value))
            prev_opt = None
        elif arg.startswith("-") and len(arg) > 1:
            prev_opt = arg
        else:
            out.append((prev_opt or f"argv[{i}]", arg))
            prev_opt = None
    return out


def _revision(argv: tuple[str, ...]) -> str | None:
    for source, value in _arg_values(argv):
        if source.lstrip("-") in _REVISION_OPTIONS:
            return value
    return None


def _candidates(ctx: CaptureContext) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Models found: (source, location) pairs, and errors for named models that do not exist.

    Each candidate is looked at on its own: one that cannot be resolved (``~nosuchuser/x``, a
    cache folder under a home that does not exist) is an error for that candidate when the user
    named it with ``--model``, and no model at all when it is any other argument."""
    found: list[tuple[str, dict[str, Any]]] = []
    errors: list[str] = []
    revision = _revision(ctx.argv)
    for n, value in enumerate(ctx.models, 1):
        source = "runsnap --model" if len(ctx.models) == 1 else f"runsnap --model #{n}"
        try:
            _named_model(ctx, value, source, revision, found, errors)
        except (OSError, RuntimeError, ValueError) as exc:
            errors.append(f"{value} ({source}): cannot be resolved: {exc}")
    for source, value in _arg_values(ctx.argv):
        if not value or len(value) > 4096:
            continue
        try:
            path = resolve_path(value, ctx.cwd)
            if os.path.isfile(os.path.join(path, "config.json")) or _odd_config(path):
                found.append((source, {"given": value, "path": path}))
                continue
            if _REPO_ID.match(value) and not os.path.exists(path):
                hf = _resolve_hf(value, ctx.env, revision)
                if hf:
                    found.append((source, {"given": value, **hf}))
        except (OSError, RuntimeError, ValueError):
            continue  # an argument that is no path (``--foo '~abc'``) names no model
    return found, errors


def _named_model(ctx: CaptureContext, value: str, source: str, revision: str | None,
                 found: list[tuple[str, dict[str, Any]]], errors: list[str]) -> None:
    """A model the user named with ``--model``: found, or an error saying why not."""
    path = resolve_path(value, ctx.cwd)
    if os.path.isdir(path):
        found.append((source, {"given": value, "path": path}))
    elif _REPO_ID.match(value) and (hf := _resolve_hf(value, ctx.env, revision)):
        found.append((source, {"given": value, **hf}))
    elif os.path.exists(path):
        errors.append(f"{value} ({source}): not a directory")
    else:
        errors.append(f"{value} ({source}): no such directory, nor a repo id in the "
                      f"Hugging Face cache at {hf_hub_cache(ctx.env)}")


def _odd_config(path: str) -> bool:
    """Whether directory ``path`` has a ``config.json`` that is not a readable regular file (a
    FIFO, a device, a directory, a link loop): a model in play whose config cannot be read,
    recorded with that error rather than passed over."""
    cfg = os.path.join(path, "config.json")
    try:
        return os.path.lexists(cfg) and os.path.isdir(path) and not os.path.isfile(cfg)
    except (OSError, ValueError):
        return False


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"models": {source: {...}}, "errors": [...]}``."""
    found, errors = _candidates(ctx)
    models: dict[str, dict[str, Any]] = {}
    by_path: dict[str, str] = {}
    hashes = HashCache()  # side files (tokenizers of 3-30 MB) are hashed again only on change
    for source, loc in found:
        real = os.path.realpath(loc["path"])
        if real in by_path:  # the same model named twice: one entry, both sources
            models[by_path[real]]["sources"].append(source)
            continue
        key = source if source not in models else f"{source} #{len(models) + 1}"
        try:
            described = _describe(real, hashes)
        except (OSError, RuntimeError, ValueError) as exc:  # one model, not the others
            errors.append(f"{loc['given']} ({source}): {type(exc).__name__}: {exc}")
            continue
        by_path[real] = key
        models[key] = {"sources": [source], **loc, "real_path": real, **described}
    hashes.flush()
    return {"models": models, "errors": errors}


def read_config(path: str) -> tuple[dict[str, Any] | None, str | None]:
    """A model's config.json, bounded: (the config, None), or (None, why it was not kept).

    The launch must never wait on, or crash over, a config: its size is checked before
    reading, the read is capped, and the nesting is checked before anything walks it."""
    try:
        raw = read_regular(path, CONFIG_MAX_BYTES)
    except FileNotFoundError:
        return None, "no config.json"
    except TooLarge:
        return None, (f"config.json: larger than the {CONFIG_MAX_BYTES // (1024 * 1024)} MiB "
                      "runsnap reads; not recorded")
    except OSError as exc:
        return None, f"config.json: {exc.strerror or exc}"
    if _too_deep(raw):
        return None, f"config.json: nested deeper than {CONFIG_MAX_DEPTH} levels; not recorded"
    try:
        config = json.loads(raw.decode("utf-8"))
    except RecursionError:
        return None, "config.json: nested too deeply; not recorded"
    except ValueError as exc:
        return None, f"config.json: {str(exc)[:200]}"
    if not isinstance(config, dict):
        return None, f"config.json: a JSON {type(config).__name__}, not an object; not recorded"
    return config, None


def _too_deep(raw: bytes) -> bool:
    """Whether JSON text opens more than :data:`CONFIG_MAX_DEPTH` arrays or objects at once
    (brackets inside strings counted too: a false alarm only for configs no model has)."""
    if raw.count(b"[") + raw.count(b"{") <= CONFIG_MAX_DEPTH:
        return False
    depth = 0
    for m in _BRACKETS.finditer(raw):
        depth += 1 if m.group() in (b"[", b"{") else -1
        if depth > CONFIG_MAX_DEPTH:
            return True
    return False


_BRACKETS = on_use(rb"[\[\]{}]")


def _describe(path: str, hashes: HashCache) -> dict[str, Any]:
    """config.json in full, side-file hashes and weight sizes of one model directory."""
    errors: list[str] = []
    out: dict[str, Any] = {}
    config, problem = read_config(os.path.join(path, "config.json"))
    if config is not None:
        out["config"] = config
    if problem:
        errors.append(problem)
    files: dict[str, str] = {}
    weights: dict[str, int] = {}
    try:
        entries = _walk(path)
    except OSError as exc:
        errors.append(f"{path}: {exc.strerror or exc}")
        entries = []
    for rel, full in entries:
        name = rel.lower()
        try:
            if name.endswith(WEIGHT_SUFFIXES):
                weights[rel] = os.stat(full).st_size
            elif name.endswith(SIDE_SUFFIXES) and rel != "config.json":
                size = os.stat(full).st_size
                if size <= SIDE_FILE_MAX:
                    files[rel] = hashes.sha256(full)
        except OSError as exc:
            errors.append(f"{rel}: {exc.strerror or exc}")
    out["files_sha256"] = files
    out["weights"] = weights
    out["weights_count"] = len(weights)
    out["weights_bytes"] = sum(weights.values())
    out["errors"] = errors
    return out


def _walk(path: str) -> list[tuple[str, str]]:
    """Files of a model directory and of its direct subdirectories, sorted."""
    out = []
    with os.scandir(path) as it:
        for e in it:
            if e.name.startswith("."):
                continue
            if e.is_dir():
                try:
                    with os.scandir(e.path) as sub:
                        out += [(f"{e.name}/{s.name}", s.path) for s in sub
                                if not s.name.startswith(".") and s.is_file()]
                except OSError:
                    continue
            elif e.is_file():
                out.append((e.name, e.path))
    return sorted(out)
