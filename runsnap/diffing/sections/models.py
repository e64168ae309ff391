"""``[models]``: per model (matched by where it came from, e.g. ``--model-path``), its config
field by field, weight files, side files, revision and directory; config fields scored with
:mod:`runsnap.knowledge.models`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import dotted, keyed, locator, walk
from runsnap.knowledge.models import config_field_reason

__all__ = ["compare", "score"]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Per model (matched by where it came from, e.g. ``--model-path``): ``config.json`` field
    by field with the full path of each field, weight files added / removed / resized, side
    files whose hash changed, another Hugging Face revision, another directory."""
    out: list[Difference] = []
    ma: Mapping[str, Any] = a.get("models") or {}
    mb: Mapping[str, Any] = b.get("models") or {}
    for src, x in ma.items():
        if src not in mb:
            out.append(Difference("models", src, "removed", x.get("path"), None,
                                  path=("models", src)))
        else:
            out += _model(src, x, mb[src])
    out += [Difference("models", s, "added", None, y.get("path"), path=("models", s))
            for s, y in mb.items() if s not in ma]
    return out


def _model(src: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    out = [Difference("models", f"{src}: {field}", "changed", x.get(field), y.get(field),
                      path=("models", src, field))
           for field in ("repo_id", "revision") if x.get(field) != y.get(field)]
    for parts, change, fx, fy in walk(x.get("config") or {}, y.get("config") or {}):
        out.append(Difference("models", f"{src}: {dotted(parts)}", change, fx, fy,
                              path=locator("models", src, "config", *parts)))
    out += keyed("models", x.get("weights") or {}, y.get("weights") or {},
                 f"{src}: weights {{}}", changed_evidence=("resized (bytes)",),
                 under=(src, "weights"))
    out += keyed("models", x.get("files_sha256") or {}, y.get("files_sha256") or {},
                 f"{src}: file {{}}", under=(src, "files"))
    if x.get("real_path") != y.get("real_path"):
        out.append(Difference("models", f"{src}: path", "changed", x.get("real_path"),
                              y.get("real_path"), path=("models", src, "path")))
    return out


def score(d: Difference, rules: RankContext) -> Verdict:
    """Another revision or model (84, 80); config fields that set the context length, dtype,
    positions or shape (88), any other config field (85): the model is built from them; weight
    files (78); tokenizer and generation files (76); other side files (65); the same model in
    another directory (20)."""
    src, _, what = d.key.partition(": ")
    if not what:
        return 80, f"the model given by {src} is present in one run only", False
    if what in ("revision", "repo_id"):
        return 84, "another revision of the model in the Hugging Face cache", False
    if what == "path":
        return 20, "the model is read from another directory (its files are compared)", False
    if what.startswith("weights "):
        return 78, "weight files added, removed or resized: other weights are loaded", False
    if what.startswith("file "):
        fname = what[5:].lower()
        if "token" in fname or "generation" in fname or "chat" in fname or "template" in fname:
            return 76, "tokenizer or generation settings changed", False
        return 65, "a side file of the model changed", False
    why = config_field_reason(what)
    if why:
        return 88, f"config.json field {what}: {why}", False
    return 85, f"config.json field {what}: the model is built from its config", False
