"""An N-way diff (the ranks and nodes of one job) as one self-contained HTML page: the verdict,
the set, then **the job map** (ranks grouped by node, one cell per rank, coloured by the
odd-one-out verdict, with a legend), then the keys not the same everywhere, odd ones out first,
as the text report lists them, then a drill-down per node that differs: each of its ranks with
the keys that set it apart.

Readable at 32,768 ranks: runs of nodes where every rank agrees with the majority are folded
into one line (``node-0000 … node-2046: 2,047 nodes, all as the majority``) that opens on a
click; no script is needed (a cell is a link to its rank's row, which ``:target`` highlights).
"""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing.many import entries, group_sentence, sentence
from runsnap.diffing.many_result import NReport, NRow
from runsnap.diffing.result import SnapInfo, short, who
from runsnap.render.html_page import Anchors, esc, href, page, val
from runsnap.render.many import files_line, set_line

__all__ = ["DRILLED_NODES", "FOLD_NODES", "LISTED", "body_html", "render_html"]

#: Keys listed at all (the rest: ``--format json``); the text report lists 24.
LISTED = 200
#: Nodes with a drill-down section (the rest are named, and JSON has them).
DRILLED_NODES = 256
#: Ranks of one node listed in its drill-down.
DRILLED_RANKS = 64
#: With more nodes than this, runs of nodes that agree everywhere are folded into one line.
FOLD_NODES = 64
#: The shortest run of agreeing nodes that is folded.
FOLD_RUN = 3

_TITLES = {"odd": "Odd ones out (they differ from the majority)", "split": "Split (no majority)",
           "per-rank": "One value per rank or host, as the launcher numbers them (not counted)"}

_LEGEND = (("r", "as the majority"), ("r odd", "odd one out in 1 key"),
           ("r odd2", "odd one out in 2 keys or more"), ("r split", "on a side of a split"))


_BAD = ' class="bad"'


class _Marks:
    """Per snapshot: the counted rows that set it apart (odd ones out) or put it on a minority
    side of a split."""

    def __init__(self, report: NReport) -> None:
        n = len(report.snapshots)
        self.odd: list[list[NRow]] = [[] for _ in range(n)]
        self.split: list[list[NRow]] = [[] for _ in range(n)]
        for row in report.counted:
            if row.kind == "odd":
                for m in row.odd_members:
                    self.odd[m].append(row)
            elif row.kind == "split":
                for _, members in row.groups()[1:]:
                    for m in members:
                        self.split[m].append(row)

    def cls(self, i: int) -> str:
        """The cell's class: how snapshot ``i`` stands."""
        k = len(self.odd[i])
        if k:
            return "r odd" if k == 1 else "r odd2"
        return "r split" if self.split[i] else "r"

    def rows(self, i: int) -> list[NRow]:
        return self.odd[i] + self.split[i]


def _nodes(infos: Sequence[SnapInfo]) -> list[tuple[str, list[int]]]:
    """The snapshots grouped by host, hosts in order of first appearance, each host's by rank."""
    hosts: dict[str, list[int]] = {}
    for i, s in enumerate(infos):
        hosts.setdefault(s.host or "(no host)", []).append(i)
    for members in hosts.values():
        members.sort(key=lambda i: (infos[i].rank is None, infos[i].rank or 0, i))
    return list(hosts.items())


def _rank_id(i: int) -> str:
    """The id of snapshot ``i``'s row (its index: ranks may repeat, or be missing)."""
    return f"snap-{i}"


def _label(i: int, infos: Sequence[SnapInfo]) -> str:
    s = infos[i]
    return f"rank {s.rank}" if s.rank is not None else s.name


def _node_box(host: str, members: list[int], marks: _Marks, infos: Sequence[SnapInfo],
              node_ids: dict[str, str]) -> str:
    cells = []
    for i in members:
        cls = marks.cls(i)
        tip = esc(_label(i, infos))
        if cls == "r":
            cells.append(f'<i class="r" title="{tip}"></i>')
        else:
            k = len(marks.rows(i))
            cells.append(f'<a class="{cls}" href="{href(_rank_id(i))}" '
                         f'title="{tip}: {k} key{"s" if k != 1 else ""}"></a>')
    name = esc(host)
    if host in node_ids:
        name = f'<a href="{href(node_ids[host])}">{name}</a>'
    return f'<div class="node"><b title="{esc(host)}">{name}</b><span class="cells">' \
           f'{"".join(cells)}</span></div>'


def _job_map(report: NReport, marks: _Marks, node_ids: dict[str, str]) -> list[str]:
    infos = report.snapshots
    nodes = _nodes(infos)
    legend = "".join(f'<span><i class="{c}"></i> {w}</span>' for c, w in _LEGEND)
    out = [f"<h2>Job map ({len(infos):,} ranks on {len(nodes):,} nodes)</h2>",
           f'<p class="legend">{legend}</p>', '<div class="map" id="map">']
    fold = len(nodes) > FOLD_NODES
    run: list[tuple[str, list[int]]] = []

    def flush() -> None:
        if not run:
            return
        boxes = [_node_box(h, m, marks, infos, node_ids) for h, m in run]
        if len(run) < FOLD_RUN:
            out.extend(boxes)
        else:
            ranks = sum(len(m) for _, m in run)
            out.append(f'<details class="run"><summary>{esc(run[0][0])} … {esc(run[-1][0])}: '
                       f"{len(run):,} nodes, {ranks:,} ranks, all as the majority</summary>"
                       f'<div class="map">{"".join(boxes)}</div></details>')
        run.clear()

    for host, members in nodes:
        clean_node = all(marks.cls(i) == "r" for i in members)
        if fold and clean_node:
            run.append((host, members))
            continue
        flush()
        out.append(_node_box(host, members, marks, infos, node_ids))
    flush()
    out.append("</div>")
    return out


def _keys(report: NReport, ids: Anchors, row_ids: dict[int, str]) -> list[str]:
    listed = entries(report.shown)
    out: list[str] = []
    kind = None
    for n, entry in enumerate(listed[:LISTED], 1):
        row = entry if isinstance(entry, NRow) else entry[0]
        title = "Noise and ignored (not counted)" if row.hidden and row.kind != "per-rank" \
            else _TITLES.get(row.kind, row.kind)
        if title != kind:
            out.append(f"<h2>{esc(title)}</h2>")
            kind = title
        group = entry if not isinstance(entry, NRow) else (entry,)
        for r in group:
            row_ids[id(r)] = ids.make(r.path)
        if isinstance(entry, NRow):
            anchor = row_ids[id(row)]
            said = sentence(row, report.snapshots)
            out += [f'<section class="diff" id="{esc(anchor)}"><h3>{n}. <a href="{href(anchor)}">'
                    f"{esc(row.where)}</a> <span class=\"dim\">[{row.score}]</span></h3>",
                    *[f"<div{_BAD if j == 0 and row.kind == 'odd' else ''}>"
                      f"{esc(short(t, 400))}</div>" for j, t in enumerate(said)],
                    f'<div class="why">why: {esc(row.reason)}</div>', _values(row, report),
                    "</section>"]
            continue
        words, keys = group_sentence(entry, report.snapshots)
        items = "".join(f'<li id="{esc(row_ids[id(r)])}"><a href="{href(row_ids[id(r)])}">'
                        f"{esc(short(k, 400))}</a></li>" for r, k in zip(entry, keys, strict=False))
        out += [f'<section class="diff"><h3>{n}. {esc(short(words, 400))} <span class="dim">'
                f"[{row.score}]</span></h3><ul>{items}</ul>",
                f'<div class="why">why: {esc(row.reason)}</div></section>']
    if len(listed) > LISTED:
        rest = sum(1 if isinstance(e, NRow) else len(e) for e in listed[LISTED:])
        out.append(f'<p class="dim">{rest} more keys: runsnap diff --format json has them</p>')
    return out


def _values(row: NRow, report: NReport) -> str:
    """Each value of the row with who holds it, folded."""
    groups = row.groups()
    items = "".join(f"<tr><td>{len(m):,}</td><td><code>{val(v, 2000)}</code></td><td>"
                    f"{esc(who(m, report.snapshots))}</td></tr>" for v, m in groups[:20])
    more = f'<p class="dim">… and {len(groups) - 20} more values</p>' if len(groups) > 20 else ""
    return (f"<details><summary>{len(groups)} values</summary><table><tr><th>how many</th>"
            f"<th>value</th><th>who</th></tr>{items}</table>{more}</details>")


def _drill(report: NReport, marks: _Marks, node_ids: dict[str, str],
           row_ids: dict[int, str]) -> list[str]:
    """A section per node that differs: its ranks, each with the keys that set it apart."""
    infos = report.snapshots
    odd_nodes = [(h, m) for h, m in _nodes(infos) if h in node_ids]
    if not odd_nodes:
        return []
    out = ["<h2>Nodes that differ, rank by rank</h2>"]
    for host, members in odd_nodes[:DRILLED_NODES]:
        ranks = [i for i in members if marks.rows(i)]
        out += [f'<section class="diff" id="{esc(node_ids[host])}"><h3>{esc(host)} '
                f'<span class="dim">({len(ranks)} of {len(members)} ranks differ)</span></h3>',
                "<table><tr><th>rank</th><th>keys that set it apart</th></tr>"]
        for i in ranks[:DRILLED_RANKS]:
            keys = []
            for r in marks.rows(i):
                name = esc(r.where)
                anchor = row_ids.get(id(r))
                link = f'<a href="{href(anchor)}">{name}</a>' if anchor else name
                keys.append(f"{link} = <code>{val(r.values[i], 200)}</code>")
            out.append(f'<tr id="{esc(_rank_id(i))}"><td>{esc(_label(i, infos))}</td>'
                       f'<td>{"<br>".join(keys)}</td></tr>')
        out.append("</table>")
        if len(ranks) > DRILLED_RANKS:
            out.append(f'<p class="dim">… and {len(ranks) - DRILLED_RANKS} more ranks</p>')
        out.append("</section>")
    if len(odd_nodes) > DRILLED_NODES:
        out.append(f'<p class="dim">{len(odd_nodes) - DRILLED_NODES} more nodes differ: '
                   "runsnap diff --format json has them</p>")
    return out


def render_html(report: NReport, color: bool = False) -> str:
    """The page of an N-way ``report``."""
    return page(*body_html(report))


def body_html(report: NReport, level: int = 1) -> tuple[str, list[str]]:
    """The verdict and the page's body, the verdict an ``h{level}``."""
    verdict = f"runsnap diff: {report.verdict()}"
    body = [f'<h{level} class="verdict">{esc(verdict)}</h{level}>',
            f"<p>set: {esc(set_line(report))}</p>"]
    files = files_line(report)
    if files:
        body.append(f"<p>{esc(files)}</p>")
    body += [f'<p class="note">note: {esc(n)}</p>' for n in report.notes]
    body += [f'<p class="bad">unreadable, left out: {esc(u)}</p>' for u in report.unreadable]
    marks = _Marks(report)
    node_ids: dict[str, str] = {}
    ids = Anchors()
    for host, members in _nodes(report.snapshots):
        if any(marks.rows(i) for i in members):
            node_ids[host] = ids.make(("node", host))
    row_ids: dict[int, str] = {}
    keys = _keys(report, ids, row_ids)
    body += _job_map(report, marks, node_ids)
    body += keys
    body += _drill(report, marks, node_ids, row_ids)
    hidden = report.hidden
    if hidden and not report.show_all:
        names = ", ".join(r.key for r in hidden[:200]) + (", ..." if len(hidden) > 200 else "")
        body += [f"<details><summary>{len(hidden)} keys hidden (one value per rank or host, "
                 f"noise)</summary><p class=\"dim\">{esc(names)}</p></details>"]
    return verdict, body
