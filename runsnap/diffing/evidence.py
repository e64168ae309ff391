"""Evidence from the runs themselves: what each run did with a difference.

A name tells what a difference *could* do; the run tells what it did. This module reads the
two snapshots' ``[outcome]`` (the failing traceback, the error, the warnings) and ``[runtime]``
(which variables the program read and where, which packages it imported from where) and
finds, for each difference, the strongest of these kinds of evidence, strongest first:

=================  =====  ==================================================================
kind               score  when
=================  =====  ==================================================================
failing-path       97-99  a read of the variable (a frame of its call stack), or the code of
                          the changed package or file, is in a function of the failing
                          traceback, at most one frame of the program's own code above the
                          one that raised
named              94-96  the failing error or its traceback message names the key (variable,
                          option, config field, package) or every word of it, or names the
                          failing side's value (quoted in the error, of an input the run took
                          in: failing-path 99) or implies it; for torch's build facts, torch's
                          own message
read               91-93  the program read the variable (or imported the package, or read
                          the field from the loaded model config) in a run; or only a warning
                          printed by one run names it (the value was seen, not that it failed);
                          83 when read only at a library's import (:mod:`.ambient`)
static             89-90  an installed package reads the variable (who-reads), when the
                          runs were not traced
name               0-90   no evidence from the run: the name rules of :mod:`rank`
incidental         0-90   read, but only by the interpreter at its start-up, for a generic
                          feature (terminal size, locale), or at start-up by every process
                          of a stack (:mod:`runsnap.diffing.ambient`: ``OMP_*``, ``PATH``,
                          or natively only at a start-up in every process, told from the
                          data: at most 83); or a library's notice says it is deprecated,
                          renamed, ignored (``knowledge/deprecation-notices.tsv``; a renamed
                          one whose value reached the failing code keeps that evidence): the
                          name rules' score, below what the runs tie to the outcome
unread             <=30   both runs traced, and no process read it from Python, for a
                          variable of a family read from Python (``NCCL_*`` and other
                          families read by native libraries are never called unread on a
                          Python trace alone)
=================  =====  ==================================================================

Within a band, the name's own score breaks ties (a higher family score, one more point).
A difference without evidence in a traced run scores at most 90, so it ranks below every
difference with evidence. docs/ranking.md has the same table; this module is its source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from runsnap.diffing.ambient import (
    CEILING,
    ambient_reads,
    import_reads,
    locale_reads,
    no_device_to_choose,
    startup_reads,
)
from runsnap.diffing.attribution import decisive_sites, interpreter_only
from runsnap.diffing.backing import check_backed
from runsnap.diffing.bulkcopies import bulk_evidence
from runsnap.diffing.commitfiles import commit_read
from runsnap.diffing.confidence import FROM_RUNS, LIKELY
from runsnap.diffing.datafiles import (
    edit_read,
    file_evidence,
    folder_unopened,
    model_file_read,
    opened_failing,
    path_quoted,
)
from runsnap.diffing.edits import edit_evidence
from runsnap.diffing.factors import by_factor
from runsnap.diffing.failingpath import (
    called_on_failing_path,
    code_on_failing_path,
    on_failing_path,
)
from runsnap.diffing.fetching import fetched_nothing
from runsnap.diffing.kinds import BANDS, KINDS, Evidence
from runsnap.diffing.loaded import library_evidence
from runsnap.diffing.naming import (
    WARNED,
    called_where_raised,
    crowd,
    excerpt,
    named,
    not_heeded,
    read_by_failing_code,
    texts,
)
from runsnap.diffing.patchwords import edit_quoted
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts, differential, scanned_as, tokens
from runsnap.diffing.saying import said
from runsnap.diffing.searchpaths import search_path_evidence
from runsnap.diffing.written import written
from runsnap.knowledge.env import family_of, noise_reason
from runsnap.knowledge.models import bookkeeping
from runsnap.knowledge.options import endpoint_setting, reporting_variable
from runsnap.knowledge.packages import normalize_name
from runsnap.knowledge.readers import (
    decides_results,
    read_inside_libc,
    read_natively,
)
from runsnap.knowledge.torchbuild import messages
from runsnap.snapshot.records_host import VariableRead

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records import Distribution
    from runsnap.snapshot.records_host import ImportedModule

__all__ = ["BANDS", "KINDS", "Evidence", "RunFacts", "gather", "merged", "tokens"]

#: ``who_reads(name) -> ["dist  path/file.py:12  read", ...]``: static readers, from the
#: installed packages (:mod:`runsnap.whoreads.search`), or None when unknown.
WhoReads = Callable[[str], Sequence[str]]


# --------------------------------------------------------------------------- gathering


def _failing(found: tuple[str, int] | None) -> Evidence | None:
    """A failing-path finding (:mod:`runsnap.diffing.failingpath`) as evidence."""
    return None if found is None else Evidence("failing-path", found[0], rank=found[1])


def _env_evidence(d: Difference, runs: Sequence[RunFacts], who_reads: WhoReads | None,
                  a: Any = None, b: Any = None) -> Evidence | None:
    """A variable's evidence; a library's notice that it is deprecated (``not_heeded``) makes
    it incidental, unless the value, copied to a new name, reached the failing code."""
    notice = not_heeded(d, runs)
    if notice is None:
        return _run_evidence(d, runs, who_reads, a, b)
    ev = _run_evidence(d, runs, who_reads, a, b) if notice[1] == "renamed" else None
    said = named(d, runs) if ev is not None and ev.kind in ("failing-path", "named") else None
    if said is not None and said[1] < WARNED:  # the error quotes the value: not only a read
        return ev
    return Evidence("incidental", notice[0])


def _run_evidence(d: Difference, runs: Sequence[RunFacts], who_reads: WhoReads | None,
                  a: Any = None, b: Any = None) -> Evidence | None:
    name = d.key
    ambient = ambient_reads(name, runs, a, b) if a is not None else None  # OMP_*, PATH...
    # a start-up setting of the whole stack that decided the same in both runs (PATH, with the
    # same executables resolved), or a variable that differs between any two shells
    # (XDG_RUNTIME_DIR): its read at some package's import, before the program ran, is no path
    # to that package's failure; a read where it failed still is
    imports = not ambient and noise_reason(name) is None
    found = _failing(on_failing_path(name, runs, imports=imports)
                     or called_on_failing_path(name, runs))
    if found:
        also = _named(d, runs)
        if also is not None and (found.rank or also.quoted):
            # read on the failing path and named by the failing run's words: above a read there
            # alone (a rendezvous variable every job reads); a quoted port says where, not why
            step = 0 if also.quoted and endpoint_setting(name) else 1
            return found.replace(rank=max(0, found.rank - step), sentence=f"{found.sentence}; "
                                 f"and {also.sentence}", corroborated=True, quoted=also.quoted)
        if also is not None and also.kind == "named" and also.rank == 0:
            # read in the function that raised, and the failing error names it: a generic
            # reader (environs, a settings class) reads every variable there, the error names
            # the one it failed on
            return found.replace(sentence=f"{found.sentence}; and {also.sentence}",
                                 corroborated=True)
        return found
    listed = search_path_evidence(d, runs)
    if listed is not None and listed.kind == "failing-path":
        return listed
    named = _named(d, runs)
    if named:
        return named
    if listed is not None:
        return listed
    if ambient:
        return Evidence("incidental", ambient, ceiling=CEILING)
    if (moot := no_device_to_choose(name, runs, a, b)) is not None:
        return Evidence("incidental", moot, ceiling=CEILING)
    if a is not None and (setting := locale_reads(name, runs, a, b)):  # another locale
        return Evidence("read", setting, ceiling=CEILING)
    readers: list[tuple[RunFacts, VariableRead]] = [
        (f, got) for f in runs for got in (f.reads(name),) if got is not None]
    if readers and (decides := decides_results(name)):  # PYTHONHASHSEED: another result
        # a setting of the whole interpreter, not a decision of the program: it ranks below
        # the program's own reads, options and fields, and stays a candidate beside them
        return Evidence("read", f"read by every process at start-up: {decides}; another value "
                                "is another result", ceiling=CEILING + 1)
    if (ambient := startup_reads(name, runs, a, b)) is not None:  # told from the data
        return Evidence("incidental", ambient, ceiling=CEILING)
    startup = [why for f, got in readers for why in (interpreter_only(name, got, f),) if why]
    if readers and len(startup) == len(readers):
        return Evidence("incidental", f"read only by the interpreter at its start-up ({startup[0]}): "
                                "evidence of how Python ran, not of a decision of the program")
    generic: list[str] = []
    decided: list[tuple[RunFacts, VariableRead]] = []
    for f, got in readers:
        kept, why = decisive_sites(got, f)
        generic += [w for w in why if w not in generic]
        if kept or not got.sites or got.native:
            decided.append((f, type(got)({**got.raw, "sites": [s.raw for s in kept]})))
    if readers and not decided:
        return Evidence("incidental", "read only on behalf of " + "; ".join(generic[:2])
                        + ", not a decision of the program")
    readers = decided
    if readers and (imported := import_reads(name, runs)) is not None:  # a library's setting
        if a is not None and (unused := folder_unopened(d, a, b) or fetched_nothing(d, a, b)):
            # a folder no file of which either run opened, an offline switch in runs that
            # fetched nothing: what it decides never came up
            return Evidence("incidental", f"{imported}; {unused}", ceiling=CEILING)
        fam = family_of(name)
        if fam is not None and fam[0] < LIKELY:
            # a library's setting of a family that rarely touches the computation (WANDB_*:
            # where a tracker logs), read at its import and nowhere else
            return Evidence("incidental", f"{imported}; {fam[1]}", ceiling=CEILING)
        return Evidence("read", imported, ceiling=CEILING)
    if readers:
        bits = []
        sites: dict[str, list[str]] = {}  # a place both runs read it from: one line
        for f, got in readers:
            n = int(got.reads or 1)
            how = []
            if scan := scanned_as(got):
                how.append(f"in a scan of the {scan} variables")
            elif got.python:
                how.append("from Python")
            if got.native:
                how.append("by a native library")
            state = ("" if written(got, "set", True)
                     else ", unset there: the program took its default")
            bits.append(f"{f.label} ({n} read{'s' if n != 1 else ''}"
                        f"{' ' + ' and '.join(how) if how else ''}{state})")
            for site in got.sites[:3]:
                stack = site.stack
                if stack:
                    sites.setdefault(" <- ".join(str(s) for s in stack[:3]), []).append(f.label)
        lines = tuple(f"read in {' and '.join(labels)} at {where}" for where, labels in sites.items())
        said = "the program read it while it ran, in " + " and ".join(bits)
        if a is not None and (unused := folder_unopened(d, a, b)):
            # a folder (a cache, a home) read for its path, no file of which either run
            # opened: what is in it never came in
            return Evidence("incidental", f"{said}; {unused}", lines=lines, ceiling=CEILING)
        if reporting_variable(name):  # a progress bar, a log level: not what is computed
            return Evidence("incidental", f"{said}; it says only how the program reports",
                            lines=lines, ceiling=CEILING)
        return Evidence("read", said, lines=lines)
    traced = [f for f in runs if f.traced]
    if any(f.bulk_only(name) for f in runs):
        return bulk_evidence(name, runs, len(traced) == len(runs))
    if traced and len(traced) == len(runs):
        if all(f.native for f in runs) and not read_inside_libc(name):
            return Evidence("unread", "no process read it, from Python or from native "
                                      "libraries (both runs traced)")
        if not read_natively(name):
            return Evidence("unread", "no Python process read it in either run (both traced)")
        return None
    if who_reads is not None and not traced and noise_reason(name) is None:
        places = list(who_reads(name))
        if places:
            more = f" and {len(places) - 1} more" if len(places) > 1 else ""
            return Evidence("static", f"an installed package reads it: {places[0]}{more}",
                            lines=tuple(places[:5]))
    return None


def _named(d: Difference, runs: Sequence[RunFacts]) -> Evidence | None:
    """The strongest of what the runs' words say about ``d`` (:func:`runsnap.diffing.saying.
    said`: its key or value, an engine's message it governs, its name's words, a value an
    engine's message implies)."""
    if (got := said(d, runs)) is None:
        return None
    kind, sentence, rank, backed, quoted = got
    return Evidence(kind, sentence, rank=rank, corroborated=backed, quoted=quoted)


def _config_read(d: Difference, runs: Sequence[RunFacts]) -> Evidence | None:
    """A config field the program read while it ran (``[runtime] config_reads``, noted by the
    tracing hook on the config object itself), in either run: read evidence, as a variable's
    read is; a library's bookkeeping field never."""
    path = d.key.partition(": ")[2]
    field = re.split(r"[.\[\]]+", path.strip("]"))[-1]
    if not field or bookkeeping(path) or field.startswith(("weights ", "file ")):
        return None
    who = [f.label for f in runs if field in f.config_reads]
    if not who:
        return None
    return Evidence("read", f"the program read the config field {field} while it ran "
                            f"(run {' and '.join(who)})", rank=0 if len(who) == 2 else 1)


def _package_evidence(d: Difference, runs: Sequence[RunFacts], dists: Sequence[Distribution]
                      ) -> Evidence | None:
    name = d.key.partition(".")[0]
    norm = normalize_name(name)
    dirs: list[str] = []
    imported: list[tuple[RunFacts, str, ImportedModule]] = []
    for f in runs:
        got = f.dists_imported().get(norm)
        if got:
            imported.append((f, got[0], got[1]))
            file = str(got[1].file or "")
            if file:
                base = file.rsplit("/", 1)[0]
                if file.endswith("/__init__.py"):
                    dirs.append(base)
                else:
                    dirs.append(file)
    for dist in dists:
        loc = str(dist.location or "")
        if loc:
            top = name.replace("-", "_").lower()
            dirs.append(f"{loc.rstrip('/')}/{top}")
    found = _failing(code_on_failing_path(runs, dirs, f"{name}'s code"))
    if found:
        return found
    named = _named(d, runs)
    if named:
        return named
    called = called_where_raised(d, runs)
    if called is not None:
        return Evidence("named", called[0], rank=called[1])
    if imported:
        parts = [f"{f.label} imported {mod} from {written(t, 'file', '?')}"
                 + (f" ({t.origin})" if t.origin not in (None, "site-packages")
                    else "") for f, mod, t in imported]
        return Evidence("read", "the program imported it: " + "; ".join(parts))
    if runs and all(f.traced and f.modules for f in runs):
        return Evidence("unread", "no process imported it in either run (both traced)")
    return None


def _fact_evidence(d: Difference, runs: Sequence[RunFacts]) -> Evidence | None:
    """A build fact (``builds.torch.config.USE_NCCL``): torch's own message about it (named),
    else the program imported that engine (read) or, both traced, neither did (unread). A CUDA
    library or conda package is loaded natively: no import decides it."""

    parts = [str(p) for p in d.path[1:]]
    said = messages(".".join(parts[2:])) if parts[:2] == ["builds", "torch"] else ()
    for where, text, rank, _run in texts(runs) if said else ():
        for m in (m for m in said if m in text):
            return Evidence("named", f"{where} says \"{m}\": \"{excerpt(text, m)}\"", rank)
    if parts[0] != "builds":
        return None
    seen = [f"{f.label} imported {parts[1]} from {written(row, 'file', '?')}"
            for f in runs for row in (f.module(parts[1]),) if row is not None]
    if seen:
        return Evidence("read", "the program imported it: " + "; ".join(seen))
    if runs and all(f.traced and f.modules for f in runs):
        return Evidence("unread", f"no process imported {parts[1]} in either run (both traced)")
    return None


def _stronger(one: Evidence | None, other: Evidence | None) -> Evidence | None:
    """The stronger of two pieces of evidence (a kind higher in :data:`KINDS`, then rank)."""
    if one is None or other is None:
        return one or other
    return min(one, other, key=lambda e: (KINDS.index(e.kind), e.rank))


def merged(own: Mapping[tuple[str, str], Evidence],
           others: Mapping[tuple[str, str], Evidence]) -> dict[tuple[str, str], Evidence]:
    """``own`` (one pair of runs' evidence) with what ``others`` (another pair's, the other
    ranks of the same two jobs) saw stronger: only evidence from the runs (read, named, on a
    failing path), never "unread" or a name's rule, which one rank alone cannot say of a job
    (rank 1 reads its shard, rank 0 does not). What the pair itself judged incidental (a
    library's notice that the variable is deprecated, a start-up read) stays so: another
    rank's read of it says no more."""
    out = dict(own)
    for key, ev in others.items():
        if ev.kind not in FROM_RUNS:
            continue
        if key in out and out[key].kind == "incidental":
            continue
        got = _stronger(out.get(key), ev)
        if got is not None:
            out[key] = got
    return out


#: The sections whose differences :func:`gather` looks for evidence of.
_WITH_EVIDENCE = frozenset({"env", "packages", "git", "models", "command"})


def gather(
    diffs: Iterable[Difference],
    a: Snapshot,
    b: Snapshot,
    who_reads: WhoReads | None = None,
) -> dict[tuple[str, str], Evidence]:
    """The strongest evidence for each difference between snapshots ``a`` and ``b``, keyed
    by ``(section, key)``; differences without any are left out."""
    diffs = list(diffs)
    if not any(d.section in _WITH_EVIDENCE or d.path[1:2] == ("data_files",) for d in diffs):
        return {}  # the runs' facts are not read (an N-way diff's timings, per rank)
    shared = crowd(diffs)  # value tokens inputs share name none of them
    runs = tuple(r.replace(crowd=shared) for r in differential(RunFacts.of(a, "A"),
                                                               RunFacts.of(b, "B")))
    pa, pb = a.records.packages.distributions, b.records.packages.distributions
    out: dict[tuple[str, str], Evidence] = {}
    prefetch = getattr(who_reads, "prefetch", None)
    if prefetch is not None:  # every variable's static readers in one pass over the files
        prefetch(d.key for d in diffs if d.section == "env" and noise_reason(d.key) is None)
    backed = check_backed(diffs, runs)
    metrics = (dict(a.records.outcome.metrics or {}), dict(b.records.outcome.metrics or {}))
    for d in diffs:
        ev: Evidence | None = None
        if d.section == "env":
            ev = _env_evidence(d, runs, who_reads, a, b)
        elif d.section == "packages" and len(d.path) > 2 and d.path[1] in (
                "builds", "libraries", "conda"):
            ev = _fact_evidence(d, runs)
        elif d.section == "packages" and d.key == "sys.path":
            ev = search_path_evidence(d, runs)  # a module found under an entry one run has
        elif d.section == "packages" and d.key not in ("interpreter", "python_version",
                                                       "implementation"):
            name = d.key.partition(".")[0]
            dists = [x for x in (pa.get(name), pb.get(name)) if x]
            ev = _package_evidence(d, runs, dists)
        elif d.section == "git" and d.key.endswith(".commit"):
            repo = d.key[: -len(".commit")]
            paths = [str(r.path) for r in (a.records.git.repos.get(repo),
                                            b.records.git.repos.get(repo)) if r and r.path]
            ev = _failing(code_on_failing_path(
                runs, [p.rstrip("/") + "/" for p in paths],
                f"code of {repo}, at another commit")) or commit_read(d, a, b)
        elif d.section == "git" and ": " in d.key:
            repo, _, path = d.key.partition(": ")
            ev = _failing(code_on_failing_path(runs, [path], f"the changed file {path}"))
            took = Evidence(*(edit_read(d, a, b) or edit_evidence(d, runs, a, b) or ("", "")))
            quoted = (edit_quoted(d, runs) or path_quoted(d, a, b, texts(runs))
                      if ev is None else None)
            if quoted is not None:
                # the failing error quotes a word the edit brought in; read by the run, it
                # reached the code that raised, as a quoted variable's value does
                # (runsnap.diffing.saying.said)
                read = took.kind == "read"
                ev = (Evidence("failing-path", f"{quoted}; {took.sentence}", corroborated=True,
                               quoted=True) if read else Evidence("named", quoted, rank=2))
            ev = ev or _named(d, runs) or took
            ev = opened_failing(d, ev if ev.kind else None, a, b, runs)
        elif d.section == "models":
            ev = _named(d, runs)  # the error quoting its value outranks a read by the code
            ev = ev if ev is not None and ev.quoted else (
                _failing(read_by_failing_code(d, runs)) or ev or _config_read(d, runs))
            ev = ev or model_file_read(d, a, b)
        elif d.section == "command":
            ev = _named(d, runs)
        elif d.section == "system" and (lib := library_evidence(d, a, b)) is not None:
            ev = Evidence(*lib)
        elif d.path[:2] == ("runtime", "data_files"):  # a data file the runs opened
            ev = file_evidence(d, a, b, texts(runs), runs)
            if ev is not None or d.change == "changed":
                # a file one run alone opened on its way to the failure is where it went,
                # unless the runs show it was an input (quoted, found in its tree)
                ev = opened_failing(d, ev, a, b, runs)
        ev = _stronger(ev, backed.get((d.section, d.key)))
        ev = by_factor(d, ev, metrics)
        if ev is not None:
            out[(d.section, d.key)] = ev
    return out


def traced(a: Any, b: Any) -> bool:
    """Whether either run was traced (then a difference without evidence ranks last)."""
    return RunFacts.of(a, "A").traced or RunFacts.of(b, "B").traced
