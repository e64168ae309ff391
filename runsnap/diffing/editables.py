"""A package installed editable from a checkout one run alone has: the checkout is how the
package came to differ, listed under the package.

``pip install -e ~/src/pkg`` in one environment and ``pip install -e /srv/pkg-release`` in the
other give three differences: the package (another version, imported from another file) and
two repositories each present in one run only (capture looks at a repository because an
editable install points into it: role ``editable install of pkg``). They are one change; as
three candidates they split a verdict the package alone decides. :func:`by_editable_source`
puts each such repository under the package's difference, with the run-time record of the
package imported from each checkout; the package keeps its own evidence (the program
imported it, its code on the failing traceback).

A repository that is also the working directory or ``--repo`` is the program's own, and a
repository at another commit is :func:`runsnap.diffing.grouping.by_commit`'s (its commit is
the cause, the editable package moved with it): both are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.grouprecord import Group
from runsnap.diffing.result import Difference
from runsnap.knowledge.packages import normalize_name

__all__ = ["by_editable_source"]

_ROLE = "editable install of "


def _editable_of(d: Difference, a: Any, b: Any) -> str | None:
    """The package whose editable install is the only reason capture looked at the repository
    of ``d`` (a repository present in one run only), normalised; else None."""
    if d.section != "git" or d.change not in ("added", "removed") or "." in d.key \
            or ": " in d.key:
        return None
    repo = (b if d.change == "added" else a).records.git.repos.get(d.key)
    roles = list(getattr(repo, "roles", None) or ())
    names = {normalize_name(r[len(_ROLE):]) for r in roles if str(r).startswith(_ROLE)}
    if len(names) != 1 or len(roles) != len(
            [r for r in roles if str(r).startswith(_ROLE)]):
        return None
    return names.pop()


def by_editable_source(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """Each repository present in one run only that capture looked at only as a package's
    editable source, under that package's difference (its version or where it was imported
    from), when the package differs."""
    sources: dict[str, list[Difference]] = {}
    for d in diffs:
        name = _editable_of(d, a, b)
        if name is not None:
            sources.setdefault(name, []).append(d)
    out: list[Group] = []
    for name, repos in sources.items():
        package = next((d for d in diffs if d.section == "packages"
                        and normalize_name(d.key.partition(".")[0]) == name), None)
        if package is None:
            continue
        imported = [d for d in diffs if d.path[:2] == ("runtime", "modules")
                    and len(d.path) > 2 and normalize_name(str(d.path[2])) == name]
        out.append(Group(package, (*(r.replace(reason=(
            f"where {name} was installed from (editable): {r.reason}")) for r in repos),
            *imported)))
    return out
