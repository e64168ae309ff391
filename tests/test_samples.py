"""Every sample output in README.md and docs/*.md is what the program prints (tests/samples.py
says how samples are marked and rewritten), and no runsnap report appears unmarked."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.samples import MARK, REPORT_LINE, ROOT, Stage, documents, samples


@pytest.fixture(scope="module")
def stage() -> Iterator[Stage]:
    with Stage() as s:
        yield s


def _all() -> list[tuple[str, str, str, str, str]]:
    return [(str(doc.relative_to(ROOT)), m["scene"], m["command"], m["lang"], m["body"])
            for doc in documents() for m in samples(doc.read_text())]


def test_the_readme_has_samples() -> None:
    assert any(doc == "README.md" for doc, *_ in _all())


@pytest.mark.parametrize(("doc", "scene", "command", "lang", "body"), _all(),
                         ids=[f"{d}: {c}" for d, _, c, _, _ in _all()])
def test_a_sample_is_what_the_program_prints(stage: Stage, doc: str, scene: str, command: str,
                                             lang: str, body: str) -> None:
    assert body == stage.output(scene, command, lang), (
        f"{doc}: the sample of '{command}' is not what the program prints; rewrite the "
        f"samples with: python -m tests.samples")


def test_no_runsnap_report_is_shown_outside_a_sample() -> None:
    unmarked = [f"{doc.relative_to(ROOT)}: {block.splitlines()[0]}"
                for doc in documents()
                for block in re.findall(r"```console\n(.*?)```", MARK.sub("", doc.read_text()),
                                        re.S)
                if REPORT_LINE.search(block)]
    assert unmarked == []


def test_the_bisect_demo_is_as_wide_as_the_samples() -> None:
    """README's bisection (a real launch each trial, so not a sample) is shown at the samples'
    width, as runsnap wraps it on a terminal that wide."""
    from tests.samples import COLUMNS

    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- bisect-demo -->", 1)[1].split("<!-- /bisect-demo -->", 1)[0]
    wide = [ln for ln in block.splitlines() if len(ln) > COLUMNS and not ln.startswith("$ ")]
    assert wide == []
