"""``[models]``: per model (matched by where it came from, e.g. ``--model-path``), its config
field by field, weight files, side files, revision and directory; config fields scored with
:mod:`runsnap.knowledge.models`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import dotted, keyed, locator, walk
from runsnap.diffing.written import record
from runsnap.knowledge.models import bookkeeping, config_field_reason
from runsnap.snapshot.records import ModelEntry, Models

__all__ = ["compare", "score"]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Per model (matched by where it came from, e.g. ``--model-path``): ``config.json`` field
    by field with the full path of each field, weight files added / removed / resized, side
    files whose hash changed, another Hugging Face revision, another directory."""
    out: list[Difference] = []
    ma, mb = record(Models, a).models, record(Models, b).models
    for src, x in ma.items():
        if src not in mb:
            out.append(Difference("models", src, "removed", x.path, None,
                                  path=("models", src)))
        else:
            out += _model(src, x, mb[src])
    out += [Difference("models", s, "added", None, y.path, path=("models", s))
            for s, y in mb.items() if s not in ma]
    return out


def _model(src: str, x: ModelEntry, y: ModelEntry) -> list[Difference]:
    out = [Difference("models", f"{src}: {field}", "changed", fx, fy, path=("models", src, field))
           for field, fx, fy in (("repo_id", x.repo_id, y.repo_id),
                                 ("revision", x.revision, y.revision)) if fx != fy]
    for parts, change, fx, fy in walk(x.config.raw if x.config else {},
                                      y.config.raw if y.config else {}):
        out.append(Difference("models", f"{src}: {dotted(parts)}", change, fx, fy,
                              path=locator("models", src, "config", *parts)))
    out += keyed("models", x.weights, y.weights,
                 f"{src}: weights {{}}", changed_evidence=("resized (bytes)",),
                 under=(src, "weights"))
    out += keyed("models", x.files_sha256, y.files_sha256,
                 f"{src}: file {{}}", under=(src, "files"))
    if x.real_path != y.real_path:
        out.append(Difference("models", f"{src}: path", "changed", x.real_path,
                              y.real_path, path=("models", src, "path")))
    return out


def score(d: Difference, rules: RankContext) -> Verdict:
    """Another revision or model (84, 80); config fields that set the context length, dtype,
    positions or shape (88), any other config field (85): the model is built from them; weight
    files (86) and tokenizer and generation files (85), what the model computes with, as its
    config is: above a read every process of the stack makes (at most 83); other side files
    (65); a library's
    bookkeeping field (30: ``transformers_version``, ``_name_or_path``); the same model in
    another directory (20)."""
    src, _, what = d.key.partition(": ")
    if not what:
        return 80, f"the model given by {src} is present in one run only", False
    if what in ("revision", "repo_id"):
        return 84, "another revision of the model in the Hugging Face cache", False
    if what == "path":
        return 20, "the model is read from another directory (its files are compared)", False
    if what.startswith("weights "):
        return 86, "weight files added, removed or resized: other weights are loaded", False
    if what.startswith("file "):
        fname = what[5:].lower()
        if "token" in fname or "generation" in fname or "chat" in fname or "template" in fname:
            return 85, "tokenizer or generation settings changed", False
        return 65, "a side file of the model changed", False
    if bookkeeping(what):
        return 30, (f"config.json field {what}: a library's bookkeeping (the version that "
                    "wrote the file, where it was loaded from), never read to decide "
                    "anything"), False
    why = config_field_reason(what)
    if why:
        return 88, f"config.json field {what}: {why}", False
    return 85, f"config.json field {what}: the model is built from its config", False
