"""The HTML pages in a real browser: headless Chromium (Debian's ``chromium``, installed by
``.ci/browser-install.sh``) opens each page from disk, with scripts on and off, and the tests read
the DOM it built through the DevTools protocol on a pipe (:mod:`benchmarks.browser`): the
verdict, the odd node of an N-way job map, anchors that resolve (the element ``:target`` matches
once the page is opened at the anchor); and a screenshot is taken. Skipped, with the reason,
where no Chromium can be found."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.browser import Browser, chromium
from tests.conftest import ROOT, run_runsnap
from tests.render.htmlcheck import Page, assert_inert

pytestmark = pytest.mark.slow


CHROMIUM = chromium()

#: A page of the test's own whose script, if scripts run, changes what it shows.
CONTROL = '<p id="x">static</p><script>document.getElementById("x").textContent="ran"</script>'


def visit(browser: Browser, page: Path, fragment: str = "") -> tuple[Page, str | None, bytes]:
    """``page`` opened in ``browser`` at ``fragment``: its DOM (checked inert), the id of the
    element the fragment resolved to, a screenshot."""
    tab = browser.open(page.as_uri() + fragment)
    got = assert_inert("<!DOCTYPE html>" + tab.dom())
    png = tab.screenshot()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    return got, tab.target_id(), png


@pytest.fixture(scope="module", params=[True, False], ids=["scripts-on", "scripts-off"])
def browser(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Browser]:
    """A headless Chromium with scripts on, then one with scripts off (checked on a page of
    the test's own whose script would change it)."""
    if CHROMIUM is None:
        pytest.skip("no Chromium (apt-get install chromium, or run .ci/browser-install.sh)")
    control = tmp_path_factory.mktemp("control") / "control.html"
    control.write_text(CONTROL)
    with Browser(scripts=request.param) as b:
        ran = 'id="x">ran' in b.open(control.as_uri()).dom()
        assert ran is request.param
        yield b


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real-shaped job of 64 ranks on 8 nodes (benchmarks/realranks.py): node 7 has another
    NCCL_IB_HCA, rank 9 another numpy, one rank exited 1."""
    out = tmp_path_factory.mktemp("job")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/realranks.py"), "--ranks", "64",
                        "--out", str(out)], capture_output=True, text=True, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    return out


def test_job_map_in_a_browser(job: Path, tmp_path: Path, browser: Browser) -> None:
    page = tmp_path / "job.html"
    r = run_runsnap("diff", str(job), "--format", "html", "-o", str(page))
    assert r.returncode == 1, r.stderr
    got, target, top = visit(browser, page)
    words = " ".join(got.text)
    assert "runsnap diff: 64 snapshots" in words and "odd ones out" in words
    assert "Job map (64 ranks on 8 nodes)" in words
    # the odd node: every rank of node-00007 is a red cell linking to its row
    odd = [a for a in got.by_class("odd") + got.by_class("odd2") if a.get("href")]
    assert len(odd) >= 9, odd
    assert "#node.node-00007" in got.hrefs and "env.NCCL_IB_HCA" in got.ids
    assert target is None
    # the anchor resolves: the browser matches it and shows another part of the page
    _, target, there = visit(browser, page, "#node.node-00007")
    assert target == "node.node-00007" and there != top
    rank = next(h for h in got.hrefs if h.startswith("#snap-"))
    assert visit(browser, page, rank)[1] == rank[1:]


def test_two_run_diff_in_a_browser(tmp_path: Path, browser: Browser) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    snaps = []
    for label, algo, code in (("good", "Ring", ""), ("bad", "<img src=x onerror=alert(1)>",
                                                      "; raise SystemExit(3)")):
        out = tmp_path / f"{label}.toml"
        r = run_runsnap("capture", "--label", label, "-o", str(out), "--", sys.executable, "-c",
                        "import os; os.environ.get('NCCL_ALGO')" + code, cwd=tmp_path,
                        env={**env, "NCCL_ALGO": algo})
        assert r.returncode in (0, 3), r.stderr
        snaps.append(str(out))
    page = tmp_path / "diff.html"
    assert run_runsnap("diff", *snaps, "--format", "html", "-o", str(page)).returncode == 1
    got, target, _ = visit(browser, page, "#env.NCCL_ALGO")
    words = " ".join(got.text)
    assert "runsnap diff:" in words and "<img src=x onerror=alert(1)>" in words
    assert target == "env.NCCL_ALGO" and "#env.NCCL_ALGO" in got.hrefs
