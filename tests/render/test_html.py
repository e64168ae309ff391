"""``--format html``: one self-contained page for diff (two runs and N-way), show and report,
in the text report's order, every difference an anchor; and inert whatever a snapshot holds (a
corpus of hostile values, as keys, values, evidence, reasons, labels and host names, rendered
and parsed back with a real HTML parser)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runsnap.diffing.many_result import NReport, NRow
from runsnap.diffing.result import Difference, Report, SnapInfo
from runsnap.render import render
from tests.conftest import run_runsnap
from tests.render.htmlcheck import assert_inert

#: Values meant to run, load or restyle something when pasted into HTML unescaped.
HOSTILE = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
    "javascript:alert(1)",
    "</style><style>body{background:url(http://evil.example/x)}</style>",
    "<!-- open comment",
    "</code></pre></details><iframe src=//evil.example></iframe>",
    '<a href="http://evil.example">click</a>',
    '<meta http-equiv="refresh" content="0;url=http://evil.example">',
    '<base href="http://evil.example/">',
    '<link rel="stylesheet" href="//evil.example/x.css">',
    "@import url(//evil.example/x.css);",
    "\x1b[31mred\x1b[0m \u202eevil\u202c \x00nul",
    "&lt;script&gt; already escaped &amp;",
    "]]><![CDATA[ x",
)


def _two_way() -> Report:
    a = SnapInfo("/snaps/<b>a.toml", "id", HOSTILE[0], HOSTILE[4], HOSTILE[1])
    b = SnapInfo(None, "id2", HOSTILE[3], "", HOSTILE[9])
    diffs = []
    for i, h in enumerate(HOSTILE):
        related = (Difference("runtime", f"env {h}", "changed", h, i,
                              path=("runtime", "env", h), reason=h),)
        diffs.append(Difference("env", h, "changed", h, f"{h}{i}", score=95 - i, reason=h,
                                evidence=(h, f"read at {h}:1"), related=related,
                                path=("env", h)))
    diffs.append(Difference("outcome", "first_error", "changed", HOSTILE[0], HOSTILE[6],
                            score=50, path=("outcome", "first_error")))
    return Report(a, b, tuple(diffs), notes=(HOSTILE[7],))


def _n_way() -> NReport:
    infos = tuple(SnapInfo(None, str(i), HOSTILE[i % 3], "", f"node-{i // 4}{HOSTILE[i // 4]}",
                           rank=i) for i in range(4 * len(HOSTILE)))
    n = len(infos)
    rows = []
    for j, h in enumerate(HOSTILE):
        values = tuple(h if i == j else "same" for i in range(n))
        rows.append(NRow("env", h, values, 80 - j, h, odd=j, kind="odd", odd_members=(j,)))
    rows.append(NRow("packages", HOSTILE[1], tuple(HOSTILE[i % 2] for i in range(n)), 20,
                     HOSTILE[2], kind="split"))
    return NReport(infos, tuple(rows), notes=(HOSTILE[5],))


@pytest.mark.parametrize("report", [_two_way(), _n_way()], ids=["two-way", "n-way"])
def test_hostile_values_render_inert_and_are_shown(report: Report | NReport) -> None:
    text = render(report, "html")
    page = assert_inert(text)
    shown = "".join(page.text)
    for h in HOSTILE[:12]:  # shown as text, not swallowed (control characters as escapes)
        assert h.replace("\n", " ") in shown or h[:20] in shown, h
    assert "\x1b" not in text and "\u202e" not in text and "\x00" not in text


def _capture(d: Path, label: str, algo: str, env: dict[str, str], code: str = "") -> Path:
    out = d / f"{label}.toml"
    program = "import os; os.environ.get('NCCL_ALGO')" + code
    r = run_runsnap("capture", "--label", label, "-o", str(out), "--", sys.executable, "-c",
                    program, cwd=d, env={**env, "NCCL_ALGO": algo,
                                         "HF_TOKEN": "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"})
    assert r.returncode in (0, 3), r.stderr
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    import os

    d = tmp_path_factory.mktemp("pair")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    good = _capture(d, "good", "Ring", env)
    bad = _capture(d, "bad", HOSTILE[1], env, "; import sys; sys.exit(3)")
    return good, bad


@pytest.mark.slow
def test_diff_page_is_the_text_report_in_order_with_anchors(pair: tuple[Path, Path]) -> None:
    good, bad = pair
    text = run_runsnap("diff", str(good), str(bad), "--format", "text").stdout
    r = run_runsnap("diff", str(good), str(bad), "--format", "html")
    assert r.returncode == 1, r.stderr
    page = assert_inert(r.stdout)
    words = "".join(page.text)
    verdict = text.splitlines()[0]
    assert words.lstrip().startswith(verdict.split(":")[0])
    assert verdict in words.replace("\n", " ")
    # the same order as the text report: the verdict, the outcome, the cause, the rest
    at = words.index("<body>") if "<body>" in words else 0
    for part in (verdict, "Outcome (what happened)", "Most likely cause", "env NCCL_ALGO"):
        at = words.index(part, at)  # each after the one before
    assert "#env.NCCL_ALGO" in page.hrefs and "env.NCCL_ALGO" in page.ids
    assert "QwErTyUiOp" not in r.stdout  # redacted as everywhere


@pytest.mark.slow
def test_show_and_report_pages(pair: tuple[Path, Path], tmp_path: Path) -> None:
    good, bad = pair
    show = run_runsnap("show", str(bad), "--format", "html")
    assert show.returncode == 0, show.stderr
    page = assert_inert(show.stdout)
    assert "section.env" in page.ids and "section.command" in page.ids
    assert "QwErTyUiOp" not in show.stdout
    one = run_runsnap("show", str(bad), "--section", "env", "--format", "html")
    assert one.returncode == 0 and "section.env" in assert_inert(one.stdout).ids
    # into a file, as docs/html.md shows it (and as diff and report do)
    kept = tmp_path / "snapshot.html"
    written = run_runsnap("show", str(bad), "--format", "html", "-o", str(kept))
    assert written.returncode == 0 and written.stdout == "", written.stderr
    assert kept.read_text() == show.stdout
    out = tmp_path / "report.html"
    rep = run_runsnap("report", str(good), str(bad), "--format", "html", "-o", str(out))
    assert rep.returncode == 0, rep.stderr
    page = assert_inert(out.read_text())
    words = "".join(page.text)
    assert "runsnap diff:" in words and "env NCCL_ALGO" in words
    assert "QwErTyUiOp" not in out.read_text()


def test_formats_without_a_page_say_so() -> None:
    r = run_runsnap("ls", "--format", "html")
    assert r.returncode == 2 and "Traceback" not in r.stderr
