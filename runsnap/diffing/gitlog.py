"""The one place diff looks at this machine: the commits between two commits of a repository
that is here (``git log A..B``), and the files they change (``git diff --name-only A B``)."""

from __future__ import annotations

import os
from collections.abc import Callable

from runsnap.base import programs

__all__ = ["FILES", "MAX_FILES", "CommitLog", "commits_between"]

#: The line of a commit difference's evidence that lists the files the commits change
#: (``git diff --name-only A B``), at most :data:`MAX_FILES` of them.
FILES = "files changed: "
MAX_FILES = 50

#: ``commits_between(repo_path, sha_a, sha_b)`` -> evidence lines, or None when unknown.
CommitLog = Callable[[str, str, str], "list[str] | None"]


def commits_between(path: str, sha_a: str, sha_b: str) -> list[str] | None:
    """Commits in B not in A (``+``) and in A not in B (``-``), like ``git log --oneline A..B``,
    then the files they change (a line that starts with :data:`FILES`).

    The one place diff looks at this machine: it runs only when the repository is here and both
    commits are in it; otherwise None.
    """

    if not os.path.isdir(path):
        return None
    git = programs.which("git")
    if git is None:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    base = [git, "-C", path, "-c", "core.quotepath=off"]
    check = programs.run([*base, "cat-file", "-e", f"{sha_a}^{{commit}}"], env=env)
    check_b = programs.run([*base, "cat-file", "-e", f"{sha_b}^{{commit}}"], env=env)
    if not (check.ok and check_b.ok):
        return None
    lines: list[str] = []
    for sign, rng in (("+", f"{sha_a}..{sha_b}"), ("-", f"{sha_b}..{sha_a}")):
        res = programs.run([*base, "log", "--oneline", "--no-decorate", "-n", "51", rng], env=env)
        if not res.ok:
            return None
        found = res.text().splitlines()
        lines += [f"{sign} {c}" for c in found[:50]]
        if len(found) > 50:
            lines.append(f"{sign} ... (more)")
    res = programs.run([*base, "diff", "--name-only", "--no-renames", sha_a, sha_b], env=env)
    names = res.text().splitlines() if res.ok else []
    if names:  # what the program may have used of them: runsnap/diffing/commitfiles.py
        lines.append(FILES + ", ".join(names[:MAX_FILES])
                     + (f" (and {len(names) - MAX_FILES} more)" if len(names) > MAX_FILES else ""))
    # Commit subjects are free text read from this machine: the same secret rules as a capture
    # (imported here: a diff of snapshots whose repositories are not here never needs them).
    from runsnap.redact import Redactor, load_key

    redactor = Redactor(load_key())
    return [redactor.scrub(line, "git log") for line in lines]
