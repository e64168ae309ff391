"""The experiment a person runs where no launch of ``runsnap why`` can: one shell line.

``why`` proves a cause by launching GOOD and BAD again with it applied or reverted. Some causes
no trial applies (another commit, uncommitted edits, another package version), and a job's
ranks are no launch of their own (its launcher started them). Then ``why`` says the experiment
instead, as one line the user can paste: BAD's launch with the cause put back to GOOD's state,
which must go good.

- a commit, or edits GOOD did not have: BAD's launch in a new git worktree at GOOD's commit
  (``git worktree add --detach`` under ``$TMPDIR``: the user's checkout is left alone), the
  launch's paths under the repository moved into it;
- a package version: BAD's interpreter installs GOOD's version, then BAD's launch;
- a file no launch can put back (read with other content outside git, an untracked file
  rewritten): a check of GOOD's digest, then BAD's launch (the user puts the content back);
- a variable: BAD's launch with GOOD's value (``env NAME=VALUE``, ``env -u NAME``);
- a job: the same, through the launcher that started the ranks (``torchrun --standalone
  --nproc-per-node 2``; several nodes: ``--nnodes N``, run on each).

A value that is a secret is never written out: no line is made for it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Any

from runsnap.base.argv import is_python_name
from runsnap.experiments.filestate import good_content
from runsnap.snapshot import Snapshot

__all__ = ["MUST", "experiment_line", "launch_line"]

#: Where the experiment's worktree goes: the user's temporary folder (the shell expands it),
#: named by GOOD's commit.
WORKTREE = '"${TMPDIR:-/tmp}/runsnap-good-%s"'


#: What the experiment must show, said at the end of its line (a shell comment).
MUST = "# must go as GOOD went"


def _secret(value: Any) -> bool:
    return "<redacted" in str(value)


def _job_prefix(snap: Snapshot) -> list[str] | None:
    """The launcher's words that start the job again (one node's share), or None when BAD is
    no rank of a job."""
    launcher = snap.records.meta.launcher
    name = str(launcher.name or "")
    if name in ("", "local") or launcher.world_size is None:
        return None
    per_node = launcher.local_world_size or launcher.world_size
    if name == "torchrun":  # one node: --standalone, a rendezvous on a free port
        nodes = max(1, int(launcher.world_size) // max(1, int(per_node)))
        where = ["--standalone"] if nodes == 1 else ["--nnodes", str(nodes)]
        return ["torchrun", *where, "--nproc-per-node", str(per_node)]
    if name in ("openmpi", "mpich", "pmix"):  # the names runsnap.knowledge.launchers gives
        return ["mpirun", "-np", str(launcher.world_size)]
    if name == "slurm":
        return ["srun", "-n", str(launcher.world_size)]
    return None


def launch_line(snap: Snapshot) -> list[str]:
    """The words of ``snap``'s launch as a person types them: its argv, or for a rank of a job
    the launcher's words and the rank's program (``torchrun ... train.py --lr 3``)."""
    argv = [str(a) for a in snap.records.command.argv]
    prefix = _job_prefix(snap)
    if prefix is None:
        return argv
    if prefix[0] == "torchrun" and argv and is_python_name(os.path.basename(argv[0])):
        return [*prefix, *argv[1:]]  # torchrun runs the script with Python itself
    return [*prefix, *argv]


def _under(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` when it lies under it (``.`` for ``root`` itself)."""
    root = root.rstrip("/") or "/"
    if path == root:
        return "."
    return path[len(root) + 1:] if path.startswith(root + "/") else None


def _in_cwd(snap: Snapshot, words: Sequence[str]) -> str:
    cwd = str(snap.records.command.cwd or "")
    line = shlex.join(words)
    return f"cd {shlex.quote(cwd)} && {line}" if cwd else line


def _git_line(cause: Any, good: Snapshot, bad: Snapshot) -> str | None:
    """BAD's launch in a worktree at GOOD's commit: the commit that differs, or edits (and
    new files) BAD had and GOOD did not. None when GOOD had edits of its own (no commit holds
    GOOD's state) or the repository's path or commit is not known."""
    path = tuple(cause.path)
    if len(path) < 3:
        return None
    name = str(path[1])
    g, b = good.records.git.repos.get(name), bad.records.git.repos.get(name)
    if g is None or b is None or not g.commit or not b.path:
        return None
    if g.dirty and (g.diff or g.diff_truncated):
        return None
    commit, repo = str(g.commit), str(b.path)
    tree = WORKTREE % commit[:12]
    cwd = str(bad.records.command.cwd or "")
    inside = _under(cwd, repo) if cwd else None
    words = []
    for word in launch_line(bad):
        rel = _under(word, repo) if os.path.isabs(word) else None
        if rel is None:
            words.append(shlex.quote(word))
        elif inside is not None:  # the launch runs inside the worktree: the path relative
            words.append(shlex.quote(os.path.relpath(rel, inside)))
        else:
            words.append(f"{tree}/{shlex.quote(rel)}")
    go = (f"cd {tree}" + ("" if inside == "." else f"/{shlex.quote(str(inside))}")) \
        if inside is not None else \
        (f"cd {shlex.quote(cwd)}" if cwd else "")
    add = f"{shlex.join(['git', '-C', repo, 'worktree', 'add', '--detach'])} {tree} {commit[:12]}"
    return " && ".join(x for x in (add, go, " ".join(words)) if x)


def _packages_line(cause: Any, bad: Snapshot) -> str | None:
    """GOOD's version of one package installed into BAD's interpreter, then BAD's launch."""
    path = tuple(cause.path)
    if len(path) != 2 or cause.key in ("prefix", "sys.path", "interpreter", "python_version",
                                       "implementation") or not isinstance(cause.a, str):
        return None
    python = str(bad.records.command.executable or "")
    if not python:
        return None
    pin = f"{cause.key}=={cause.a}"
    install = shlex.join([python, "-m", "pip", "install", pin])
    return f"{install} && {_in_cwd(bad, launch_line(bad))}"


def _env_line(cause: Any, bad: Snapshot) -> str | None:
    """BAD's launch with GOOD's value of one variable."""
    path = tuple(cause.path)
    if len(path) != 2 or _secret(cause.a):
        return None
    name = str(path[1])
    setting = ["env", "-u", name] if cause.a is None else ["env", f"{name}={cause.a}"]
    return _in_cwd(bad, [*setting, *launch_line(bad)])


def _file_line(cause: Any, good: Snapshot, bad: Snapshot) -> str | None:
    """BAD's launch once a file no launch can put back holds GOOD's content again: the line
    checks the file's digest against GOOD's first, and stops there while it differs."""
    found = good_content(good, bad, cause.path)
    if found is None:
        return None
    check = f"printf '%s  %s\\n' {found[1]} {shlex.quote(found[0])} | sha256sum --check --quiet"
    return f"{check} && {_in_cwd(bad, launch_line(bad))}"


def experiment_line(cause: Any, good: Snapshot, bad: Snapshot) -> str | None:
    """One shell line that runs BAD's launch with ``cause`` (a difference or a change: its
    ``path``, ``key``, GOOD's value ``a``) back at GOOD's state; it must go as GOOD went.
    None when no such line can be written (see the module's text)."""
    section = tuple(cause.path)[:1]
    line = _file_line(cause, good, bad) or (
        _git_line(cause, good, bad) if section == ("git",) else \
        _packages_line(cause, bad) if section == ("packages",) else \
        _env_line(cause, bad) if section == ("env",) else None)
    return f"{line}  {MUST}" if line else None
