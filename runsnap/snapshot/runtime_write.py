"""``[runtime]`` written in its stored form (schema 2): frames and stacks once each, one line a
variable, the values seen apart (docs/runtime.md, "Stored form"; read back with
:mod:`runsnap.snapshot.runtime`, the one reader)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from runsnap.snapshot.runtime_form import SITE_KEYS, VAR_KEYS, is_compact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["compact"]

#: ``FILE:LINE in FUNC``, as the hook writes a frame.
_FRAME = re.compile(r"(.*?):([0-9]{1,9}) in (.*)", re.S)


class _Interner:
    def __init__(self) -> None:
        self.files: list[str] = []
        self.frames: list[Any] = []
        self.stacks: list[list[int]] = []
        self._file_at: dict[str, int] = {}
        self._frame_at: dict[str, int] = {}
        self._stack_at: dict[tuple[int, ...], int] = {}

    def _frame(self, text: str) -> Any:
        """``[file number, line, function]`` (``[file number, line]`` for a module's body,
        ``<module>``: most reads of a big library are its modules' settings read at import),
        or the text itself when it is not that shape."""
        m = _FRAME.fullmatch(text)
        if m is None or f"{m[1]}:{int(m[2])} in {m[3]}" != text:
            return text
        i = self._file_at.get(m[1])
        if i is None:
            i = self._file_at[m[1]] = len(self.files)
            self.files.append(m[1])
        return [i, int(m[2])] if m[3] == "<module>" else [i, int(m[2]), m[3]]

    def stack(self, frames: Any) -> int:
        ids = []
        for f in frames if isinstance(frames, (list, tuple)) else ():
            f = str(f)
            i = self._frame_at.get(f)
            if i is None:
                i = self._frame_at[f] = len(self.frames)
                self.frames.append(self._frame(f))
            ids.append(i)
        key = tuple(ids)
        k = self._stack_at.get(key)
        if k is None:
            k = self._stack_at[key] = len(self.stacks)
            self.stacks.append(ids)
        return k


def compact(section: Mapping[str, Any]) -> dict[str, Any]:
    """Schema 1's ``[runtime]`` (as :func:`runsnap.tracing.merge.build_section` builds it) in
    the stored form of schema 2. ``variables(compact(s)) == s["env"]``; a section already
    compact, or without variables, comes back as it is."""
    if is_compact(section) or not isinstance(section.get("env"), Mapping):
        return dict(section)
    processes = section.get("processes") or []
    proc_pids = [p.get("pid") if isinstance(p, Mapping) else None for p in processes]
    index = {pid: i for i, pid in enumerate(proc_pids) if isinstance(pid, int)}
    every = sorted(index)
    interner = _Interner()
    out_vars: dict[str, Any] = {}
    values: dict[str, Any] = {}
    others: dict[str, Any] = {}
    natives: dict[str, Any] = {}
    for name, entry in section["env"].items():
        if not isinstance(entry, Mapping):
            continue
        got = _compact_var(name, entry, every, index, interner, values, others, natives)
        if got is not None:
            out_vars[name] = got
    out: dict[str, Any] = {}
    for key, value in section.items():
        if key == "env":
            continue
        if key == "bulk_sites" and isinstance(value, list):
            value = [_compact_bulk(row, interner) for row in value]
        out[key] = value
    out["files"] = interner.files
    out["frames"] = interner.frames
    out["stacks"] = interner.stacks
    out["vars"] = out_vars
    if natives:
        out["native_reads"] = natives
    if values:
        out["values"] = values
    if others:
        out["other_values"] = others
    return out


def _compact_bulk(row: Any, interner: _Interner) -> Any:
    if not isinstance(row, Mapping) or "stack" not in row:
        return row
    return {**row, "stack": interner.stack(row["stack"])}


#: What a schema 1 entry (``VariableRead``, as :mod:`runsnap.tracing.merge` builds it) stands
#: for where it leaves a field out, and the same for one of its read sites (``ReadSite``): an
#: entry is read once, over these, not field by field.
_ENTRY: Mapping[str, Any] = {"set": False, "reads": 0, "bulk_reads": 0, "native": False,
                             "python": False, "bulk": False, "pids": None, "via": None,
                             "sites": None, "native_reads": 0, "written": False}
_SITE: Mapping[str, Any] = {"stack": None, "pid": None, "via": None, "set": None, "reads": None}


def _compact_var(name: str, e: Mapping[str, Any], every: list[int], index: Mapping[int, int],
                 interner: _Interner, values: dict[str, Any], others: dict[str, Any],
                 natives: dict[str, Any]) -> Any:
    out: dict[str, Any] = {}
    got = {**_ENTRY, **e}
    was_set, reads, bulk_reads = bool(got["set"]), got["reads"], got["bulk_reads"]
    native, python, bulk = bool(got["native"]), bool(got["python"]), bool(got["bulk"])
    if was_set:
        out["set"] = True
    sites = got["sites"]
    n_sites = len(sites) if isinstance(sites, list) else 0
    if reads != n_sites:
        out["reads"] = reads
    if bulk_reads:
        out["bulk_reads"] = bulk_reads
    if python != (bool(reads) or "sites" in e):
        out["python"] = python
    if native or "native_reads" in e:
        natives[name] = got["native_reads"]
        if not native:
            out["native"] = False
    if bulk != (not reads and bool(bulk_reads) and not native):
        out["bulk"] = bulk
    pids = list(got["pids"] or [])
    if pids != every:
        procs = [index[p] for p in pids if p in index]
        rest = [p for p in pids if p not in index]
        if procs or not rest:
            out["procs"] = procs
        if rest:
            out["pids"] = rest
    via = list(got["via"] or [])
    if via != (["get"] if n_sites else []):
        out["via"] = via[0] if len(via) == 1 and isinstance(via[0], str) else via
    if isinstance(sites, list):
        one_pid = pids[0] if len(pids) == 1 else None
        one_via = via[0] if len(via) == 1 else None
        stored = []
        for site in sites:
            if not isinstance(site, Mapping):
                continue
            at = {**_SITE, **site}
            row: dict[str, Any] = {"stack": interner.stack(at["stack"])}
            pid = at["pid"]
            if pid != one_pid or "pid" not in site:
                if isinstance(pid, int) and pid in index:
                    row["proc"] = index[pid]
                else:
                    row["pid"] = pid
            if at["via"] != one_via or "via" not in site:
                row["via"] = at["via"]
            if at["set"] != was_set:
                row["set"] = at["set"]
            if len(sites) != 1 or at["reads"] != reads:
                row["reads"] = at["reads"]
            row.update((k, v) for k, v in site.items() if k not in SITE_KEYS)
            stored.append(row["stack"] if len(row) == 1 else row)
        out["sites"] = stored
    if "value" in e:
        values[name] = e["value"]
    if "other_values" in e:
        others[name] = e["other_values"]
    if got["written"]:
        out["written"] = True
    out.update((k, v) for k, v in e.items() if k not in VAR_KEYS)  # fields added later
    if not out and name in natives:
        return None  # read natively only: its line in native_reads says it all
    if list(out) == ["sites"]:
        return out["sites"]  # the usual read: unset, through get, once a site
    return out
