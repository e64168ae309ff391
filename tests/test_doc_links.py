"""Every link of README.md and docs/*.md to a file of this repository, or to a heading in one,
resolves (pages move; a link that no longer leads anywhere fails here)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

#: ``[text](target)``, the target without a scheme (http:, mailto:): a file, ``#heading`` or both.
LINK = re.compile(r"\[[^\]]*\]\((?![a-z][a-z0-9+.-]*:)([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as ``-``.

    >>> slug("The pre-launch guard")
    'the-pre-launch-guard'
    >>> slug("`runsnap diff`: why two runs differ")
    'runsnap-diff-why-two-runs-differ'
    """
    text = heading.strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m[1]) for m in re.finditer(r"^#+ (.*)$", text, re.M)}


def test_every_doc_link_resolves() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []
