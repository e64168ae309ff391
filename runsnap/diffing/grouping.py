"""A cause with its consequences: one change shown once, the differences it brought under it.

Another virtual environment changes the interpreter, ``sys.path``, ``VIRTUAL_ENV``, a ``PATH``
entry, the command's program and every package's location at once; listing them as ten causes
hides the one that matters. A *grouper* looks at the ranked differences and the two snapshots
and returns :class:`Group` records (a cause, its members, and lines that explain the link);
:func:`group` applies them in order (a difference joins one group at most), puts the members
under the cause as :attr:`Difference.related` and ranks the group by its strongest member's
evidence. The groupers:

* :func:`~runsnap.diffing.editables.by_editable_source` - the checkout one run alone has
  that a package was installed editable from, under the package;
* :func:`by_interpreter` - another interpreter or venv: interpreter, prefix, ``VIRTUAL_ENV``,
  ``CONDA_PREFIX``, the ``PATH`` entries of either prefix, the command's program, ``sys.path``,
  and the package changes under either prefix (those the program imported rank first, since
  members are ranked like any difference);
* :func:`by_model` - a model given by one option at another revision: its config fields,
  weight and side files;
* :func:`by_commit` - a repository at another commit: branch and describe, the files it
  changes that the runs opened, editable packages installed from it (:mod:`.commitfiles`);
* :func:`by_devices` - ``CUDA_VISIBLE_DEVICES`` and its kin: the devices each run saw, and
  ``torch.cuda.is_available()`` when they changed it;
* :func:`by_shadowed` - a package's hidden second copy under the package's difference;
* :func:`by_search_path` - packages a run imported from a ``PYTHONPATH`` entry one run alone
  has, under that variable;
* :func:`by_misspelling` - a variable set in one run and a misspelling of it in the other;
* :func:`~runsnap.diffing.folders.by_folder` - a folder variable (``HOME``) with the files one
  run alone opened under its value;
* :func:`~runsnap.diffing.pathsettings.by_path_setting` - ``sys.path`` under the interpreter
  setting that decides it (``PYTHONSAFEPATH``);
* :func:`~runsnap.diffing.datafiles.by_named_file` - a file one run alone opened under the
  option or variable whose value names it;
* :func:`~runsnap.diffing.mirrors.by_mirror` - a table and its inverse (``id2label`` and
  ``label2id``), changed together; :func:`~runsnap.diffing.configtables.by_table` - the fields
  of one small config table (``rope_parameters``) changed together;
* :func:`by_runtime` - run-time differences (a variable read in one run only, a package
  imported from elsewhere) under the difference they come from.

Add a grouper to :data:`GROUPERS`; it never removes or changes a difference, only groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runsnap.diffing.ambient import executables
from runsnap.diffing.commitfiles import files_of
from runsnap.diffing.confidence import LIKELY
from runsnap.diffing.configtables import by_table
from runsnap.diffing.datafiles import by_named_file
from runsnap.diffing.editables import by_editable_source
from runsnap.diffing.folders import by_folder
from runsnap.diffing.grouprecord import Group, Grouper, by_key, echoes, under
from runsnap.diffing.kinds import KINDS
from runsnap.diffing.mirrors import by_mirror
from runsnap.diffing.pathsettings import by_path_setting
from runsnap.diffing.result import Difference, short
from runsnap.diffing.runfacts import RunFacts
from runsnap.knowledge.devices import (
    DEVICE_LISTS,
    ORDER_VARIABLES,
    device_order,
    visible_devices,
)
from runsnap.knowledge.env import likely_misspelling
from runsnap.knowledge.packages import normalize_name
from runsnap.snapshot.records_host import ImportedModule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records_host import GpuDevice

__all__ = ["GROUPERS", "Group", "group"]


# --------------------------------------------------------------------------- groupers


def by_interpreter(diffs: Sequence[Difference], a: Snapshot, b: Snapshot) -> list[Group]:
    """Another interpreter or virtual environment, with everything that moved with it."""
    pa, pb = a.records.packages, b.records.packages
    ea, eb = a.records.env.vars, b.records.env.vars
    prefixes = {str(x) for x in (pa.prefix, pb.prefix, ea.get("VIRTUAL_ENV"),
                                 eb.get("VIRTUAL_ENV"), ea.get("CONDA_PREFIX"),
                                 eb.get("CONDA_PREFIX")) if x}
    keys = by_key(diffs)
    cause = (keys.get(("packages", "interpreter")) or keys.get(("packages", "prefix"))
             or keys.get(("env", "VIRTUAL_ENV")) or keys.get(("env", "CONDA_PREFIX")))
    if cause is None or (cause.section == "env" and pa.prefix and pa.prefix == pb.prefix):
        return []  # the shell's activation variables differ; both runs ran in one environment
    members: list[Difference] = []
    moved: list[str] = []
    moved_imports: list[str] = []
    for d in diffs:
        if d is cause:
            continue
        if d.section == "packages":
            name, _, field = d.key.partition(".")
            if field == "location" and under(d.a, prefixes) and under(d.b, prefixes):
                # the same version, moved only because the environment moved: not a cause
                members.append(d.replace(hidden=True, reason=(
                    "the same version, moved with the environment")))
                moved.append(name)
                continue
            moved_in = _moved_entries(d) if d.key == "sys.path" else []
            if moved_in and all(under(e, prefixes) for e in moved_in):
                # the other environment's site-packages on the search path: how its packages
                # came in, listed after the packages that differ (which it puts in the way)
                members.append(d.replace(score=min(d.score, 90)))
                continue
            if d.key in ("python_version", "implementation", "sys.path", "prefix") or field:
                members.append(d)
                continue
            dists = [p.distributions.get(name) for p in (pa, pb)]
            if any(x is not None and under(x.location, prefixes) for x in dists):
                members.append(d)
        elif d.section == "runtime" and d.path[:2] == ("runtime", "modules"):
            rows = [ImportedModule(x) if isinstance(x, Mapping) else None for x in (d.a, d.b)]
            files = [x.file if x is not None else None for x in rows]
            if not all(under(f, prefixes) for f in files):
                continue
            versions = [x.version if x is not None else None for x in rows]
            if versions[0] == versions[1]:  # the same version, imported from the other prefix
                members.append(d.replace(hidden=True, reason=(
                    "imported at the same version from the other environment")))
                moved_imports.append(d.path[2] if len(d.path) > 2 else d.key)
            else:
                members.append(d)
        elif d.section == "env" and d.key in ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
                                              "PYTHONHOME", "CONDA_PYTHON_EXE"):
            members.append(d)
        elif d.section == "env" and d.key == "PATH":
            if _activation_only(d, prefixes, a, b):
                # how the switch came about (the shell activated the other environment),
                # listed under what moved with it: the packages the run took from there
                members.append(d.replace(score=min(d.score, LIKELY), reason=(
                    f"the shell's activation of the other environment: {d.reason}")))
        elif d.section == "command" and d.key in ("executable", "program"):
            names = [str(x or "").rsplit("/", 1)[-1] for x in (d.a, d.b)]
            if (under(d.a, prefixes) and under(d.b, prefixes)) or all(
                    n.startswith("python") for n in names):
                members.append(d)
    va, vb = (f"Python {p.python_version or '?'}" for p in (pa, pb))  # a prefix's values: shown
    title = (f"another Python environment ({va}{' in both' if va == vb else f' and {vb}'})" if cause.key
             == "prefix" else f"another Python environment: A {pa.prefix} ({va}), B {pb.prefix} ({vb})")
    lines = tuple(
        f"{len(names)} {what}{'s' if len(names) != 1 else ''} at the same version {how}: "
        f"{', '.join(sorted(names))}"
        for names, what, how in ((moved, "package", "moved with it"),
                                 (moved_imports, "module", "imported from the other environment"))
        if names)
    return [Group(cause, tuple(members), lines=lines, title=title)] if members else []


def _activation_only(d: Difference, prefixes: set[str], a: Snapshot, b: Snapshot) -> bool:
    """Whether a ``PATH`` difference decided nothing but the environment: every entry it moved
    lies under either prefix, or some do and every executable the runs resolved otherwise (the
    command's, each Python process's interpreter) lies under one (the other entries, a shell's
    ``~/.local/bin`` or a service's ``/opt/app/bin``, resolved nothing the runs ran)."""
    entries = _moved_entries(d)
    inside = [e for e in entries if under(e, prefixes)]
    if not inside:
        return False
    if len(inside) == len(entries):
        return True
    moved = set(executables(a)) ^ set(executables(b))
    return bool(moved) and all(under(x, prefixes) for x in moved)


def _moved_entries(d: Difference) -> list[str]:
    """The entries a search-path difference added, removed or moved (from its evidence lines;
    not the name's own "also: ..." line)."""
    return [e.split(": ", 1)[-1].split(" (", 1)[0] for e in d.evidence
            if e.startswith(("added: ", "removed: ", "moved: "))]


def by_model(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """A model at another revision, or another model directory: its files and fields."""
    out: list[Group] = []
    for d in diffs:
        if d.section != "models" or ": " not in d.key:
            continue
        src, _, what = d.key.partition(": ")
        if what not in ("revision", "repo_id"):
            continue  # another directory alone: its fields speak for themselves
        members = [m for m in diffs if m is not d and (
            (m.section == "models" and m.key.startswith(src + ": ")
             and m.key.partition(": ")[2] not in ("revision", "repo_id"))
            or (m.section == "command" and m.key == src))]
        if members:
            n = sum(1 for m in members if m.section == "models")
            out.append(Group(d, tuple(members), title=(
                f"the model given by {src} is at another revision"
                f" ({short(d.a, 40)} -> {short(d.b, 40)}): {n} config field"
                f"{'s' if n != 1 else ''} and files changed with it")))
            break
    return out


def _model_dirs(snap: Snapshot) -> dict[str, str]:
    """Model source (``--model-path``) -> its directory, as captured."""
    return {str(src): str(m.path).rstrip("/") for src, m in snap.records.models.models.items()
            if m.path}


def _repo_dirs(snap: Snapshot) -> dict[str, str]:
    return {str(name): str(r.path).rstrip("/") for name, r in snap.records.git.repos.items()
            if r.path}


def by_model_file(diffs: Sequence[Difference], a: Snapshot, b: Snapshot) -> list[Group]:
    """A file of a model directory inside a git tree, changed there (``git REPO: PATH``), is
    the same change as the model's config fields that differ: one difference with both views,
    the field first (it says what changed), the file's diff under it."""
    models = {**_model_dirs(a), **_model_dirs(b)}
    repos = {**_repo_dirs(a), **_repo_dirs(b)}
    out: list[Group] = []
    for src, folder in models.items():
        fields = [d for d in diffs if d.section == "models" and d.key.startswith(src + ": ")]
        if not fields:
            continue
        files = [d for d in diffs if d.section == "git" and ": " in d.key
                 and under(repos.get(d.key.partition(": ")[0], "") + "/"
                            + d.key.partition(": ")[2], [folder])]
        # the tree's dirty flag, when every changed file of that tree is the model's
        edited = {f.key.partition(": ")[0] for f in files}
        dirty = [d for d in diffs if d.section == "git" and d.key in {f"{r}.dirty" for r in edited}
                 and not any(x.section == "git" and x.key.partition(": ")[0] + ".dirty" == d.key
                             and x not in files and ": " in x.key for x in diffs)]
        if files:  # under the field ranked first; the other fields keep their own ranks
            out.append(Group(fields[0], (*files, *dirty)))
    return out


def by_commit(diffs: Sequence[Difference], a: Snapshot, b: Snapshot) -> list[Group]:
    """A repository at another commit: its branch, describe, upstream, the files it changes
    that the runs opened, and the editable packages installed from it."""
    out: list[Group] = []
    ra, rb = a.records.git.repos, b.records.git.repos
    pa, pb = a.records.packages, b.records.packages
    for d in diffs:
        if d.section != "git" or not d.key.endswith(".commit"):
            continue
        repo = d.key[: -len(".commit")]
        paths = {str(r.path) for r in (ra.get(repo), rb.get(repo)) if r is not None and r.path}
        members = [m for m in diffs if m is not d and m.section == "git"
                   and m.key in {f"{repo}.{f}" for f in ("branch", "detached", "upstream")}]
        members += files_of(d, diffs, a, b)  # a file it changes that the runs opened
        for m in diffs:
            if m.section != "packages" or "." in m.key:
                continue
            dists = [x for x in (pa.distributions.get(m.key), pb.distributions.get(m.key)) if x]
            if any(under(x.editable or x.source or x.location, paths) for x in dists):
                members.append(m)
        if members:
            out.append(Group(d, tuple(members)))
    return out


_DEVICES = (*DEVICE_LISTS, *ORDER_VARIABLES)


def _seen(value: Any, devices: Sequence[GpuDevice]) -> str:
    if value is None:
        return f"all {len(devices)} GPU{'s' if len(devices) != 1 else ''}" if devices \
            else "every GPU (none recorded)"
    # read as the CUDA runtime reads it: up to the first entry that names no device ("" and
    # "-1" hide them all); without recorded GPUs only the form of an entry is checked
    uuids = [str(x.uuid) for x in devices if x.uuid]
    left, why = visible_devices(str(value), len(devices) if devices else 1 << 30, uuids)
    if not left:
        return f"no GPU ({why or f'{value!r} names no device'})"
    names = []
    for part in [p.strip() for p in str(value).split(",")][:left]:
        dev = next((x for x in devices if str(x.index) == part
                    or str(x.uuid or "").startswith(part) and part.startswith("GPU-")), None)
        names.append(f"{part} ({_or_mark(dev, 'name')}, {_or_mark(dev, 'uuid')})" if dev else part)
    return ", ".join(names)


def _or_mark(dev: GpuDevice, field: str) -> Any:
    """A device's field as written, ``?`` where it was not."""
    return getattr(dev, field) if dev.has(field) else "?"


def by_devices(diffs: Sequence[Difference], a: Snapshot, b: Snapshot) -> list[Group]:
    """``CUDA_VISIBLE_DEVICES`` (and its kin): the devices each run saw, the other device
    variables under it, and ``torch.cuda.is_available()`` when they changed it."""
    keys = by_key(diffs)
    cause = next((keys[("env", n)] for n in _DEVICES if ("env", n) in keys), None)
    if cause is None:
        return []
    members = [keys[("env", n)] for n in _DEVICES
               if ("env", n) in keys and keys[("env", n)] is not cause]
    # torch.cuda.is_available() changed because of these variables (its reasons name them)
    members += [d for d in diffs if d.section == "packages"
                and d.key == "builds.torch.cuda_available"
                and any("_VISIBLE_DEVICES=" in str(e) for e in d.evidence)]
    da, db = a.records.system.gpu.devices, b.records.system.gpu.devices
    lines: list[str] = []
    if cause.key in DEVICE_LISTS:
        lines += [f"devices A saw: {_seen(cause.a, da)}", f"devices B saw: {_seen(cause.b, db)}"]
    order = next((d for d in (cause, *members) if d.key in ORDER_VARIABLES), None)
    if order is not None:
        # a numbering, not a list: the same CUDA_VISIBLE_DEVICES then names other GPUs
        lines += [f"device numbers in A: {device_order(_text(order.a))}",
                  f"device numbers in B: {device_order(_text(order.b))}"]
        listed = a.records.env.vars.get("CUDA_VISIBLE_DEVICES")
        if cause is order and listed is not None \
                and listed == b.records.env.vars.get("CUDA_VISIBLE_DEVICES"):
            lines.append(f"both list CUDA_VISIBLE_DEVICES={listed}: under the other numbering "
                         f"these numbers can name other GPUs")
    return [Group(cause, tuple(members), lines=tuple(lines))]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def by_misspelling(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """A variable set in one run, and a misspelling of it set in the other: one cause."""

    keys = by_key(diffs)
    out: list[Group] = []
    for d in diffs:
        if d.section != "env" or d.change not in ("added", "removed"):
            continue
        meant = likely_misspelling(d.key)
        right = keys.get(("env", meant)) if meant else None
        if right is not None and right.change in ("added", "removed") and right.change != d.change:
            side = "B" if d.change == "added" else "A"
            out.append(Group(right, (d,), lines=(
                f"{side} sets {d.key} instead, a misspelling of {meant}: no program reads it, "
                f"so {meant} is not in effect there",)))
    return out


def by_runtime(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """Run-time differences (``[runtime]``: read in one run only, imported from elsewhere)
    under the variable or package they are about."""
    keys = by_key(diffs)
    packages = {normalize_name(d.key): d for d in diffs if d.section == "packages" and "." not in d.key}
    found: dict[int, tuple[Difference, list[Difference]]] = {}
    for d in diffs:
        if d.section != "runtime" or len(d.path) < 3 or d.path[1] not in ("env", "modules"):
            continue
        name = d.path[2]
        owner: Difference | None = None
        if d.path[1] == "env":
            owner = keys.get(("env", name))
        else:
            imported = [ImportedModule(x) for x in (d.a, d.b) if isinstance(x, Mapping)]
            dists = {normalize_name(str(x.dist)) for x in imported if x.dist} or {normalize_name(name)}
            owner = next((packages[n] for n in dists if n in packages), None)
        if owner is not None:
            found.setdefault(id(owner), (owner, []))[1].append(d)
    return [Group(owner, tuple(members)) for owner, members in found.values()]


def by_finding(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """A ``check`` finding of one run only (``runsnap check``) under the difference at the
    path it is about (a rejected value under the variable's difference)."""
    by_path: dict[tuple[str, ...], Difference] = {}
    for d in diffs:
        if d.section != "check":
            for inner in (d, *d.related):  # a misspelling already under what was meant
                by_path.setdefault(inner.path, d)
    found: dict[int, tuple[Difference, list[Difference]]] = {}
    for d in diffs:
        if d.section != "check" or len(d.path) < 3:
            continue
        owner = by_path.get(tuple(d.path[2:]))
        if owner is not None:
            found.setdefault(id(owner), (owner, []))[1].append(d)
    return [Group(owner, tuple(members)) for owner, members in found.values()]


def by_shadowed(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """A package's hidden second copy (``packages X.shadowed``) under the package's own
    difference: one copy put before the other is one change, seen from both copies."""
    packages = {d.key: d for d in diffs if d.section == "packages" and "." not in d.key}
    out = []
    for d in diffs:
        if d.section == "packages" and d.key.endswith(".shadowed"):
            owner = packages.get(d.key[: -len(".shadowed")])
            if owner is not None:
                out.append(Group(owner, (d,)))
    return out


#: Variables whose entries are folders Python imports packages from.
_IMPORT_PATHS = ("PYTHONPATH",)


def _imported_from(snap: Snapshot, dist: str) -> list[str]:
    """The files a run imported distribution ``dist``'s modules from (``[runtime.modules]``)."""
    want = normalize_name(dist)
    return [str(row.file) for mod, row in RunFacts.of(snap, "").imported()
            if row.file and normalize_name(str(row.dist or mod)) == want]


def by_search_path(diffs: Sequence[Difference], a: Snapshot, b: Snapshot) -> list[Group]:
    """Packages a run imported from a folder that one run's ``PYTHONPATH`` alone lists, under
    that variable: the entry put them first on ``sys.path`` (and ``sys.path`` with them)."""
    out = []
    for var in (d for d in diffs if d.section == "env" and d.key in _IMPORT_PATHS):
        entries = [e for side in (var.a, var.b) for e in str(side or "").split(":") if e]
        only = [e for e in entries if entries.count(e) == 1]
        if not only:
            continue
        members = []
        path_moved = False
        for d in diffs:
            if d.section == "packages" and "." not in d.key:
                if any(under(f, only) for snap in (a, b) for f in _imported_from(snap, d.key)):
                    members.append(d)
            elif d.section == "packages" and d.key == "sys.path":
                members.append(d)
                # its entries are on sys.path in one run only: the sys.path change is its
                path_moved = any(str(e).rstrip("/") in {o.rstrip("/") for o in only}
                                 for side in (d.a, d.b) if isinstance(side, list) for e in side)
        imported = [m.key for m in members if m.key != "sys.path"]
        if imported:
            out.append(Group(var, tuple(members),
                             lines=(f"packages imported from its entry: {', '.join(imported)}",)))
        elif path_moved:
            out.append(Group(var, tuple(members)))
    return out


#: The groupers, applied in this order (a difference joins the first group that claims it).
GROUPERS: list[Grouper] = [by_misspelling, by_editable_source, by_interpreter, by_shadowed,
                           by_model, by_model_file, by_table, by_commit, by_devices, by_runtime,
                           by_finding, by_search_path, by_path_setting, by_named_file, by_folder,
                           by_mirror]


def _strength(d: Difference) -> tuple[int, int]:
    return (KINDS.index(d.evidence_kind) if d.evidence_kind in KINDS else len(KINDS), -d.score)


def _merge(g: Group, members: Sequence[Difference],
           key: Callable[[Difference], Any]) -> Difference:
    cause = g.cause
    ranked = sorted(members, key=key)
    # the run-time copy of the cause's own variable speaks for it only with evidence from the
    # runs, never with a name's rule (a variable the interpreter alone read is no stronger
    # for its [runtime] entry)
    strongest = min([cause, *(m for m in ranked
                              if m.section != "runtime" or m.evidence_kind != "name")],
                    key=_strength)
    reason = cause.reason
    lines = list(cause.evidence) + list(g.lines)
    if g.title:
        reason = f"{g.title}; {reason}" if strongest is cause else g.title
    if strongest is not cause:
        reason = f"{reason}; with it, {strongest.where}: {strongest.reason}"
    score = max(cause.score, strongest.score)
    hidden = cause.hidden and strongest.evidence_kind not in ("failing-path", "named")
    # related: what came with the cause, in the order found; the run-time record that only
    # repeats the cause last (the text view leaves it out; JSON keeps it, after the news)
    return cause.replace(score=score, reason=reason, evidence=tuple(lines), hidden=hidden,
                         evidence_kind=strongest.evidence_kind,
                         corroborated=strongest.corroborated, quoted=strongest.quoted,
                         related=tuple(sorted((*cause.related, *ranked),
                                              key=lambda m: echoes(cause, m))))


def group(diffs: Sequence[Difference], a: Any, b: Any,
          key: Callable[[Difference], Any], groupers: Sequence[Grouper] | None = None
          ) -> tuple[Difference, ...]:
    """``diffs`` (ranked) with each group's members moved under its cause, re-ranked by
    ``key``. Hidden members stay hidden under the cause; a cause whose members count is shown."""
    current = list(diffs)
    for grouper in GROUPERS if groupers is None else groupers:
        taken: set[int] = set()
        merged: dict[int, Difference] = {}
        # a grouper may hand back a member changed (hidden: it only moved with the cause);
        # it stands for the difference found at the same place
        found = {(d.section, d.key, d.path): d for d in current}

        def origin(m: Difference, found: dict[Any, Difference] = found) -> int:
            return id(found.get((m.section, m.key, m.path), m))

        for g in grouper(current, a, b):
            if id(g.cause) in taken:
                continue
            members = [m for m in g.members if origin(m) not in taken and m is not g.cause]
            if not members and not g.lines:
                continue
            taken.update(origin(m) for m in members)
            taken.add(id(g.cause))
            merged[id(g.cause)] = _merge(g, members, key)
        if merged:
            member_ids = taken - set(merged)
            current = [merged.get(id(d), d) for d in current if id(d) not in member_ids]
    return tuple(sorted(current, key=key))
