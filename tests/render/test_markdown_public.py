"""Markdown safe to paste into a public GitHub issue (issue 37, class 3).

Hostile values go where a snapshot holds what others wrote: the label, the branch name,
variable values (one that ``check`` quotes), the command's output lines. Every Markdown output
(``report`` of one and of two runs, ``diff``, ``show``, ``check``) is parsed with a real
CommonMark parser (markdown-it-py, GFM tables): no link, image or HTML may come out of it, and
no text outside code may hold what GitHub's own filters turn into a mention, an issue or commit
reference or a link (they run on the rendered text, so a backslash before ``#`` does not stop
them: https://docs.github.com/en/get-started/writing-on-github/working-with-advanced-formatting/autolinked-references-and-urls).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.conftest import git, make_repo, run_runsnap

#: Values written by someone else, each aiming at one thing GitHub would do.
HOSTILE = (
    "<img src=https://evil.example/x.png>",
    "ask @octocat about \\#4242",
    "see GH-4545 and owner/repo#4343",
    "</details><details open><summary>pwned",
    "[click me](https://evil.example/login)",
    "![tracker](https://evil.example/t.png)",
    "www.evil.example is down",
    "fixed in deadbeefcafe1234",
    "mail ops@evil.example now",
    "<script>alert(1)</script>",
)

#: What GitHub's filters would act on in text outside code.
GITHUB_ACTIVE = re.compile(
    r"(?<![\w`])@[A-Za-z0-9]|[\w.+-]@[\w-]+\.\w|#\d|(?i:\bGH-\d)|://|(?i:www\.)"
    r"|\bdeadbeefcafe1234\b")


def _active_text(md: str) -> list[str]:
    """The plain text pieces (outside code) where GitHub would link, mention or reference, and
    every link, image or HTML token, of ``md`` parsed as GitHub does."""
    bad: list[str] = []
    html = []
    for token in MarkdownIt("commonmark").enable("table").parse(md):
        if token.type == "html_block":
            html.append(token.content)
        for child in token.children or ():
            if child.type == "html_inline":
                html.append(child.content)
            elif child.type in ("link_open", "image"):
                bad.append(f"{child.type}: {child.attrs!r}")
            elif child.type == "text" and GITHUB_ACTIVE.search(child.content):
                bad.append(f"text: {child.content!r}")
    for piece in html:  # runsnap's own folds only, their summaries plain text
        rest = OWN_HTML.sub("", piece)
        if "<" in rest or ">" in rest or GITHUB_ACTIVE.search(rest):
            bad.append(f"html: {piece!r}")
    opened = sum(p.count("<details>") for p in html)
    if opened != sum(p.count("</details>") for p in html):
        bad.append(f"folds opened and closed: {opened}, {sum(p.count('</details>') for p in html)}")
    return bad


#: The HTML runsnap writes itself: folds with a summary, line breaks in table cells.
OWN_HTML = re.compile(r"</?details>|</?summary>|<br>")


@pytest.fixture(scope="module")
def hostile_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two real runs from a repository on a hostile branch, with hostile labels, values and
    output lines; B fails."""
    tmp = tmp_path_factory.mktemp("hostile")
    repo = make_repo(tmp / "proj", {"app.py": "import sys\nprint('ok')\n"})
    git(repo, "checkout", "-q", "-b", "fix/@octocat-#4242-GH-4545")
    lines = "\n".join(HOSTILE)
    (repo / "fail.py").write_text(
        "import sys\n"
        f"for line in {HOSTILE!r}:\n"
        "    print('WARNING: ' + line, file=sys.stderr)\n"
        f"raise SystemExit('RuntimeError: ' + {lines!r}.splitlines()[1])\n")
    paths = []
    for tag, script, value in (("a", "app.py", "ok"), ("b", "fail.py", " ".join(HOSTILE))):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "RUNSNAP_KEY_FILE": str(tmp / "key"),
               "PYTORCH_CUDA_ALLOC_CONF": f"expandable_segment:True,{HOSTILE[0]} {HOSTILE[1]}",
               "MY_NOTE": value, "NCCL_DEBUG_SUBSYSS": HOSTILE[2]}
        label = f"{tag} {HOSTILE[0]} {HOSTILE[1]} {HOSTILE[3]}"
        run_runsnap("capture", "--label", label, "-o", str(tmp / f"{tag}.toml"), "--",
                    sys.executable, script, cwd=repo, env=env)
        paths.append(tmp / f"{tag}.toml")
    return paths[0], paths[1]


@pytest.mark.parametrize("command", [
    ("report", "B"), ("report", "A", "B"), ("diff", "--format", "markdown", "A", "B"),
    ("diff", "--format", "markdown", "--all", "A", "B"), ("show", "--format", "markdown", "B"),
    ("check", "--format", "markdown", "B"),
], ids=lambda c: " ".join(c))
def test_markdown_outputs_make_nothing_active_from_snapshot_values(
        command: tuple[str, ...], hostile_pair: tuple[Path, Path]) -> None:
    a, b = hostile_pair
    args = [str(a) if x == "A" else str(b) if x == "B" else x for x in command]
    done = run_runsnap(*args)
    assert done.returncode in (0, 1), done.stderr
    md = done.stdout
    assert "octocat" in md  # the hostile values are shown, only made inert
    assert _active_text(md) == []
    md.encode("utf-8")


def test_the_checker_sees_what_github_would_act_on() -> None:
    """The check above is not blind: raw hostile text fails it, each value its own way."""
    for value in HOSTILE:
        assert _active_text(f"| x |\n|---|\n| {value} |\n\n- {value}\n"), value
