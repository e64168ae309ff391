"""What every HTML page of runsnap shares: the page itself (one self-contained file, inline CSS,
no script, nothing loaded from anywhere), escaping, and anchors made from locators.

Safety is by construction: every value from a snapshot goes through :func:`esc` (HTML-escaped,
control characters shown as escapes), every link is a fragment (``#...``) built by
:func:`href`, and the page declares a Content-Security-Policy that allows only its own
stylesheet (by hash): no script, image, font, frame or connection at all, so even markup that
slipped through could neither run nor load anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from runsnap.base.terminal import clean
from runsnap.diffing.result import short

__all__ = ["CSS", "Anchors", "esc", "href", "page", "pre", "val"]

#: The stylesheet of every page. Colours mean something: red an odd one out or a failure,
#: green success; the two sides of a diff are neutral.
CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--dim:#656d76;--line:#d0d7de;
--same:#c6e48b;--odd:#d73a49;--odd2:#8b0000;--split:#f1a33c;--none:#e1e4e8;--hl:#fff8c5}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--dim:#8d96a0;
--line:#30363d;--same:#2e6b30;--none:#30363d;--hl:#4d3d00}}
body{font:14px/1.45 system-ui,sans-serif;background:var(--bg);color:var(--fg);margin:1.5em;
max-width:1200px}
h1{font-size:1.25em;margin:0 0 .6em}h2{font-size:1.1em;margin:1.4em 0 .4em}
h3{font-size:1em;margin:1em 0 .3em}
code,pre{font:12.5px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3em 0;padding:.4em .6em;
border-left:3px solid var(--line)}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid var(--line);
padding:.2em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.dim,.why{color:var(--dim)}.verdict{font-weight:600}.bad{color:var(--odd)}.good{color:#1a7f37}
details{margin:.3em 0}summary{cursor:pointer}
.diff{margin:.6em 0;padding:.3em .6em;border:1px solid var(--line);border-radius:4px}
.diff h3{margin:.1em 0}
:target{background:var(--hl);outline:2px solid var(--split)}
a{color:inherit}
.legend span{display:inline-block;margin-right:1em}
.map{display:flex;flex-wrap:wrap;gap:4px;margin:.5em 0}
.node{border:1px solid var(--line);padding:2px 3px;font-size:10px;line-height:1;
text-decoration:none;display:inline-block}
.node b{display:block;font-weight:400;color:var(--dim);max-width:9em;overflow:hidden;
white-space:nowrap;text-overflow:ellipsis;margin-bottom:2px}
.cells{display:flex;flex-wrap:wrap;max-width:8.5em;gap:1px}
.r{display:inline-block;width:9px;height:9px;background:var(--same)}
.r.odd{background:var(--odd)}.r.odd2{background:var(--odd2)}.r.split{background:var(--split)}
.r.none{background:var(--none)}
.run{border:1px dashed var(--line);padding:2px 6px;font-size:11px;color:var(--dim)}
""".strip()


def esc(value: Any) -> str:
    """``value`` as HTML text: control characters shown as escapes, markup escaped.

    >>> esc('<script>alert("x")</script>')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    """
    return html.escape(clean(value if isinstance(value, str) else str(value)), quote=True)


def val(value: Any, limit: int = 400) -> str:
    """A snapshot value, shortened as the text report shortens it, escaped.

    >>> val(None), val(["a", "<b>"])
    ('(unset)', 'a, &lt;b&gt;')
    """
    return esc(short(value, limit))


def pre(lines: Iterable[str], cls: str = "") -> str:
    """Lines as a ``<pre>`` block, escaped."""
    klass = f' class="{cls}"' if cls else ""
    return f"<pre{klass}>" + "\n".join(esc(line) for line in lines) + "</pre>"


def href(anchor: str) -> str:
    """The ``href`` of a fragment: always ``#``, then the anchor percent-encoded, so that no
    value, whatever it holds, becomes a URL that leaves the page.

    >>> href("env.NCCL_ALGO"), href('javascript:alert(1)" x="')
    ('#env.NCCL_ALGO', '#javascript%3Aalert%281%29%22%20x%3D%22')
    """
    return "#" + quote(anchor, safe="-._~")


class Anchors:
    """Unique element ids made from locators (``env.NCCL_ALGO``): the second of the same name
    gets ``-2``, and so on. An id is the locator's parts joined by dots, control characters and
    white space replaced (an id holds none)."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def make(self, parts: Sequence[str]) -> str:
        """A fresh id for the locator ``parts``.

        >>> a = Anchors(); a.make(("env", "NCCL_ALGO")), a.make(("env", "NCCL_ALGO"))
        ('env.NCCL_ALGO', 'env.NCCL_ALGO-2')
        """
        base = ".".join(str(p) for p in parts)
        base = "".join(c if c.isprintable() and not c.isspace() else "_" for c in base) or "_"
        n = self._seen.get(base, 0) + 1
        self._seen[base] = n
        return base if n == 1 else f"{base}-{n}"


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def page(title: str, body: Sequence[str]) -> str:
    """A whole page: ``title`` (escaped here) and ``body`` (HTML already built from escaped
    values). The policy allows the page's one stylesheet, by its hash, and nothing else."""
    policy = (f"default-src 'none'; style-src '{_hash(CSS)}'; img-src 'none'; "
              "script-src 'none'; base-uri 'none'; form-action 'none'")
    head = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>"]
    return "\n".join([*head, *body, "</body>", "</html>"]) + "\n"
