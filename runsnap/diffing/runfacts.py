"""What one run did, read from its snapshot: the facts evidence is made of (its ``[runtime]``
reads and imports, its failing traceback, errors and warnings), and the words a text names."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from runsnap.base.records import FrozenRecord
from runsnap.base.timestamps import without_timestamp
from runsnap.diffing.written import record, written
from runsnap.knowledge.packages import normalize_name
from runsnap.snapshot.records import Frame, Traceback
from runsnap.snapshot.records_host import BulkSite, ImportedModule, VariableRead
from runsnap.snapshot.runtime import bulk_sites as runtime_bulk_sites
from runsnap.snapshot.runtime import variables as runtime_variables

__all__ = ["SITE", "STDLIB", "RunFacts", "ScannedRead", "differential", "failure_key", "went_further",
           "scanned_as", "tokens"]


#: A read site's frame: ``path/file.py:LINE in FUNC``.
SITE = re.compile(r"^(?P<path>.+?):(?P<line>\d+) in (?P<func>.+)$")
# Frames of Python's own library, not the program's: they do not count as levels of the
# program between a read and a raise (json.decoder raising under the function that read).
STDLIB = re.compile(r"/lib/python\d+\.\d+/(?!site-packages/|dist-packages/)|^<frozen ")


#: How many of each stream's last lines :attr:`RunFacts.tail` keeps.
TAIL_LINES = 12
_OF: dict[tuple[int, str], tuple[Any, RunFacts]] = {}


class ScannedRead(VariableRead):
    """A read no snapshot writes: a variable found by a scan of the environment that kept the
    names of a prefix or suffix (:meth:`RunFacts.scanned`); ``sites``: the scan's stack."""

    scan: str | None
    """The names the scan kept: ``TQDM_*``, ``*_proxy``."""


def scanned_as(got: VariableRead) -> str | None:
    """The names kept by the scan ``got`` was found in (``TQDM_*``); None for a read by name."""
    return got.scan if isinstance(got, ScannedRead) else None


class RunFacts(FrozenRecord):
    """What one snapshot says the run did."""

    label: str
    """``A`` or ``B``."""

    traced: bool
    """The run's Python processes were traced (``[runtime] traced``)."""

    native: bool
    """Native reads (``getenv`` in C libraries) were observed too."""

    env: Mapping[str, Mapping[str, Any]]
    """``[runtime.env]``: variable -> what the program did with it, as written (read through
    :meth:`reads`, a :class:`~runsnap.snapshot.records_host.VariableRead`)."""

    modules: Mapping[str, Mapping[str, Any]]
    """``[runtime.modules]``: top-level package -> file, dist, version, origin, as written
    (read through :meth:`module` and :meth:`imported`)."""

    failed: bool
    """The run ended with a non-zero status or a signal."""

    traceback: Traceback | None
    """``[outcome] traceback`` (the last one printed)."""

    errors: tuple[str, ...]
    """The traceback's exception line and the first error line (when another)."""

    warnings: tuple[str, ...]
    """The run's distinct warning lines."""

    earlier: tuple[Traceback, ...] = ()
    """``[outcome] earlier_tracebacks``: a worker's, before its launcher's own."""

    status: Any = None
    """``[outcome] exit_status`` (128+N for a signal)."""

    first_error: str = ""
    """``[outcome] first_error``."""

    stdlib: frozenset[str] = frozenset()
    """``[runtime] stdlib_modules``: the top-level modules of Python's own library it used."""

    bulk_sites: tuple[BulkSite, ...] = ()
    """``[runtime] bulk_sites``: places that read the whole environment."""

    tail: tuple[str, ...] = ()
    """The last :data:`TAIL_LINES` lines of ``[outcome] stderr`` then ``stdout``: a failing
    run's last words, where an engine's message may stand when no traceback carries it."""

    config_reads: frozenset[str] = frozenset()
    """``[runtime] config_reads``: the fields of a loaded model config the program read."""

    native_startup: frozenset[str] = frozenset()
    """``[runtime] native_startup``: variables native code read only at a start-up, never
    while the program ran."""

    pids: tuple[int, ...] = ()
    """The traced Python processes of the run that read a variable from Python: not a helper
    that read none (multiprocessing's resource tracker; :func:`_reading`)."""

    forked: tuple[tuple[int, int], ...] = ()
    """``(child, parent)`` for each process made by ``fork``: it starts with its parent's
    memory (modules imported, settings read at their import) and reads none of them again."""

    shared_failure: bool = False
    """Both runs failed the same way (:func:`differential`): no evidence of what differs."""

    trees: tuple[tuple[str, str, frozenset[str], str], ...] = ()
    """The git trees: ``(folder, commit, files changed or untracked, the diff stored whole)``."""

    crowd: frozenset[str] = frozenset()
    """The value tokens two or more differing inputs (variables, options, config fields)
    hold, on either side (:func:`runsnap.diffing.quoting.crowd`): a token inputs share
    singles out none of them when an error quotes it."""

    prefix: str = ""
    """``[packages] prefix``: the Python environment the run's interpreter ran in."""

    alone: bool = False
    """One process ran: no other Python process, no other pid among the variables' readers."""

    @classmethod
    def of(cls, snap: Any, label: str) -> RunFacts:
        """The facts of a :class:`~runsnap.snapshot.Snapshot` (any missing section: none); the
        last few kept (the N-way diff asks again per rank; a snapshot is frozen)."""
        key = (id(snap), label)
        hit = _OF.get(key)
        if hit is not None and hit[0] is snap:
            return hit[1]
        facts = cls._of(snap, label)
        if len(_OF) >= 8:
            _OF.pop(next(iter(_OF)))
        _OF[key] = (snap, facts)
        return facts

    @classmethod
    def _of(cls, snap: Any, label: str) -> RunFacts:
        runtime, out = snap.records.runtime, snap.records.outcome
        env: Mapping[str, Mapping[str, Any]] = runtime_variables(runtime.raw)
        tb = out.traceback if out.traceback.frames else None
        status = out.exit_status
        failed = bool(out) and (status not in (0, None) or bool(out.signal))
        earlier = tuple(t for t in out.earlier_tracebacks if t.frames)
        errors = [f"{written(t, 'type')}: {written(t, 'message')}"
                  for t in ((tb,) if tb else ()) + earlier]
        first = str(out.first_error or "")
        if first and first not in errors:
            errors.append(first)
        return cls(
            label=label,
            traced=bool(runtime.traced),
            native=str(runtime.native or "").startswith("observed"),
            env=env,
            modules=runtime.raw["modules"] if runtime.has("modules") else {},  # as written
            prefix=str(snap.records.packages.prefix or ""),
            failed=failed,
            traceback=tb,
            earlier=earlier,
            errors=tuple(errors),
            warnings=tuple(str(w) for w in out.warnings),
            status=status,
            first_error=first,
            stdlib=frozenset(str(m) for m in runtime.stdlib_modules),
            bulk_sites=tuple(BulkSite(row) for row in runtime_bulk_sites(runtime.raw)),
            config_reads=frozenset(str(f) for f in runtime.config_reads if isinstance(f, str)),
            native_startup=frozenset(str(n) for n in runtime.native_startup),
            pids=_reading(runtime.processes, env),
            alone=len({p.pid for p in runtime.processes}
                      | {p for row in env.values() for p in record(VariableRead, row).pids}) == 1,
            forked=tuple((p.pid, p.ppid) for p in runtime.processes
                         if p.how == "fork" and isinstance(p.pid, int)
                         and isinstance(p.ppid, int)),
            tail=tuple(str(line) for stream in (out.stderr, out.stdout)
                       for line in stream.tail[-TAIL_LINES:]),
            trees=tuple((str(r.path).rstrip("/"), str(r.commit or ""), frozenset(
                [str(c.path) for c in r.changed if c.path]
                + [str(u.path) for u in r.untracked if u.path]),
                "" if r.diff_truncated else str(r.diff or ""))
                for r in snap.records.git.repos.values() if r.path),
        )

    def views(self) -> list[RunFacts]:
        """This run once per traceback it printed (the last first), when it failed in a way
        the other run did not (a failure both share tells nothing about what differs); each
        keeps the tracebacks printed before its own as ``earlier`` (the exception it was raised
        while handling is one of them)."""
        if not self.failed or self.shared_failure:
            return []
        earlier = list(self.earlier)
        last = [self.replace(traceback=self.traceback)] if self.traceback else []
        return last + [self.replace(traceback=t, earlier=tuple(earlier[:i]))
                       for i, t in enumerate(earlier)]

    def reads(self, name: str) -> VariableRead | None:
        """What the program did with variable ``name``, when it read it at all: by name, or
        in a scan of the variables that share a prefix (:meth:`scanned`)."""
        got = self.env.get(name)
        if not got:
            return None
        read = record(VariableRead, got)
        if not (read.python or read.native or read.reads):
            return self.scanned(name)
        return read

    def module(self, top: str) -> ImportedModule | None:
        """``[runtime.modules]``' row of top-level module ``top``, when it was imported."""
        table = self.modules.get(top)
        return ImportedModule(table) if isinstance(table, Mapping) else None

    def imported(self) -> Iterator[tuple[str, ImportedModule]]:
        """Each top-level module imported, with its row (``[runtime.modules]``)."""
        for mod, table in self.modules.items():
            if isinstance(table, Mapping):
                yield str(mod), ImportedModule(table)

    def _bulk(self, name: str) -> bool:
        """Whether ``name`` was seen in a read of the whole environment."""
        got = self.env.get(name)
        read = record(VariableRead, got) if got else None
        return read is not None and bool(read.bulk or read.bulk_reads)

    def scanned(self, name: str) -> ScannedRead | None:
        """``name`` as read by a scan of the whole environment that kept the variables of a
        prefix or suffix: the literals the scanning code filters by (``[runtime] bulk_sites``
        ``prefixes``, ``suffixes``: urllib's ``*_proxy``), or, when its filter is computed, the
        scanning package's own name (``TQDM_`` for ``tqdm``). The result has the shape of a
        read (``sites``: the scan's stack), with ``scan``: the names it kept (``TQDM_*``,
        ``*_proxy``)."""
        if not self._bulk(name):
            return None
        for row in self.bulk_sites:
            if row.scan is False:
                continue  # a copy of every variable, which keeps none in particular
            stack = [str(x) for x in _stack(row)]
            prefixes = [str(p) for p in row.prefixes]
            suffixes = [str(p) for p in row.suffixes]
            contains = [str(p) for p in row.contains]
            if name in row.kept:
                return self._scan_read(row, stack, name)
            for part in contains:
                if len(part) >= 3 and part in name and name != part:
                    return self._scan_read(row, stack, "*" + part + "*")
            if not (prefixes or suffixes or contains or row.kept) or row.scan is None:
                top = next((_top(s) for s in stack if not _top(s).startswith("<")
                            and _top(s) not in self.stdlib), "")
                if top and top in self.modules:
                    prefixes.append(top.upper() + "_")
            upper, lower = name.upper(), name.lower()
            for prefix in prefixes:
                if len(prefix) >= 3 and upper.startswith(prefix.upper()) and name != prefix:
                    return self._scan_read(row, stack, prefix + "*")
            for suffix in suffixes:
                if len(suffix) >= 3 and lower.endswith(suffix.lower()) and len(name) > len(suffix):
                    return self._scan_read(row, stack, "*" + suffix)
        return None

    @staticmethod
    def _scan_read(row: BulkSite, stack: list[str], scan: str) -> ScannedRead:
        return ScannedRead({"set": True, "python": True, "reads": int(row.reads or 1),
                            "sites": [{"stack": stack, "pid": row.pid}], "scan": scan})

    def _copies(self) -> list[BulkSite]:
        """The bulk reads that copied every variable (or whose code was not there to say),
        not scans that kept some."""
        return [r for r in self.bulk_sites if r.scan is not True and not (
            r.scan is None and (r.prefixes or r.suffixes or r.contains or r.kept))]

    def bulk_site(self, name: str) -> str:
        """Where ``name`` was seen in a bulk copy (``file:line`` of the first copy's first
        frame outside Python's own library), or ``""``."""
        if not self._bulk(name):
            return ""
        for row in self._copies():
            for entry in _stack(row):
                text = str(entry)
                if not _top(text).startswith("<") and _top(text) not in self.stdlib:
                    return text.split(" in ", 1)[0]
        return ""

    def copy_owner(self, name: str) -> str:
        """The installed package (never the program's own script) that copied the environment
        in bulk and whose own setting ``name`` is by name (``gunicorn/config.py`` copies it and
        reads ``GUNICORN_CMD_ARGS`` from the copy), or ``""``: that package's read."""
        owner = self.installed_at(self.bulk_site(name))
        return owner if len(owner) >= 3 and name.lower().startswith(owner.lower() + "_") else ""

    def installed_at(self, where: str) -> str:
        """The installed package whose code is at ``where`` (``dotenv/main.py:311``), or ``""``."""
        top = where.replace("\\", "/").split("/", 1)[0].split(":", 1)[0].removesuffix(".py")
        mod = self.module(top) if len(top) >= 2 else None
        return top if mod is not None and mod.origin in ("site-packages", "editable") else ""

    def bulk_only(self, name: str) -> bool:
        """Whether ``name`` was only seen in copies of the whole environment (passed on to a
        child, which may read it): neither read nor unread. Scans that kept other names
        leave it unread."""
        if name not in self.env or self.reads(name) is not None:
            return False
        return self._bulk(name) and bool(self._copies())

    def dists_imported(self) -> dict[str, tuple[str, ImportedModule]]:
        """Normalised distribution name -> (top-level package, its module's row)."""
        out: dict[str, tuple[str, ImportedModule]] = {}
        for mod, row in self.imported():
            out.setdefault(normalize_name(str(row.dist or mod)), (mod, row))
        return out


def _reading(processes: Sequence[Any], env: Mapping[str, Mapping[str, Any]]
             ) -> tuple[int, ...]:
    """The pids of ``processes`` with a read site in ``env`` (a read from Python; the
    interpreter's native start-up reads every process makes), else all of them."""
    pids = tuple(p.pid for p in processes if isinstance(p.pid, int))
    readers: set[int] = set()
    for row in env.values():
        readers.update(site.pid for site in record(VariableRead, row).sites
                       if isinstance(site.pid, int))
    return tuple(p for p in pids if p in readers) or pids


def _stack(row: BulkSite) -> tuple[Any, ...] | list[Any]:
    """A bulk read's stack, innermost first (``[runtime] bulk_sites`` come with whole stacks:
    :func:`runsnap.snapshot.runtime.bulk_sites`)."""
    stack = row.stack
    return stack if isinstance(stack, (list, tuple)) else ()


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+|\bpid[ =:]?\d+", re.I)


def failure_key(f: RunFacts) -> tuple[Any, ...] | None:
    """What tells two failures apart: the exit status, the exception's type and message (time
    stamps and memory addresses left out) and the frame that raised; None for a run that did
    not fail.

    >>> ok = RunFacts("A", False, False, {}, {}, False, None, (), ())
    >>> failure_key(ok) is None
    True
    """
    if not f.failed:
        return None

    if f.traceback:
        tb = f.traceback
        last = tb.frames[-1] if tb.frames else Frame()
        site = (str(written(last, "file")).rsplit("/", 1)[-1], str(written(last, "function")))
        message = _ADDRESS.sub("…", without_timestamp(str(tb.message or "")))
        return (f.status, str(tb.type or ""), message, site)
    return (f.status, _ADDRESS.sub("…", without_timestamp(f.first_error)))


def differential(a: RunFacts, b: RunFacts) -> tuple[RunFacts, RunFacts]:
    """The pair, each marked :attr:`~RunFacts.shared_failure` when both failed the same way
    (:func:`failure_key`): then neither failure is evidence for a difference between them.
    Where both failed otherwise and one went past the point where the other failed
    (:func:`went_further`), the further one's failure is marked alike: the other never got
    there, so what failed there says nothing of why the runs parted."""
    if a.failed and b.failed and failure_key(a) == failure_key(b):
        return a.replace(shared_failure=True), b.replace(shared_failure=True)
    if a.failed and b.failed:
        further = went_further(a, b)
        if further == "A":
            return a.replace(shared_failure=True), b
        if further == "B":
            return a, b.replace(shared_failure=True)
    return a, b


def went_further(a: RunFacts, b: RunFacts) -> str:
    """``"A"`` or ``"B"``: the run whose failing traceback left a frame both tracebacks share
    (the same file and function, from the outermost in) at a later line than the other's
    did, in code both ran alike (an outermost frame of Python's own, the same line, is passed
    over); ``""`` when the tracebacks part nowhere that says (another file or function first,
    the same line to the end, or no traceback). The program's ``main`` calling
    ``load_model()`` at line 40 in B and ``post_results()`` at line 52 in A: A got past
    where B failed. (Within a loop a later line may come first; then the runs are judged as
    if they parted there, which only takes evidence away.)"""
    ta, tb = a.traceback, b.traceback
    if ta is None or tb is None or not ta.frames or not tb.frames:
        return ""
    for fa, fb in zip(ta.frames, tb.frames, strict=False):
        if (fa.file, fa.function) != (fb.file, fb.function) or not fa.file:
            return ""
        if not isinstance(fa.line, int) or not isinstance(fb.line, int):
            return ""
        la, lb = _base_lines(str(fa.file), fa.line, fb.line, a, b)
        if la is None or lb is None:
            return ""
        if la != lb:
            return "A" if la > lb else "B"
    return ""


def _base_lines(file: str, la: int, lb: int, a: RunFacts, b: RunFacts
                ) -> tuple[int | None, int | None]:
    """The two runs' lines of ``file`` as lines of the one committed version both ran from:
    the file lies in a tree both runs recorded at one commit; a run that changed it without a
    commit has its line taken back through its diff (stored whole) to the committed one, a
    line it added to the committed line it stands before. ``None`` where git cannot say (an
    untracked file, another commit, a diff cut short, a file both changed)."""
    for folder, commit, changed, diff in a.trees:
        if not commit or not file.startswith(folder + "/"):
            continue
        rel = file[len(folder) + 1:]
        other = next((t for t in b.trees if t[0] == folder), None)
        if other is None or other[1] != commit or (rel in changed and rel in other[2]):
            return None, None
        if rel in changed:
            return committed_line(diff, rel, la), lb
        if rel in other[2]:
            return la, committed_line(other[3], rel, lb)
        return la, lb
    return None, None


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def committed_line(diff: str, rel: str, line: int) -> int | None:
    r"""Line ``line`` of ``rel`` as the working tree holds it, as a line of the committed file,
    through ``diff`` (``git diff``'s unified form); a line the diff added stands for the
    committed line it comes before. ``None`` when the diff does not hold the file.

    >>> diff = ("diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -3,2 +3,3 @@\n"
    ...         " import a\n+import os\n import b\n")
    >>> [committed_line(diff, "t.py", n) for n in (2, 3, 4, 5, 9)]
    [2, 3, 4, 4, 8]
    """
    head = f"diff --git a/{rel} b/{rel}"
    at = diff.find(head + "\n")
    if not diff or at < 0:
        return None
    end = diff.find("\ndiff --git ", at + 1)
    body = diff[at:end if end >= 0 else len(diff)].splitlines()
    shift = 0  # committed line minus working line, past the hunks seen
    for i, text in enumerate(body):
        m = _HUNK.match(text)
        if not m:
            continue
        old, new = int(m.group(1)), int(m.group(2))
        if line < new:
            break
        for row in body[i + 1:]:
            if row.startswith(("@@", "diff --git")):
                break
            if row.startswith("-"):
                old += 1
                continue
            if new == line:
                return old
            if row.startswith("+"):
                new += 1
            else:
                old, new = old + 1, new + 1
        shift = old - new
    return line + shift


def _top(site: str) -> str:
    """The top-level module of a recorded frame (``wandb/sdk/x.py:3 in f`` -> ``wandb``)."""
    head = site.replace("\\", "/").lstrip("/").split("/", 1)[0].split(":", 1)[0]
    return head[:-3] if head.endswith(".py") else head


_TOKEN = re.compile(r"--?[A-Za-z][\w-]*|[A-Za-z_]\w*(?:-[A-Za-z0-9]\w*)*")


@functools.lru_cache(maxsize=4096)
def tokens(text: str) -> frozenset[str]:
    """The words of ``text`` a key can be named by: identifiers, ``--options``, the parts of
    dotted and slashed names, each also in a normal form (lower case, ``-`` as ``_``).
    Remembered: a diff asks it of the same lines for every difference.

    >>> sorted(tokens("set the env var SGLANG_X=1 or pass --max-len (torch.cuda)"))[:6]
    ['--max-len', 'SGLANG_X', 'cuda', 'env', 'max_len', 'or']

    A hyphenated name is a word of its own, and its parts are words too:

    >>> sorted(tokens("but found huggingface-hub==2.0.0"))
    ['but', 'found', 'hub', 'huggingface', 'huggingface-hub', 'huggingface_hub']
    """
    out: set[str] = set()
    for m in _TOKEN.finditer(text):
        word = m.group()
        if "-" in word and not word.startswith("-"):
            out.update(word.split("-"))
        out.add(word)
        bare = word.lstrip("-")
        out.add(bare.replace("-", "_").lower())
    return frozenset(out)
