"""``[packages]``: the interpreter, ``sys.path``, distributions added, removed, upgraded or
downgraded (PEP 440), and installs that moved; scored with :mod:`runsnap.knowledge.packages`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.sections import facts
from runsnap.diffing.walk import Parts, compare_lists, dotted, locator, walk
from runsnap.diffing.written import record, written
from runsnap.knowledge.packages import is_core_package, normalize_name, version_change
from runsnap.snapshot.records import Distribution, Packages

__all__ = ["compare", "score"]

def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """The interpreter, then distributions added / removed / upgraded / downgraded (PEP 440), and
    an install location or editable source that moved even when the version is equal."""
    out: list[Difference] = []
    pa, pb = record(Packages, a), record(Packages, b)
    for key, label in (("interpreter_real", "interpreter"), ("python_version", "python_version"),
                       ("implementation", "implementation")):
        x, y = getattr(pa, key), getattr(pb, key)
        if x != y and (x or y):
            ev: tuple[str, ...] = ()
            if key == "interpreter_real":
                ev = _interpreters(pa, pb)
            out.append(Difference("packages", label, "changed", x, y, evidence=ev,
                                  path=("packages", label)))
    if pa.prefix != pb.prefix and pa.prefix and pb.prefix:
        # another virtual environment: the interpreter binary is often the same file
        out.append(Difference("packages", "prefix", "changed", pa.prefix, pb.prefix,
                              evidence=_interpreters(pa, pb),
                              path=("packages", "prefix")))
    sa, sb = list(pa.sys_path), list(pb.sys_path)
    if sa != sb and (sa or sb) and pa.has("distributions"):
        change, ev = compare_lists(sa, sb)
        out.append(Difference("packages", "sys.path", change, sa, sb, evidence=ev,
                              path=("packages", "sys_path")))
    da = {normalize_name(k): (k, v) for k, v in pa.distributions.items()}
    db = {normalize_name(k): (k, v) for k, v in pb.distributions.items()}
    for norm, (name, x) in da.items():
        if norm not in db:
            out.append(Difference("packages", name, "removed", x.version, None,
                                  evidence=(f"was at {written(x, 'location', '?')}",),
                                  path=("packages", name)))
            continue
        y = db[norm][1]
        vx, vy = str(written(x, "version")), str(written(y, "version"))
        moved = list(_dist_fields(x, y))
        if vx != vy:  # where the other version lives is evidence, not another difference
            ev = tuple(f"{dotted(parts)}: {fx} -> {fy}" for parts, fx, fy in moved)
            out.append(Difference("packages", name, version_change(vx, vy), vx, vy, evidence=ev,
                                  path=("packages", name)))
            continue
        for parts, fx, fy in moved:
            out.append(Difference("packages", f"{name}.{dotted(parts)}", "changed", fx, fy,
                                  path=locator("packages", name, *parts)))
    for norm, (name, y) in db.items():
        if norm not in da:
            out.append(Difference("packages", name, "added", None, y.version,
                                  evidence=(f"at {written(y, 'location', '?')}",),
                                  path=("packages", name)))
    shadow_a = {(normalize_name(written(s, "name")), written(s, "location")): s
                for s in pa.shadowed}
    shadow_b = {(normalize_name(written(s, "name")), written(s, "location")): s
                for s in pb.shadowed}
    for k, s in shadow_a.items():
        if k not in shadow_b:
            out.append(Difference("packages", f"{s.name}.shadowed", "removed",
                                  f"{s.version} at {k[1]}", None,
                                  path=("packages", str(s.name), "shadowed")))
    for k, s in shadow_b.items():
        if k not in shadow_a:
            out.append(Difference("packages", f"{s.name}.shadowed", "added", None,
                                  f"{s.version} at {k[1]}",
                                  path=("packages", str(s.name), "shadowed")))
    return out + facts.packages(a, b)  # engine builds, CUDA libraries, conda


def _interpreters(pa: Packages, pb: Packages) -> tuple[str, str]:
    """The two interpreters and why each was chosen, the evidence of another one."""
    return (f"A: {pa.interpreter} ({written(pa, 'reason')})",
            f"B: {pb.interpreter} ({written(pb, 'reason')})")


def _dist_fields(x: Distribution, y: Distribution) -> Iterator[tuple[Parts, Any, Any]]:
    for field in ("location", "editable", "source"):
        fx, fy = getattr(x, field), getattr(y, field)
        if fx != fy:
            yield (field,), fx, fy
    # direct_url.url and .editable are already compared as source and editable.
    skip = {"editable", "url"} if x.has("source") and y.has("source") else {"editable"}
    for parts, _change, fx, fy in walk(x.direct_url.raw, y.direct_url.raw):
        if dotted(parts) not in skip:
            yield ("direct_url", *parts), fx, fy


def score(d: Difference, rules: RankContext) -> Verdict:
    """The interpreter first (84: every package may differ), then core packages (80-82), then
    other packages (70-72, a downgrade above an upgrade: regressions are more often the cause),
    the same version from another location (66) and ``sys.path`` order (62; 35 when only each
    run's own script directory, first, differs: ``rules.own_dirs_only``)."""
    if d.key in ("interpreter", "python_version", "implementation"):
        return 84, "another Python interpreter: every installed package may differ", False
    if d.key == "prefix":
        return 84, "another Python environment (sys.prefix): every installed package may " \
            "differ", False
    if d.key == "sys.path":
        if rules.own_dirs_only:
            return 35, ("only the script's own directory differs (first on sys.path): it "
                        "follows where the script is, not which copy of a library is "
                        "imported"), False
        return 62, "sys.path decides which copy of a module is imported", False
    fact = facts.score(d)  # engine builds, CUDA libraries, conda
    if fact is not None:
        return fact[0], fact[1], False
    name, _, field = d.key.partition(".")
    if field == "shadowed":
        return 64, "a second copy of this package is hidden behind the one imported", False
    if field:
        return 66, f"the same {name} installed from elsewhere: its code may differ", False
    core = is_core_package(name)
    bump = {"downgraded": 2, "upgraded": 1}.get(d.change, 0)
    if core:
        return 80 + bump, f"{name} is at the core of the serving or training stack", False
    return 70 + bump, "another package version changes the code that runs", False
