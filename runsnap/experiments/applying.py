"""Differences that can be applied back to a launch, and applying a chosen subset of them.

:func:`plan` sorts the ranked differences between GOOD and BAD into :class:`Change` records
(what a trial can apply) and :class:`Skipped` ones (what it cannot, each with why, and whether
it could matter). :func:`apply` builds a trial's launch specification: GOOD's launch with some
changes applied through their locators:

* ``("env", NAME)``: set, unset or change a variable; a search-path list (``PATH``,
  ``PYTHONPATH``, ``CUDA_VISIBLE_DEVICES``) whose common entries keep their order is split
  into one change per entry added or removed (locator ``("env", NAME, "+" | "-", ENTRY)``);
* ``("command", "options", "--name")``: a long option added, removed or given another value;
  ``("command", "positionals", i)``: a positional argument; ``("command", "cwd")``;
* ``("models", SOURCE, "config", *FIELD)``: ``config.json`` fields, through a copy of the
  model directory (``config.json`` rewritten, small files copied, everything else linked to
  the original: the user's files are never written) given to the program in place of the
  original. DeepDiff's ``Delta`` applies the chosen fields to the nested config;
* ``("packages", NAME)``: another installed version of one package inside one interpreter,
  through an overlay first on ``PYTHONPATH`` of the copy the other run imported, still
  installed where its snapshot recorded it (:mod:`runsnap.experiments.overlay`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runsnap.base.argv import is_python_name, positionals
from runsnap.base.jsonform import json_form
from runsnap.base.records import FrozenRecord
from runsnap.diffing.result import UNCHANGED
from runsnap.diffing.sections.git import split_patch
from runsnap.experiments.argvedit import set_index, set_option, set_positional
from runsnap.experiments.bytecode import bytecode_only
from runsnap.experiments.filestate import DATA_FILE, good_content, rewritten_untracked, what_to_do
from runsnap.experiments.following import toolchain_variable
from runsnap.experiments.gittrees import applied_edits, copy_trees, edit_of
from runsnap.experiments.ignoredfiles import repo_of
from runsnap.experiments.modelcopy import copy_model
from runsnap.experiments.overlay import overlay_env, why_not
from runsnap.knowledge.env import list_separator, split_list
from runsnap.snapshot.records import GitRepo

if TYPE_CHECKING:
    from runsnap.diffing import Difference
    from runsnap.launch import LaunchSpec
    from runsnap.snapshot import Snapshot

__all__ = ["Change", "Plan", "Skipped", "apply", "plan"]

#: Sections that describe what a run did, not what it was given: never applied, never skipped.
EFFECT_SECTIONS = frozenset({"outcome", "runtime", "process"})


class Change(FrozenRecord):
    """One difference a trial can apply: BAD's value ``b`` in place of GOOD's ``a``."""

    path: tuple[Any, ...]
    """The locator: section first, then keys (see the module's docstring)."""
    section: str
    key: str
    """What the reports call it (``NCCL_ALGO``, ``--tp``, ``--model-path: rope_theta``)."""
    a: Any
    b: Any
    score: int = 0
    """The diff's score for it (higher: more likely the cause)."""

    @property
    def where(self) -> str:
        return f"{self.section} {self.key}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``section``, ``key``, ``path``, ``a``, ``b``."""
        return json_form(self, ("section", "key", "path", "a", "b"))


class Skipped(FrozenRecord):
    """A difference no trial applies, and why."""

    section: str
    key: str
    path: tuple[Any, ...]
    a: Any
    b: Any
    why: str
    blocking: bool = False
    """It could change the behaviour and cannot be applied (commit, packages, host): bisect
    refuses unless told to go on."""

    @property
    def where(self) -> str:
        return f"{self.section} {self.key}"

    def to_dict(self) -> dict[str, Any]:
        return json_form(self)


class Plan(FrozenRecord):
    """The changes a bisection searches, ranked, and everything it leaves alone."""

    changes: tuple[Change, ...]
    skipped: tuple[Skipped, ...]
    program: Skipped | None = None
    """Set when GOOD and BAD run different programs."""


# --------------------------------------------------------------------------- the plan
#: The keys of ``[packages]`` differences that say the interpreter, or its environment (a
#: venv layered on the same base Python), itself differs.
_INTERPRETER = frozenset({"interpreter", "python_version", "implementation", "prefix"})

_BLOCKING_WHY = {
    "git": "another commit or uncommitted state: runsnap does not check out code",
    "packages": "other packages or interpreter: runsnap does not install packages",
    "system": "another host, driver or GPU",
    "models": "other model files or revision: only config.json fields are applied",
}


def _flatten(diffs: Sequence[Difference], seen: set[tuple[str, ...]] | None = None
             ) -> list[Difference]:
    """Each difference once, consequences (``related``) after their cause."""
    seen = set() if seen is None else seen
    out: list[Difference] = []
    for d in diffs:
        if tuple(d.path) not in seen:
            seen.add(tuple(d.path))
            out.append(d)
        out += _flatten(d.related, seen)
    return out


def plan(
    good: Snapshot,
    bad: Snapshot,
    ranked: Sequence[Difference],
    *,
    secret: Any = None,
    include_hidden: bool = False,
) -> Plan:
    """Sort ``ranked`` (the diff of GOOD and BAD, most likely cause first) into changes and
    skipped differences. ``secret(name, stored)`` returns the value behind a redacted value
    (or None); without it, a change whose BAD value is a secret is skipped."""
    changes: list[Change] = []
    skipped: list[Skipped] = []
    program: Skipped | None = None
    diffs = _flatten(ranked)
    env_moves_path = any(d.section == "env" and d.key in ("PATH", "VIRTUAL_ENV", "CONDA_PREFIX")
                         for d in diffs)
    bare_program = "/" not in str((good.records.command.argv or [""])[0])
    model_options = _moved_model_options(good, diffs)
    program_slots = max(_program_slots(good), _program_slots(bad))
    configs = _applied_configs(good, diffs)
    edits = applied_edits(good, bad, diffs)
    moved = {d.key for d in diffs if d.section == "env" and not (
        d.hidden and not include_hidden and not d.reason.startswith(UNCHANGED))}
    pythonpath_moves = any(d.section == "env" and d.key == "PYTHONPATH" for d in diffs)
    # PATH picks the interpreter: package differences follow it only when the interpreter
    # itself differs; inside one interpreter they are its own, and block
    interpreter_moves = any(d.section == "packages" and d.key in _INTERPRETER for d in diffs)
    # another interpreter named by its path (``/venv/bin/python train.py``): applied as argv[0]
    switch = any(tuple(d.path) == ("command", "program") and _interpreters(good, bad, d)
                 for d in diffs)
    overlay_why = _overlays(good, bad, diffs)  # another version, through PYTHONPATH: "" can
    for d in diffs:
        path = tuple(d.path)

        def skip(why: str, blocking: bool = False, d: Difference = d,
                 path: tuple[Any, ...] = path) -> None:
            skipped.append(Skipped(d.section, d.key, path, d.a, d.b, why, blocking))

        if path[:2] == ("runtime", "data_files") and d.change == "changed" and not d.hidden:
            edit = edits.get(os.path.realpath(str(path[2])), "")  # a file both runs read
            if edit:
                skip(f"follows {edit} (applied with it)")
            elif repo_of(good, bad, str(path[2])) is not None:  # kept: a tree copy holds it
                changes.append(_change(d, path))
            else:
                found = good_content(good, bad, path)
                skip(f"{DATA_FILE}; {what_to_do(found)}" if found else DATA_FILE, True)
        if d.section in EFFECT_SECTIONS or d.key == "errors" or d.key.endswith(".errors"):
            continue
        # hidden because both runs ended alike is no noise: a --test tells them apart
        if d.hidden and not include_hidden and not d.reason.startswith(UNCHANGED):
            skip("noise (give --all to try it)")
            continue
        if d.section == "env":
            changes += _env_changes(d, path, secret, skip)
        elif d.section == "command":
            what = path[1] if len(path) > 1 else ""
            if what == "options":
                if _is_secret_value(d.b) and secret is None:
                    skip("a secret whose value is not known here")
                else:
                    changes.append(_change(d, path))
            elif what == "positionals" and int(path[2]) >= program_slots:
                changes.append(_change(d, path))
            elif what == "cwd" and isinstance(d.b, str) and os.path.isdir(d.b):
                changes.append(_change(d, path))
            elif what == "executable" and env_moves_path and bare_program:
                skip("follows env PATH (applied with it)")
            elif what == "executable" and switch:
                skip("follows command program (applied with it)")
            elif what == "program" and (pair := _interpreters(good, bad, d)):
                changes.append(_change(d, path).replace(a=pair[0], b=pair[1]))
            elif what in ("program", "positionals", "argv"):
                program = Skipped(d.section, d.key, path, d.a, d.b,
                                  "GOOD and BAD run different programs", True)
            else:
                skip(f"cannot be applied ({d.key} is not in the launch)", True)
        elif d.section == "models":
            src = path[1] if len(path) > 1 else ""
            if len(path) > 3 and path[2] == "config":
                if _model_dir(good, src) is None:
                    skip("the model is not given on the command line, or its directory is gone")
                else:
                    changes.append(_change(d, path))
            elif src in model_options:
                skip(f"follows command option {src} (applied with it)")
            elif edit := _model_file_edit(good, path, edits):
                skip(f"follows {edit} (applied with it)")
            else:
                found = good_content(good, bad, path)  # a file of the folder, edited in place
                skip(_BLOCKING_WHY["models"] + (f"; {what_to_do(found)}" if found else ""), True)
        elif d.section == "packages" and env_moves_path and bare_program and interpreter_moves:
            skip("follows env PATH: another interpreter (applied with it)")
        elif d.section == "packages" and switch and interpreter_moves:
            skip("follows command program: another interpreter (applied with it)")
        elif d.section == "packages" and pythonpath_moves and (
                path[1:2] == ("sys_path",) or path[-1:] == ("shadowed",)):
            skip("follows env PYTHONPATH (applied with it)")
        elif d.section == "packages" and overlay_why(str(path[1])) == "":
            if len(path) == 2:
                changes.append(_change(d, path))
            else:
                skip(f"follows packages {path[1]} (applied with it)")
        elif d.section == "packages" and len(path) == 2 and overlay_why(str(path[1])):
            skip(str(overlay_why(str(path[1]))), True)
        elif d.section == "git" and (src := _config_edit(good, bad, path, configs)):
            skip(f"the model's config.json: its fields are applied ({src})")
        elif d.section == "git" and (how := edit_of(good, bad, path)):
            if how == "apply":
                changes.append(_change(d, path))
            else:
                skip(how)
        elif d.section == "git" and bytecode_only(good, bad, path):
            skip("Python's bytecode cache: written by the runs, never their input")
        elif d.section == "git" and (rewritten := rewritten_untracked(good, bad, path)):
            skip(rewritten, True)
        elif d.section == "system" and (var := toolchain_variable(good, bad, d.key, moved)):
            skip(f"follows env {var} (applied with it)")  # CUDA home, compilers: PATH's
        elif d.section in _BLOCKING_WHY:
            skip(_BLOCKING_WHY[d.section], True)
        else:
            skip(f"section [{d.section}] cannot be applied")
    unique = {(s.section, s.key, s.why): s for s in skipped}
    return Plan(tuple(changes), tuple(unique.values()), program)


def _overlays(good: Snapshot, bad: Snapshot, diffs: Sequence[Difference]
              ) -> Callable[[str], str | None]:
    """Package name -> why no overlay can apply its other version ("" when one can: see
    :mod:`runsnap.experiments.overlay`; None: no version difference of that name). Asked
    only of the packages no variable carries: a venv switch's hundred are never read."""
    names = {*good.records.packages.distributions, *bad.records.packages.distributions}
    versions = {str(d.path[1]): (d.a, d.b) for d in diffs
                if d.section == "packages" and len(d.path) == 2 and d.path[1] in names}

    @functools.cache
    def why(name: str) -> str | None:
        return why_not(good, bad, name, *versions[name]) if name in versions else None

    return why


def _applied_configs(good: Snapshot, diffs: Sequence[Difference]) -> dict[str, str]:
    """``config.json`` files whose field differences are applied (real path -> model source):
    an edit of them in a git tree is the same change, seen by the git section."""
    out: dict[str, str] = {}
    for d in diffs:
        path = tuple(d.path)
        if d.section == "models" and len(path) > 3 and path[2] == "config":
            folder = _model_dir(good, str(path[1]))
            if folder is not None:
                out[os.path.realpath(os.path.join(folder, "config.json"))] = str(path[1])
    return out


def _model_file_edit(good: Snapshot, path: tuple[Any, ...], edits: Mapping[str, str]) -> str:
    """The uncommitted edit (its ``where``) that a model file's difference is, when the
    model's folder is in a git tree and the edit is applied (a tokenizer.json edited in the
    repository); else ""."""
    if not edits or len(path) < 4 or path[2] != "files":
        return ""
    folder = _model_dir(good, str(path[1]))
    if folder is None:
        return ""
    return edits.get(os.path.realpath(os.path.join(folder, str(path[3]))), "")


def _config_edit(good: Snapshot, bad: Snapshot, path: tuple[Any, ...],
                 configs: Mapping[str, str]) -> str:
    """The model source when git difference ``path`` is only the edit of a config.json whose
    fields are applied (the file's own diff, or a dirty flag set by nothing else); else ""."""
    if not configs or len(path) < 3:
        return ""
    repos = [s.records.git.repos.get(str(path[1])) or GitRepo() for s in (good, bad)]
    root = next((str(r.path) for r in repos if r.path), "")
    if not root:
        return ""

    def source(rel: Any) -> str:
        return configs.get(os.path.realpath(os.path.join(root, str(rel))), "")

    if len(path) > 3 and path[2] in ("diff", "untracked"):
        return source(path[3])
    if path[2] == "dirty":
        files = [f for r in repos for f in split_patch(str(r.diff or ""))]
        files += [str(u.path or "") for r in repos for u in r.untracked]
        found = {source(f) for f in files}
        return found.pop() if files and len(found) == 1 and "" not in found else ""
    return ""


def _pythons(a: Any, b: Any) -> bool:
    """Whether a program difference is one Python interpreter for another (by path)."""
    return all(isinstance(x, str) and "/" in x and is_python_name(os.path.basename(x))
               for x in (a, b))


def _interpreters(good: Snapshot, bad: Snapshot, d: Difference) -> tuple[str, str] | None:
    """GOOD's and BAD's interpreters by path when a program difference is one Python
    interpreter for another: named by path, or by a bare name (``python``) that the run's
    ``PATH`` resolved to ``[command] executable`` (a service's ``/opt/app/venv/bin/python``
    against ``python`` in a shell that activated another venv); else None."""
    ends = []
    for snap, x in ((good, d.a), (bad, d.b)):
        name = str(x or "")
        if "/" not in name and is_python_name(name):
            name = str(snap.records.command.executable or "")
        ends.append(name)
    return (ends[0], ends[1]) if _pythons(*ends) else None


def _program_slots(snap: Snapshot) -> int:
    """How many leading positional words name the program: ``python3 -m pkg`` 3,
    ``python3 train.py`` 2, ``torchrun`` 1.

    >>> from runsnap.snapshot import Snapshot
    >>> _program_slots(Snapshot({}, {"command": {"argv": ["python3", "-u", "-m", "x", "y"]}}))
    4
    """
    pos = positionals([str(a) for a in snap.records.command.argv])
    if not pos or not is_python_name(os.path.basename(pos[0])):
        return 1
    for i in range(1, len(pos)):
        if pos[i] in ("-m", "-c"):
            return i + 2
        if not pos[i].startswith("-"):
            return i + 1
    return len(pos)


def _change(d: Difference, path: tuple[Any, ...]) -> Change:
    return Change(path, d.section, d.key, d.a, d.b, d.score)


def _is_secret_value(value: Any) -> bool:
    return isinstance(value, str) and "<redacted:" in value


def _env_changes(d: Difference, path: tuple[Any, ...], secret: Any, skip: Any) -> list[Change]:
    name = d.key
    b = d.b
    if _is_secret_value(b):
        real = secret(name, b) if secret is not None else None
        if real is None:
            skip("a secret whose BAD value is not in this environment (set it here to try it)")
            return []
    x, y = d.a, d.b
    if not (isinstance(x, str) and isinstance(y, str)) or _is_secret_value(x + y):
        return [_change(d, path)]
    sep = list_separator(name, x, y)
    if sep is None:
        return [_change(d, path)]
    xs, ys = split_list(x, sep), split_list(y, sep)
    common_x = [e for e in xs if e in ys]
    common_y = [e for e in ys if e in xs]
    if common_x != common_y or len(set(xs)) != len(xs) or len(set(ys)) != len(ys):
        return [_change(d, path)]  # reordered or repeated: one change
    out = [Change((*path, "-", e), "env", f"{name} entry {e}", e, None, d.score)
           for e in xs if e not in ys]
    out += [Change((*path, "+", e), "env", f"{name} entry {e}", None, e, d.score)
            for e in ys if e not in xs]
    return out or [_change(d, path)]


def _moved_model_options(good: Snapshot, diffs: Sequence[Difference]) -> set[str]:
    """Model sources that are command options whose value itself differs."""
    return {d.key for d in diffs if d.section == "command" and d.key.startswith("--")
            and _model_dir(good, d.key) is not None}


def _model_dir(snap: Snapshot, src: str) -> str | None:
    model = snap.records.models.models.get(src)
    path = model.path if model else None
    if not isinstance(path, str) or not os.path.isdir(path):
        return None
    if not (src.startswith("--") or src.startswith("argv[")):
        return None
    return path


# --------------------------------------------------------------------------- applying


def apply(
    base: LaunchSpec,
    changes: Sequence[Change],
    *,
    good: Snapshot,
    bad: Snapshot,
    workdir: str,
    secret: Any = None,
    models: Sequence[str] = (),
    trees: Sequence[str] = (),
) -> LaunchSpec:
    """``base`` (GOOD's launch) with ``changes`` applied; model copies go under ``workdir``.

    ``models``: the sources whose config.json fields are searched. Every trial, the one with
    nothing applied too, reads those models through a copy with GOOD's recorded config (plus
    the chosen fields): the directory itself may hold BAD's config by now, edited in place.
    ``trees``: the repositories whose uncommitted edits are searched; every trial runs in a
    copy of each (:mod:`runsnap.experiments.gittrees`)."""
    env = dict(base.env)
    argv = list(base.argv)
    cwd = base.cwd
    entries: dict[str, list[Change]] = {}
    configs: dict[str, list[Change]] = {src: [] for src in models}
    packages: list[tuple[str, str]] = []
    for c in changes:
        kind = c.path[0]
        if kind == "env" and len(c.path) > 2:
            entries.setdefault(c.path[1], []).append(c)
        elif kind == "env":
            value = secret(c.key, c.b) if secret is not None and _is_secret_value(c.b) else c.b
            if value is None:
                env.pop(c.key, None)
            else:
                env[c.key] = value
        elif kind == "command" and c.path[1] == "options":
            value = c.b
            if secret is not None and _is_secret_value(value):
                value = secret(c.key, value)
            argv = set_option(argv, str(c.path[2]), value)
        elif kind == "command" and c.path[1] == "program":
            argv[0] = str(c.b)
        elif kind == "command" and c.path[1] == "positionals":
            argv = set_positional(argv, int(c.path[2]), c.b)
        elif kind == "command" and c.path[1] == "cwd":
            cwd = str(c.b)
        elif kind == "models":
            configs.setdefault(str(c.path[1]), []).append(c)
        elif kind == "packages":
            packages.append((str(c.path[1]), str(c.b)))
    for name, chosen in entries.items():
        env[name] = _apply_entries(name, good, bad, chosen)
    if packages:  # BAD's installed copies, first on PYTHONPATH
        env = overlay_env(env, packages, bad, os.path.join(workdir, "site-overlay"))
    if trees:  # before the model copies: a model under the repository is copied from there
        argv, cwd, env = copy_trees(argv, cwd, env, trees, changes, good, bad, workdir)
    for src, chosen in configs.items():
        if any(c.path[:3] == ("command", "options", src) for c in changes):
            continue  # the option itself points at BAD's model: nothing left to apply
        copy = copy_model(str(_model_dir(good, src)), src, chosen, good, bad, workdir)
        argv = (set_option(argv, src, copy) if src.startswith("--")
                else set_index(argv, int(src[5:-1]), copy))
    return base.replace(argv=tuple(argv), env=env, cwd=cwd)


def _apply_entries(name: str, good: Snapshot, bad: Snapshot, chosen: Sequence[Change]) -> str:
    a = str(good.records.env.vars.get(name, ""))
    b = str(bad.records.env.vars.get(name, ""))
    sep = list_separator(name, a, b) or ":"
    xs, ys = split_list(a, sep), split_list(b, sep)
    drop = {c.path[3] for c in chosen if c.path[2] == "-"}
    add = {c.path[3] for c in chosen if c.path[2] == "+"}
    if drop == {e for e in xs if e not in ys} and add == {e for e in ys if e not in xs}:
        return b  # every entry change: exactly BAD's value
    out = [e for e in xs if e not in drop]
    for i, e in enumerate(ys):
        if e in add:
            before = [p for p in ys[:i] if p in out]
            out.insert(out.index(before[-1]) + 1 if before else 0, e)
    return sep.join(out)
