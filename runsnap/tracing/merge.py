"""Turn the trace folder the child's processes wrote into the ``[runtime]`` section.

Files: ``py-<pid>-<n>.log`` from the Python hook (one Python literal a line, see
``runsnap/probe/hook/sitecustomize.py``) and ``native-<pid>.log`` from the getenv interposer
(``<0|1>\\tNAME`` lines, ``#\\tCOUNT\\tNAME`` at exit). A line cut short by a kill is skipped.
Values are kept as seen here; the capture's redaction pass (the same as ``[env]``'s, by name
and by shape) runs over the section before it is written.
"""

from __future__ import annotations

import ast
import os

from runsnap.base.pythons import editable_source
from runsnap.snapshot.runtime_write import compact
from runsnap.tracing import distindex
from runsnap.tracing.datafiles import data_files
from runsnap.tracing.parsed import parsed_options
from runsnap.tracing.quoted import quote_values
from runsnap.tracing.scans import scan_filter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

__all__ = ["MAX_SITES", "STARTUP", "build_section", "read_logs"]

#: Read sites kept per variable in the snapshot (over all processes).
MAX_SITES = 12


def _lines(path: str) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            yield from fh
    except OSError:
        return


#: When the interposer saw a variable's first native read (``probe/native/getenv_trace.c``):
#: the interpreter starting (``S``), a library's constructors at load (``L``), a Python import
#: (``I``): a start-up, not a decision of the program while it ran (``R``).
STARTUP = frozenset("SLI")


def read_logs(folder: str) -> tuple[list[list[tuple[Any, ...]]], dict[int, dict[str, Any]]]:
    """The Python processes' records (one list per file) and the native reads per pid."""
    python: list[list[tuple[Any, ...]]] = []
    native: dict[int, dict[str, Any]] = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return python, native
    for name in names:
        path = os.path.join(folder, name)
        if name.startswith("py-"):
            records = [rec for rec in _literals(list(_lines(path)))
                       if isinstance(rec, tuple) and rec]
            if records and records[0][0] == "P":
                python.append(records)
        elif name.startswith("native-"):
            try:
                pid = int(name[len("native-"):].split(".")[0])
            except ValueError:
                continue
            reads: dict[str, Any] = native.setdefault(pid, {})
            for line in _lines(path):
                parts = line.rstrip("\n").split("\t")
                if len(parts) in (2, 3) and parts[0] in ("0", "1") and parts[1]:
                    # the third column: when it was read (S, L, I: at a start-up; R: later)
                    startup = len(parts) == 3 and parts[2] in STARTUP
                    reads.setdefault(parts[1], [parts[0] == "1", 1, startup])
                elif len(parts) == 2 and parts[0] == "R" and parts[1] in reads:
                    reads[parts[1]][2] = False  # read again while the program ran
                elif len(parts) == 3 and parts[0] == "#" and parts[2] in reads:
                    try:
                        reads[parts[2]][1] = int(parts[1])
                    except ValueError:
                        pass
    return python, native


def _literals(lines: list[str]) -> list[Any]:
    """The Python literals of ``lines`` (one a line), those that parse: in one parse when all
    do (one ``ast`` parse costs about as much as a short line's), else line by line, leaving
    out the last line of a killed process, cut short."""
    try:
        whole = ast.literal_eval("[" + ",".join(line.rstrip("\n") for line in lines) + "]")
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        whole = None
    if isinstance(whole, list) and len(whole) == len(lines):
        return whole
    out = []
    for line in lines:
        try:
            out.append(ast.literal_eval(line))
        except (ValueError, SyntaxError, MemoryError, RecursionError):  # noqa: PERF203
            continue
    return out


def _under(path: str, folder: str) -> bool:
    folder = folder.rstrip(os.sep)
    return bool(folder) and (path == folder or path.startswith(folder + os.sep))


class _Dists:
    """Top-level module name -> (distribution, version) per ``site-packages`` folder."""

    def __init__(self, packages: Mapping[str, Any]) -> None:
        self.dists: Mapping[str, Any] = packages.get("distributions") or {}
        self.by_folder: dict[str, dict[str, tuple[str, str]]] = {}
        # (source folder, name, version) of the editable installs, looked up for every module
        self.sources = [(source, name, str(d.get("version", "")))
                        for name, d in self.dists.items()
                        if isinstance(d, dict) and (source := editable_source(d))]

    def editable(self, path: str) -> tuple[str, str] | None:
        for source, name, version in self.sources:
            if _under(path, source):
                return name, version
        return None

    def lookup(self, folder: str, top: str) -> tuple[str, str] | None:
        index = self.by_folder.get(folder)
        if index is None:
            index = self.by_folder[folder] = self._index(folder)
        return index.get(top)

    def _index(self, folder: str) -> dict[str, tuple[str, str]]:
        out = _folder_index(folder)
        tops_of: dict[str, list[str]] = {}  # normalised distribution name -> its modules
        for top, (dist, _v) in out.items():
            tops_of.setdefault(_normal(dist), []).append(top)
        for d_name, d in self.dists.items():  # the probe's names and versions are canonical
            if isinstance(d, dict) and d.get("location") == folder:
                for top in tops_of.get(_normal(d_name), ()):
                    out[top] = (d_name, str(d.get("version", "")))
        return out


def _folder_index(folder: str) -> dict[str, tuple[str, str]]:
    """Top-level module -> (distribution, version) as the ``*.dist-info`` folders in ``folder``
    declare them, from the cache (:mod:`runsnap.tracing.distindex`) while ``folder`` is
    unchanged; built from the metadata (and kept) otherwise."""
    stamp = distindex.stamp(folder)
    if stamp is None:
        return {}
    cached = distindex.load(folder, stamp)
    if cached is not None:
        return cached
    out = _read_folder(folder)
    if distindex.stamp(folder) == stamp:  # nothing installed while it was read
        distindex.store(folder, stamp, out)
    return out


def _read_folder(folder: str) -> dict[str, tuple[str, str]]:
    """Top-level module -> (distribution, version), from each ``*.dist-info`` folder's
    ``top_level.txt``, else its ``RECORD`` (the first distribution listed claims a name)."""
    out: dict[str, tuple[str, str]] = {}
    try:
        entries = os.listdir(folder)
    except OSError:
        return out
    for entry in entries:
        if not entry.endswith(".dist-info"):
            continue
        meta = os.path.join(folder, entry)
        dist, _, version = entry[: -len(".dist-info")].partition("-")
        tops: set[str] = set()
        top_level = os.path.join(meta, "top_level.txt")
        if os.path.exists(top_level):
            tops.update(x.strip() for x in _lines(top_level) if x.strip())
        else:
            for line in _lines(os.path.join(meta, "RECORD")):
                first = line.split(",", 1)[0].split("/", 1)[0]
                if first and not first.endswith((".dist-info", ".data")) \
                        and not first.startswith(("..", "__pycache__")):
                    tops.add(first[:-3] if first.endswith(".py") else first.split(".")[0])
        for top in tops:
            out.setdefault(top, (dist, version))
    return out


def _normal(dist: str) -> str:
    """A distribution's name as the folder's metadata and the probe both spell it."""
    return dist.lower().replace("_", "-")


def _origin(path: str, proc: _Proc, dists: _Dists) -> tuple[str, str | None]:
    """Where ``path`` comes from, and the ``sys.path`` folder it sits in (if any)."""
    for entry in proc.pythonpath:
        if _under(path, entry):
            return "pythonpath", entry
    folders = sorted((e for e in proc.sys_path if e and _under(path, e)),
                     key=len, reverse=True)
    for entry in folders:
        if os.path.basename(entry.rstrip(os.sep)) in ("site-packages", "dist-packages"):
            return "site-packages", entry
    if dists.editable(path):
        return "editable", None
    stdlib = proc.stdlib
    if stdlib and _under(path, stdlib):
        return "stdlib", stdlib
    cwd = proc.cwd
    if cwd and _under(path, cwd):
        return "cwd", cwd
    return "other", folders[0] if folders else None


#: Variables whose native reads see runsnap's launch values, not the user's.
OURS = ("PYTHONPATH", "LD_PRELOAD")


def package_index(packages: Mapping[str, Any]) -> _Dists:
    """The index of module names to distributions for ``packages`` (a snapshot's
    ``[packages]``), every folder the distributions were found in indexed already: built while
    the child runs (see :meth:`runsnap.tracing.Trace.warm`), it is not built after it ends."""
    dists = _Dists(packages)
    for folder in sorted({str(d["location"]) for d in dists.dists.values()
                          if isinstance(d, dict) and d.get("location")}):
        dists.lookup(folder, "")
    return dists


def build_section(
    folder: str, packages: Mapping[str, Any], native_note: str,
    env_given: Mapping[str, str] | None = None, index: _Dists | None = None,
    started_ns: int | None = None, outcome: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``[runtime]`` from the trace ``folder`` (see docs/runtime.md for the shape), in its
    stored form (:func:`runsnap.snapshot.runtime_write.compact`; read it back with
    :func:`runsnap.snapshot.runtime.variables`).

    ``env_given``: the environment the user gave; whether ``PYTHONPATH`` and ``LD_PRELOAD``
    were set is taken from it, since native code sees runsnap's values of those two. ``index``:
    :func:`package_index` of ``packages``, when it was built beforehand. ``started_ns``:
    when the launch began, for :func:`~runsnap.tracing.datafiles.data_files`. ``outcome``: the
    run's ``[outcome]``, for the config values a failed run's error quoted
    (:func:`~runsnap.tracing.quoted.quote_values`).
    """
    python, native = read_logs(folder)
    processes: list[dict[str, Any]] = []
    env: dict[str, dict[str, Any]] = {}
    modules: dict[str, dict[str, Any]] = {}
    stdlib_modules: set[str] = set()
    bulk_sites: list[dict[str, Any]] = []
    dists = _Dists(packages) if index is None else index
    config_reads: set[str] = set()
    loaded: set[str] | None = set()
    for records in python:
        proc = _Proc(records[0])
        processes.append(proc.public)
        _merge_process(records, proc, env, modules, stdlib_modules, bulk_sites, dists)
        config_reads |= proc.config_reads
        # known only where every process said what it had mapped (a killed one did not)
        loaded = None if loaded is None or proc.libraries is None else loaded | set(
            proc.libraries)
    startup: dict[str, bool] = {}
    for pid, reads in sorted(native.items()):
        for name, (was_set, count, at_start) in reads.items():
            if name.startswith("RUNSNAP_TRACE_"):
                continue
            startup[name] = startup.get(name, True) and at_start
            if name in OURS and env_given is not None:
                was_set = name in env_given
            entry = env.setdefault(name, _new_var(was_set))
            entry["native"] = True
            entry["native_reads"] = entry.get("native_reads", 0) + count
            entry["set"] = entry["set"] or was_set
            if pid not in entry["pids"]:
                entry["pids"].append(pid)
    for entry in env.values():
        entry["pids"].sort()
        entry["bulk"] = entry["reads"] == 0 and entry["bulk_reads"] > 0 and not entry["native"]
        entry["sites"] = entry["sites"][:MAX_SITES]
        if not entry["sites"]:
            del entry["sites"]
        if not entry["via"]:
            del entry["via"]
    # a submodule noted by the hook (of the program's own packages) is no top-level module
    submodules = {n: str(modules.pop(n)["file"]) for n in sorted(m for m in modules if "." in m)}
    read_first = sorted(env, key=lambda n: (env[n]["reads"] == 0 and not env[n]["native"], n))
    section: dict[str, Any] = {
        "traced": bool(processes),
        "native": "observed" if not native_note else f"not observed: {native_note}",
        "processes": processes,
        "env": {name: env[name] for name in read_first},
        "modules": dict(sorted(modules.items())),
        "stdlib_modules": sorted(stdlib_modules),
    }
    if submodules:
        section["submodules"] = submodules
    if loaded is not None and processes:
        section["libraries_loaded"] = sorted(loaded)
    if bulk_sites:
        section["bulk_sites"] = bulk_sites
    if config_reads:
        section["config_reads"] = sorted(config_reads)
    parsed = parsed_options(python)  # see runsnap.tracing.parsed
    if parsed:
        section["parsed_options"] = parsed
    files, written, left_out = data_files(python, started_ns)  # see runsnap.tracing.datafiles
    # the count is written even when 0: a traced run with no data_files opened none, which a
    # snapshot of a runsnap that did not watch opens cannot say
    section.update({"data_files": files} if files else {}, **(
        {"data_files_written": written} if written else {}), data_files_left_out=left_out)
    if any(startup.values()):
        section["native_startup"] = sorted(n for n, yes in startup.items() if yes)
    if not processes:
        section["reason"] = "no Python process of the command reported (it ran no Python, or " \
                            "every Python ran with -I, -E or -S, which skip the hook)"
    if outcome:
        quote_values(section, outcome)  # the config values a failed run's error quoted
    return compact(section)


def _without_import_machinery(stack: Any) -> list[Any]:
    """A read's stack without the frames of the import system (``<frozen importlib.
    _bootstrap>``), which sit between every module body and the import that ran it and which
    Python's own tracebacks leave out too.

    >>> _without_import_machinery(["a.py:3 in <module>",
    ...     "<frozen importlib._bootstrap>:241 in _call_with_frames_removed", "b.py:1 in f"])
    ['a.py:3 in <module>', 'b.py:1 in f']
    """
    return [f for f in stack or () if not str(f).startswith("<frozen importlib.")]


class _Proc:
    """One traced process, read from its log's first record (``P``: what the probe's hook
    writes as the interpreter starts) into the fields the merge needs, once; ``public`` is its
    row of ``[runtime] processes``."""

    __slots__ = ("config_reads", "cwd", "libraries", "pid", "public", "pythonpath", "stdlib",
                 "sys_path")

    def __init__(self, rec: tuple[Any, ...]) -> None:
        fields = list(rec) + [None] * 11
        _p, pid, ppid, argv, executable, cwd, forked, stdlib, sys_path, pp = fields[:10]
        self.pid: Any = pid
        self.public: dict[str, Any] = {
            "pid": pid, "ppid": ppid, "argv": list(argv or []), "executable": executable or "",
            "how": "fork" if forked else "exec"}
        self.cwd: str = cwd or ""
        self.stdlib: str = stdlib or ""
        self.sys_path: list[str] = list(sys_path or [])
        self.pythonpath = [p for p in (pp[1:] if isinstance(pp, str) and pp else "").split(":")
                           if p]
        self.config_reads: set[str] = set()
        self.libraries: list[str] | None = None
        """The GPU and interconnect libraries it had mapped when it ended (``L``)."""


def _new_var(was_set: bool) -> dict[str, Any]:
    return {"set": was_set, "reads": 0, "bulk_reads": 0, "bulk": False, "python": False,
            "native": False, "pids": [], "via": [], "sites": []}


def _merge_process(
    records: list[tuple[Any, ...]], proc: _Proc, env: dict[str, dict[str, Any]],
    modules: dict[str, dict[str, Any]], stdlib_modules: set[str],
    bulk_sites: list[dict[str, Any]], dists: _Dists,
) -> None:
    pid = proc.pid
    counts: dict[int, int] = {}
    sites: dict[int, tuple[str, dict[str, Any]]] = {}
    bulks: dict[int, tuple[list[str], dict[str, Any]]] = {}
    ended: Any = "killed or still running"
    for rec in records[1:]:
        kind = rec[0]
        if kind == "S" and len(rec) >= 7:
            _k, site, name, via, was_set, value, stack = rec[:7]
            stack = _without_import_machinery(stack)
            entry = env.setdefault(name, _new_var(bool(was_set)))
            entry["python"] = True
            if was_set and "value" not in entry:
                entry["value"] = value
                entry["set"] = True
            elif was_set and entry.get("value") != value:
                others = entry.setdefault("other_values", [])
                if value not in others and len(others) < 8:
                    others.append(value)
            if via not in entry["via"]:
                entry["via"].append(via)
            if pid not in entry["pids"]:
                entry["pids"].append(pid)
            same = [r for r in entry["sites"] if r["stack"] == list(stack) and r["pid"] == pid
                    and r["via"] == via and r["set"] == bool(was_set)]
            if same:  # two calls on one line: one place for a reader
                row = same[0]
            else:
                row = {"stack": list(stack), "pid": pid, "via": via, "set": bool(was_set),
                       "reads": 0}
                entry["sites"].append(row)
            sites[site] = (name, row)
        elif kind == "B" and len(rec) >= 4:
            _k, site, stack, names = rec[:4]
            stack = _without_import_machinery(stack)
            row = {"stack": list(stack), "pid": pid, "reads": 1, "names": len(names)}
            row.update(scan_filter(list(stack), proc.sys_path))
            bulk_sites.append(row)
            bulks[site] = (list(names), row)
        elif kind == "W" and len(rec) >= 2:
            entry = env.setdefault(rec[1], _new_var(False))
            entry["written"] = True
        elif kind == "M" and len(rec) >= 3:
            _module(rec[1], rec[2], proc, modules, stdlib_modules, dists)
        elif kind == "F" and len(rec) >= 3 and isinstance(rec[2], str):
            proc.config_reads.add(rec[2])
        elif kind == "L" and len(rec) >= 2 and isinstance(rec[1], list):
            proc.libraries = [str(x) for x in rec[1]]
        elif kind == "C" and len(rec) >= 2 and isinstance(rec[1], dict):
            counts = rec[1]
        elif kind == "E":
            ended = "exited" if rec[1:2] in ((None,), ()) else f"os._exit({rec[1]})"
    proc.public["ended"] = ended
    for site, (name, row) in sites.items():
        n = int(counts.get(site, 1))
        row["reads"] += n
        env[name]["reads"] += n
    for site, (names, row) in bulks.items():
        row["reads"] = int(counts.get(site, 1))
        for name in names:
            entry = env.setdefault(name, _new_var(True))
            entry["bulk_reads"] += row["reads"]
            if pid not in entry["pids"]:
                entry["pids"].append(pid)


def _module(name: str, path: Any, proc: _Proc, modules: dict[str, dict[str, Any]],
            stdlib_modules: set[str], dists: _Dists) -> None:
    if name in modules or name in stdlib_modules or name.startswith("_frozen"):
        return
    if not isinstance(path, str) or not path:
        stdlib_modules.add(name)  # built into the interpreter
        return
    origin, folder = _origin(path, proc, dists)
    if origin == "stdlib":
        stdlib_modules.add(name)
        return
    entry: dict[str, Any] = {"file": path, "origin": origin}
    found = dists.editable(path) if origin == "editable" else (
        dists.lookup(folder, name) if folder else None)
    if found:
        entry["dist"], entry["version"] = found
    modules[name] = entry
