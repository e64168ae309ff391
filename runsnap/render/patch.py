"""``runsnap diff --patch``: the uncommitted code of each run as ``git diff`` showed it.

From each snapshot's stored diff (``[git] repos.NAME.diff``), file by file: a file edited in
one run only shows that run's patch; a file edited in both, differently, shows A's patch and
B's. Lines are coloured as git colours them and made safe for a terminal; a line longer than
the terminal is wrapped, never cut (a change past the last column stays visible), each
further part starting with the line's own ``+``/``-``/`` `` and ``↪``.
"""

from __future__ import annotations

from runsnap.base.terminal import clean, wrap
from runsnap.diffing.sections.git import split_patch
from runsnap.render.diff import patch_line
from runsnap.render.style import Style

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["render_patch", "wrap_code"]

#: Begins each further part of a wrapped code line, after the line's own marker.
CONTINUED = "↪"


def wrap_code(line: str, cols: int) -> list[str]:
    """A line of a patch in parts of at most ``cols`` characters (0: whole), broken at the
    column, never at a word: code is shown exactly. Each part after the first starts with the
    line's marker and :data:`CONTINUED`; tabs become spaces as a terminal shows them.

    >>> wrap_code("+x = compute(alpha, beta)", 12)
    ['+x = compute', '+↪(alpha, be', '+↪ta)']
    >>> wrap_code("-short", 12)
    ['-short']
    """
    text = clean(line.expandtabs(8) if "\t" in line else line)
    if cols <= 0 or len(text) <= cols:
        return [text]
    marker = text[0] if text[:1] in ("+", "-", " ") else ""
    lead = f"{marker}{CONTINUED}"
    room = max(cols - len(lead), 8)
    parts, rest = [text[:cols]], text[cols:]
    while rest:
        parts.append(lead + rest[:room])
        rest = rest[room:]
    return parts


def render_patch(a: Snapshot, b: Snapshot, color: bool = False, width: int = 0) -> str:
    """The uncommitted edits that differ between snapshots ``a`` and ``b``; ``""`` when none.
    ``width``: the terminal's; code lines are wrapped to it (:func:`wrap_code`), headings at
    spaces."""
    st = Style(color)
    ra, rb = a.records.git.repos, b.records.git.repos
    out: list[str] = []
    for name in [*ra, *(n for n in rb if n not in ra)]:
        x, y = ra.get(name), rb.get(name)
        pa, pb = (split_patch(str(r.diff or "") if r else "") for r in (x, y))
        for path in [*pa, *(p for p in pb if p not in pa)]:
            if pa.get(path) == pb.get(path):
                continue
            sides = [(tag, patch) for tag, patch in (("A", pa.get(path)), ("B", pb.get(path)))
                     if patch is not None]
            only = "" if len(sides) == 2 else f" (edited in {sides[0][0]} only)"
            out += [st.bold(part) for part in wrap(clean(f"{name}: {path}{only}"), width, "  ")]
            for tag, patch in sides:
                if len(sides) == 2:
                    out.append(st.bold(f"{tag}'s edit:"))
                out += [patch_line(part, st) for line in patch.split("\n")
                        for part in wrap_code(line, width)]
            out.append("")
        for tag, repo in (("A", x), ("B", y)):
            if repo is not None and repo.diff_truncated:
                note = clean(f"{name}: {tag}'s stored diff was cut at the capture's "
                             "--max-diff-bytes; the rest is not in the snapshot")
                out += [st.yellow(part) for part in wrap(note, width, "  ")]
    return "\n".join(out).rstrip("\n") + "\n" if out else ""
