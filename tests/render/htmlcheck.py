"""What every runsnap page must be, checked with a real HTML parser (:mod:`html.parser`): only the
elements and attributes runsnap writes, every link a fragment, one stylesheet (runsnap's own), no
script, a Content-Security-Policy that allows nothing else. Shared by the safety tests and the
real-browser tests (which run the same check on the DOM Chromium built)."""

from __future__ import annotations

from html.parser import HTMLParser

from runsnap.render.html_page import CSS

#: The elements runsnap writes. Anything else in a page came from data.
ELEMENTS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "div",
            "span", "section", "details", "summary", "table", "tr", "th", "td", "code", "pre",
            "a", "ul", "li", "b", "i", "hr", "br", "tbody"}
#: The attributes runsnap writes.
ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "title",
              "open"}


class Page(HTMLParser):
    """A page parsed: its elements, attributes, links, ids, style and text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.styles: list[str] = []
        self.comments: list[str] = []
        self._in: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self._in:
            while self._in.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "style":
            self.styles.append(data)
        else:
            self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    @property
    def ids(self) -> set[str]:
        return {a["id"] or "" for _, a in self.tags if "id" in a}

    @property
    def hrefs(self) -> list[str]:
        return [a["href"] or "" for t, a in self.tags if t == "a" and "href" in a]

    def by_class(self, cls: str) -> list[dict[str, str | None]]:
        return [a for _, a in self.tags if cls in (a.get("class") or "").split()]


def assert_inert(text: str) -> Page:
    """``text`` is a page in which nothing came from data: see the module's docstring."""
    page = Page(text)
    strange = {t for t, _ in page.tags} - ELEMENTS
    assert not strange, f"elements that runsnap never writes: {strange}"
    attrs = {k for _, a in page.tags for k in a} - ATTRIBUTES
    assert not attrs, f"attributes that runsnap never writes: {attrs}"
    assert not page.comments, page.comments
    assert [t for t, _ in page.tags].count("style") == 1 and page.styles == [CSS]
    assert not [t for t, _ in page.tags if t in ("script", "link", "img", "iframe", "base")]
    metas = [a for t, a in page.tags if t == "meta"]
    assert all(set(a) <= {"charset", "http-equiv", "content", "name"} for a in metas)
    policy = [a["content"] or "" for a in metas if a.get("http-equiv") == "Content-Security-Policy"]
    assert len(policy) == 1 and "default-src 'none'" in policy[0] \
        and "script-src 'none'" in policy[0], policy
    assert not [a for a in metas if (a.get("http-equiv") or "").lower() == "refresh"]
    for link in page.hrefs:
        assert link.startswith("#"), f"a link that leaves the page: {link!r}"
        assert link[1:] in {_quote(i) for i in page.ids}, f"a link to nothing: {link!r}"
    return page


def _quote(anchor: str) -> str:
    from urllib.parse import quote

    return quote(anchor, safe="-._~")
