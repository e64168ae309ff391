"""Data files the runs opened (``[runtime.data_files]``): compared, shown once, and evidence.

A config, an eval set, a vocabulary the program opened for reading is an input it *took in*,
as a variable it read is. Two runs that opened the same path and found other content (another
sha256, or the file missing in one) differ by that file: :func:`compare` makes the difference
(``file PATH``), :func:`file_evidence` gives it ``read`` evidence (``named`` when the failing
error quotes the file's name), with the process and the frame that opened it. A file only one
run opened is where that run went (a consequence, folded like a variable read in one run
only); a file either run wrote is an output, never compared.

The same file seen twice is one difference (:func:`one_view`): an uncommitted edit or an
untracked file in a git tree that a run opened keeps its git difference (the patch is the
better view) and gets the run's evidence (:func:`edit_read`); a file under a model folder whose
``[models]`` entry differs is shown there. An edit to a file neither traced run opened is
``unread`` when its kind is read from Python only (:data:`runsnap.knowledge.datafiles.
PYTHON_READ`); a kind native code loads (``tokenizer.json``, a sentencepiece ``.model``) stays
without evidence: opens from C are not seen.

An output is not a cause (:func:`outputs`): a file git lists as changed or untracked that a
traced run opened for writing before it read it (``[runtime] data_files_written``: a log, a
metrics file, a results table that happens to be tracked) is rewritten by every run; its
difference is hidden, as a compiled cache's is, and so is the tree's ``dirty`` flag when every
changed file of the tree that differs is hidden. A launch option whose value is where a run
wrote (``--output gen-a.jsonl``, an ``--output-dir`` it wrote under) names a destination, not
an input (:func:`output_options`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from runsnap.diffing.failingpath import opened_on_failing_path
from runsnap.diffing.foundalone import found_alone
from runsnap.diffing.grouprecord import Group
from runsnap.diffing.handed import handed
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.naming import distinctive, excerpt
from runsnap.diffing.printedkeys import key_printed
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts
from runsnap.knowledge.datafiles import PYTHON_READ

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records_host import DataFile, Runtime

__all__ = ["by_named_file", "compare", "edit_read", "file_evidence", "folder_unopened",
           "key_quoted", "model_file_read", "one_view", "opener_stack",
           "output_options", "opened_failing", "outputs", "path_quoted"]


def _content(f: DataFile) -> str:
    """A file's content identity in words: ``sha256 d245e06b9b11, 8 bytes``, ``missing``."""
    if f.missing:
        return "missing"
    if f.sha256:
        part = "" if f.hashed in (None, "whole") else f" ({f.hashed})"
        return f"sha256 {str(f.sha256)[:12]}{part}, {f.size} bytes"
    if f.error:
        return str(f.error)
    return f"{f.size} bytes, not hashed" if f.size is not None else "not hashed"


def _comparable(f: DataFile) -> bool:
    """Whether ``f``'s content says something of the input: not an output of the run, and
    its identity known (hashed, or missing)."""
    return not f.written and (bool(f.sha256) or bool(f.missing))


def compare(xa: Runtime, xb: Runtime) -> list[Difference]:
    """``file PATH`` differences: opened in both with other content (``changed``), or opened
    in one run only (``added``/``removed``, folded as consequences)."""
    out: list[Difference] = []
    fa, fb = xa.data_files, xb.data_files
    for path in sorted(set(fa) | set(fb)):
        x, y = fa.get(path), fb.get(path)
        where = ("runtime", "data_files", path)
        if x is not None and y is not None:
            if _comparable(x) and _comparable(y) and _content(x) != _content(y):
                out.append(Difference("runtime", f"file {path}", "changed", _content(x),
                                      _content(y), evidence=(*_key_lines(x, y),
                                                             _opened("A", xa, x),
                                                             _opened("B", xb, y)), path=where))
        elif x is not None and not x.written:
            out.append(Difference("runtime", f"file {path}", "removed", _content(x), None,
                                  evidence=("opened in A only",), path=where))
        elif y is not None and not y.written:
            out.append(Difference("runtime", f"file {path}", "added", None, _content(y),
                                  evidence=("opened in B only",), path=where))
    return out


def _key_lines(x: DataFile, y: DataFile) -> tuple[str, ...]:
    """``keys only in A: warmup_steps`` and B's: a config's keys that one copy alone holds."""
    ka, kb = set(x.keys or ()), set(y.keys or ())
    return tuple(f"keys only in {side}: {', '.join(sorted(only))}"
                 for side, only in (("A", ka - kb), ("B", kb - ka)) if only)


def _frame(f: DataFile) -> str:
    """The innermost frame of the program or a library that opened ``f`` (the standard
    library's ``pathlib``, ``codecs``, ``json`` are how, not who)."""
    std: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    for entry in f.stack:
        top = str(entry).split(":", 1)[0].split("/", 1)[0].removesuffix(".py")
        if top not in std:
            return str(entry)
    return str(f.stack[0]) if f.stack else "an unknown place"


def _opened(side: str, rt: Runtime, f: DataFile) -> str:
    """``B: opened at prog.py:5 in <module> (pid 41, prog.py)``: the first process that
    opened it, named by its script (or its program), and how many more did."""
    pid = f.pids[0] if f.pids else None
    argv = next((list(p.argv) for p in rt.processes if p.pid == pid), [])
    script = next((os.path.basename(str(a)) for a in argv[1:] if not str(a).startswith("-")),
                  os.path.basename(str(argv[0])) if argv else "")
    who = f"pid {pid}" + (f", {script}" if script else "") if pid is not None else ""
    more = f", {len(f.pids)} processes" if len(f.pids) > 1 else ""
    return f"{side}: opened at {_frame(f)}" + (f" ({who}{more})" if who else "")


def file_evidence(d: Difference, a: Snapshot, b: Snapshot,
                  said: Sequence[tuple[str, str, int, Any]],
                  runs: Sequence[RunFacts] = ()) -> Evidence | None:
    """The evidence for a ``file PATH`` difference. A failing error that quotes a key one
    side's copy alone holds (:func:`key_quoted`): the run opened the file, and what it brought
    in or lost reached the code that raised, as a quoted value does (``failing-path``, the
    value quoted). Otherwise, for a file both runs opened with other content: ``named`` when a
    text in ``said`` (:func:`runsnap.diffing.naming.texts`: the failing errors, a warning of
    one run) quotes the file's name, else ``read``. A file one run alone opened has evidence
    by a quoted key, by a key of it both runs printed with other values (``named``:
    :func:`runsnap.diffing.printedkeys.key_printed`), or when found alone in its tree (it is
    otherwise a consequence)."""
    if d.path[:2] != ("runtime", "data_files") or len(d.path) < 3:
        return None
    path = str(d.path[2])
    got = b.records.runtime.data_files.get(path) or a.records.runtime.data_files.get(path)
    side = "B" if path in b.records.runtime.data_files else "A"
    where = _opened(side, (b if side == "B" else a).records.runtime, got) if got else ""
    keyed = key_quoted(d, a, b, said, runs) or value_quoted(d, a, b, runs)
    if keyed:
        return Evidence("failing-path", f"{keyed}; {where}", corroborated=True, quoted=True)
    printed = key_printed(d, a, b, runs)
    if printed:
        return Evidence("named", f"{printed}; {where}", corroborated=True)
    if d.change != "changed":
        alone = found_alone(d, a, b)
        return Evidence("read", f"{alone}; {where}") if alone else None
    base = os.path.basename(path)
    for place, text, rank, _run in said:
        if base and base in text:
            return Evidence("named", (f"{place} names the data file {base}, which both runs "
                                      f"opened with other content; {where}"), rank=rank)
    return Evidence("read", f"the program opened it in both runs, with other content; {where}")


def by_named_file(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """Groups (:class:`~runsnap.diffing.grouprecord.Group`) of a file one run alone opened
    under the differing option, variable or edit whose value on that run's side names it (its
    path, or its name as a word; an edit's added lines: a config that now lists
    ``data/shards/part-4.pt``): ``--eval-file data/dev2.jsonl`` with ``data/dev2.jsonl``; for an
    option that side left out, the value its parser gave it (``[runtime] parsed_options``:
    the default ``data/dev.jsonl`` the other run opened)."""
    files = [d for d in diffs if d.path[:2] == ("runtime", "data_files") and len(d.path) > 2
             and d.change in ("added", "removed")]
    inputs = [d for d in diffs if d.section in ("command", "env", "git") and d.change != "reordered"]
    claimed: dict[int, list[Difference]] = {}
    for f in files:
        path = str(f.path[2])
        base = os.path.basename(path)
        snap = b if f.change == "added" else a
        for d in inputs:
            value = str((d.b if f.change == "added" else d.a) or "")
            if d.section == "git":  # an edit: the lines its patch brought in
                value = "\n".join(str(e) for e in d.evidence if str(e).startswith("+"))
            if not value and d.section == "command" and snap is not None:
                # the option left out: the value its parser gave it (its default)
                got = snap.records.runtime.parsed_options.get(d.key)
                value = str(got.value or "") if got is not None else ""
            if value and (path in value or (len(base) > 3 and re.search(
                    r"(?<![\w.-])" + re.escape(base) + r"(?![\w-])", value))):
                claimed.setdefault(id(d), []).append(f)
                break
    return [Group(d, tuple(claimed[id(d)])) for d in inputs if id(d) in claimed]


def _keys(snap: Snapshot, path: str) -> frozenset[str]:
    got = snap.records.runtime.data_files.get(path)
    return frozenset(str(k) for k in (got.keys or ())) if got is not None else frozenset()


def _key_in(key: str, text: str) -> bool:
    """Whether ``text`` quotes ``key``: a whole word, and a plain word of letters only
    (``epochs``, ``model``) only in quotes, as a message quotes a name."""
    if len(key) < 4:
        return False
    if key.isalpha():
        return re.search(r"""(['"`])""" + re.escape(key) + r"\1", text) is not None
    return re.search(r"(?<![\w.-])" + re.escape(key) + r"(?![\w-])", text) is not None


def key_quoted(d: Difference, a: Snapshot, b: Snapshot,
               said: Sequence[tuple[str, str, int, Any]],
               runs: Sequence[RunFacts] = ()) -> str | None:
    """The sentence when a failing run's error (rank 0 of ``said``) quotes a key that one
    run's copy of the config file of ``d`` holds and the other's does not (a file one run alone
    opened: any of its keys), and no other run printed that key: ``Option 'lr_schedule' is not
    accepted`` for the ``~/.config/app/defaults.yaml`` only B's home held
    (``[runtime.data_files] keys``: names, never values)."""
    path = str(d.path[2])
    ka, kb = _keys(a, path), _keys(b, path)
    for place, text, rank, run in said:
        if rank != 0:
            continue
        others = [line for g in runs if g is not run for line in (*g.errors, *g.warnings, *g.tail)]
        for key in sorted(ka ^ kb, key=lambda k: (-len(k), k)):
            if _key_in(key, text) and not any(_key_in(key, line) for line in others):
                side = "B" if key in kb else "A"
                return (f"{place} quotes {key}, a key only {side}'s copy of the file holds: "
                        f"\"{excerpt(text, key, 24)}\"")
    return None


def value_quoted(d: Difference, a: Snapshot, b: Snapshot, runs: Sequence[RunFacts]) -> str | None:
    """The sentence when a failing run's own error quoted a value its copy of the config file
    of ``d`` gives a key (``[runtime.data_files] quoted``, taken at capture:
    runsnap/tracing/quoted.py) and the token is distinctive (no other run printed it, no other
    differing input holds it): ``KeyError: 'churned'`` for the ``.env`` whose
    ``LABEL_COLUMN=churned`` only B loaded."""
    path = str(d.path[2])
    for snap, run in zip((a, b), runs, strict=False):
        row = snap.records.runtime.data_files.get(path)
        if row is None or not run.failed or run.shared_failure:
            continue
        for key, token in sorted(dict(row.quoted or {}).items()):
            if distinctive(str(token), run, runs):
                return (f"failing run {run.label}'s error quotes {str(token)!r}, the value its "
                        f"copy of the file gives {key}")
    return None


def _repo_file(d: Difference, snap: Snapshot | None) -> str:
    repo, _, rel = d.key.partition(": ")
    got = snap.records.git.repos.get(repo) if snap is not None else None
    root = str(got.path or "") if got is not None else ""
    return os.path.normpath(os.path.join(root, rel)) if root and rel else ""


def opener_stack(d: Difference, snap: Snapshot) -> tuple[str, ...]:
    """Where run ``snap`` opened the file of ``d`` (a ``file PATH`` difference, or a git
    difference of one file) for reading: the opener's stack, innermost first; ``()`` when
    it did not."""
    if d.path[:2] == ("runtime", "data_files") and len(d.path) > 2:
        full = str(d.path[2])
    elif d.section == "git" and ": " in d.key:
        full = _repo_file(d, snap)
    else:
        return ()
    got = snap.records.runtime.data_files.get(full) if full else None
    if got is None or got.written:
        return ()
    return tuple(str(x) for x in (got.stack or ()))


def path_quoted(d: Difference, a: Snapshot, b: Snapshot,
                said: Sequence[tuple[str, str, int, Any]]) -> str | None:
    """The sentence when a failing run's error (rank 0 of ``said``) quotes the full path of a
    git difference's file (``REPO: PATH``) as that run's tree holds it: ``ImportError: cannot
    import name 'load_dataset' from 'datasets' (/home/u/review-clf/datasets.py)`` for an
    untracked ``datasets.py``. The whole path, not the file's name: a ``train.py`` of another
    tree names nothing here."""
    if d.section != "git" or ": " not in d.key:
        return None
    for place, text, rank, run in said:
        full = _repo_file(d, b if getattr(run, "label", "") == "B" else a)
        if rank == 0 and full and re.search(re.escape(full) + r"(?![\w./-])", text):
            return f"{place} quotes the file's path: \"{excerpt(text, full, 24)}\""
    return None


def edit_read(d: Difference, a: Snapshot, b: Snapshot) -> tuple[str, str] | None:
    """``(kind, sentence)`` for a git difference of one file (``REPO: PATH``, an uncommitted
    edit or an untracked file) that is not Python code: ``read`` when a traced run opened it
    for reading, ``unread`` when both were traced, neither opened it, and its kind is read
    from Python only; None when the runs cannot say."""
    full = _repo_file(d, a) or _repo_file(d, b)
    if not full or full.endswith(".py"):
        return None
    opened = any(full in snap.records.runtime.data_files_written for snap in (a, b))
    for side, snap in (("B", b), ("A", a)):
        got = snap.records.runtime.data_files.get(full)
        if got is not None and not got.written:
            return "read", (f"the program opened the file for reading while it ran: "
                            f"{_opened(side, snap.records.runtime, got)}")
        opened = opened or got is not None
    if opened:  # written by the run (an output: see outputs), or read and then rewritten
        return None
    rts = (a.records.runtime, b.records.runtime)
    if all(rt.traced and rt.has("data_files") for rt in rts) and full.endswith(PYTHON_READ):
        return "unread", ("no process opened it in either run (both traced; its kind is read "
                          "from Python): the edit was not read")
    for side, snap in (("B", b), ("A", a)):
        given = handed(full, snap)
        if given is not None:
            return "read", (f"the program was handed the file: {given} in {side} (a library "
                            "opens it outside Python's open(), which the trace does not see)")
    return None


def model_file_read(d: Difference, a: Snapshot, b: Snapshot) -> Evidence | None:
    """``read`` evidence when a run opened the file of a ``[models]`` file difference (``SRC:
    file NAME``, in the model's folder) for reading: the view :func:`one_view` keeps for it."""
    src, _, what = d.key.partition(": file ")
    for side, snap in (("B", b), ("A", a)):
        model = snap.records.models.models.get(src) if what else None
        got = (snap.records.runtime.data_files.get(os.path.join(str(model.path), what))
               if model is not None and model.path else None)
        if got is not None and not got.written:
            return Evidence("read", "the program opened the file for reading while it ran: "
                            f"{_opened(side, snap.records.runtime, got)}")
    return None


def one_view(found: Sequence[Difference], a: Snapshot, b: Snapshot) -> list[Difference]:
    """``found`` without a ``file PATH`` difference that another view shows: a git difference
    of that file, or a ``[models]`` difference of the model folder it lies in."""
    files = [d for d in found if d.path[:2] == ("runtime", "data_files") and len(d.path) > 2]
    if not files:
        return list(found)
    shown: set[str] = set()
    folders: list[str] = []
    for d in found:
        if d.section == "git" and ": " in d.key:
            shown |= {p for p in (_repo_file(d, a), _repo_file(d, b)) if p}
        elif d.section == "models":
            src = d.key.partition(": ")[0]
            folders += [str(m.path).rstrip("/") + "/" for s in (a, b)
                        for m in (s.records.models.models.get(src),) if m is not None and m.path]
    ids = {id(d) for d in files}
    return [d for d in found if id(d) not in ids or not (
        str(d.path[2]) in shown or str(d.path[2]).startswith(tuple(folders)))]


def outputs(ranked: Sequence[Difference], a: Snapshot, b: Snapshot) -> list[Difference]:
    """``ranked`` with the runs' outputs hidden: a git difference of one file (``REPO: PATH``)
    that a traced run opened for writing before it read it, and a tree's ``dirty`` flag when
    every changed file of that tree that differs is hidden (outputs, compiled caches)."""
    written = {side: frozenset(snap.records.runtime.data_files_written)
               for side, snap in (("A", a), ("B", b))}
    out: list[Difference] = []
    for d in ranked:
        if d.section == "git" and ": " in d.key and not d.hidden:
            full = {p for p in (_repo_file(d, a), _repo_file(d, b)) if p}
            who = [side for side, paths in written.items() if full & paths]
            if who:
                d = d.replace(hidden=True, reason=(
                    f"an output of the run: run {' and '.join(who)} opened it for writing "
                    f"before reading it, so each run rewrites it; not an input ({d.reason})"))
        out.append(d)
    return [_dirty(d, out) for d in out]


def _dirty(d: Difference, found: Sequence[Difference]) -> Difference:
    """``d``, hidden when it is a tree's ``dirty`` flag and the files of that tree that differ
    are all hidden (and its diffs were not cut: no ``REPO.diff`` difference)."""
    if d.section != "git" or not d.key.endswith(".dirty") or d.hidden:
        return d
    repo = d.key[: -len(".dirty")]
    files = [x for x in found if x.section == "git" and x.key.startswith(repo + ": ")]
    if not files or not all(x.hidden for x in files) or any(
            x.section == "git" and x.key == f"{repo}.diff" for x in found):
        return d
    return d.replace(hidden=True, reason=(
        f"the tree's only changes that differ are hidden ({len(files)} file"
        f"{'s' if len(files) != 1 else ''}: outputs of the run, compiled caches); {d.reason}"))


def _written_under(value: object, cwd: str, written: frozenset[str]) -> str:
    """The first of ``written`` that ``value`` (a path, relative to ``cwd`` or absolute) is, or
    holds (a folder the run wrote under); ``""`` when none."""
    text = str(value or "")
    if not text or "\n" in text or text.startswith("-"):
        return ""
    path = os.path.normpath(os.path.join(cwd, text)) if cwd else os.path.normpath(text)
    if not os.path.isabs(path) or path == "/":
        return ""
    for w in sorted(written):
        if w == path or w.startswith(path.rstrip("/") + "/"):
            return w
    return ""


def output_options(a: Snapshot, b: Snapshot, found: Sequence[Difference]) -> dict[str, str]:
    """Options that differ and whose value is where a traced run wrote (``[runtime]
    data_files_written``): the file itself, or a folder the run wrote files under. Keyed by the
    option (``--output``), with what was written, in words. A destination that differs between
    two runs (``gen-a.jsonl``, ``gen-b.jsonl``) is where each kept its results, not something
    either took in; an error that quotes it (an unwritable folder) still names it
    (:mod:`runsnap.diffing.evidence` outranks this)."""
    out: dict[str, str] = {}
    for d in found:
        if d.section != "command" or not d.key.startswith("--") or d.hidden:
            continue
        for side, snap, value in (("A", a, d.a), ("B", b, d.b)):
            rt = snap.records.runtime
            got = _written_under(value, str(snap.records.command.cwd or ""),
                                 frozenset(str(w) for w in rt.data_files_written))
            if got:
                out[d.key] = f"run {side} wrote {os.path.basename(got)} there"
                break
    return out


def _file_like(path: str) -> bool:
    """Whether ``path`` names a file by its suffix (``vocab.txt``), not a folder (``.cache``).

    >>> _file_like("/work/vocab-2025-03.txt"), _file_like("/home/u/.cache"), _file_like("/tmp/x")
    (True, False, False)
    """
    base = os.path.basename(path)
    stem, dot, suffix = base.rpartition(".")
    return bool(stem) and bool(dot) and 0 < len(suffix) <= 5 and suffix.isalnum()


def folder_unopened(d: Difference, a: Snapshot, b: Snapshot) -> str:
    """For a variable whose values are folders (``TORCHINDUCTOR_CACHE_DIR``, a cache home):
    ``"neither run read a file under it"`` in words, when both runs were traced with their
    file opens recorded in full (none left out) and no file either opened for reading lies
    under either value, nor one it wrote where a run failed writing (an output elsewhere
    changes nothing else: a tracker's telemetry file under another ``HOME``); or "every file
    the runs read under it was their own scratch" when each file read there was the run's own
    temporary: written by it before it read it, or gone when it ended (``TMPDIR``, where a
    job stages its shards: it decided where they went, not what was read); ``""`` when a run
    may have used it, or cannot say.
    Opens from C are not seen (``[runtime.data_files]``): a folder only native code reads
    (safetensors weights) is never judged unopened, since Python opens its config beside."""
    folders = [os.path.normpath(str(v)) for v in (d.a, d.b)
               if isinstance(v, str) and os.path.isabs(v) and "\n" not in v and ":" not in v]
    if not folders or any(f == "/" or _file_like(f) for f in folders):
        return ""  # a file's path (vocab-2025-03.txt) the run never opened may be why it failed
    scratch = False
    for snap in (a, b):
        rt = snap.records.runtime
        watched = rt.has("data_files") or rt.data_files_left_out == 0  # opens recorded
        if not rt.traced or not watched or rt.data_files_left_out:
            return ""
        out = snap.records.outcome
        said = " ".join(str(e) for e in (out.first_error, *out.errors) if e)
        # a file written there counts where a run failed writing (its outputs went there;
        # what it decides of the outcome is whether they could)
        wrote = {str(w) for w in rt.data_files_written}
        if _WRITE_FAILED.search(said) and any(_inside(w, folders) for w in wrote):
            return ""
        for path, row in rt.data_files.items():
            if not _inside(path, folders):
                continue
            if not (row.missing or path in wrote):  # not merely modified: read, then rewritten
                return ""  # a file the run found there: what the folder held came in
            scratch = True
    where = " or ".join(dict.fromkeys(folders))
    if scratch:
        return (f"every file the runs read under {where} was their own scratch (written by the "
                "run before it read them, or gone when it ended): it decided where, not what")
    return f"neither run read a file under {where}"


def _inside(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


#: How a failed write reads (errno's strerror texts, CPython's OSError subclasses).
_WRITE_FAILED = re.compile(r"Permission denied|Read-only file system|No space left on device|"
                           r"Disk quota exceeded|PermissionError|IsADirectoryError|"
                           r"FileExistsError|NotADirectoryError")


def opened_failing(d: Difference, ev: Evidence | None, a: Any, b: Any,
                   runs: Sequence[RunFacts]) -> Evidence | None:
    """``ev``, or ``failing-path`` evidence when the failing run opened the file of ``d`` in a
    function of its failing traceback (:func:`runsnap.diffing.failingpath.
    opened_on_failing_path`): its content went where the run failed, as a value read there
    did. Stronger evidence is left as it is."""
    if ev is not None and ev.kind in ("failing-path", "named"):
        return ev
    for snap, run in zip((a, b), runs, strict=True):
        stack = opener_stack(d, snap)
        found = opened_on_failing_path(stack, run) if stack else None
        if found is not None:
            return Evidence("failing-path", found[0], rank=found[1])
    return ev
