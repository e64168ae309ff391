"""Class 5 (issue 37): a snapshot's long line costs memory in proportion to the line, not to
what redaction remembers of it; every secret in it is still hidden (peak RSS against the
snapshot's size and a tomllib parse: ``benchmarks/growth.py --only line``)."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from runsnap.base.linesub import sub_words
from runsnap.redact import FingerprintKey, Redactor
from runsnap.redact.known import WEAK_MAX
from runsnap.redact.names import harmless_value, looks_opaque
from runsnap.snapshot.load import _last_line

from .conftest import bare_env, runsnap

_ALPHA = string.ascii_letters + string.digits


def _words(n: int, seed: int = 37) -> list[str]:
    """``n`` words of 40 random letters and digits."""
    rng = random.Random(seed)
    return ["".join(rng.choices(_ALPHA, k=40)) for _ in range(n)]


def _opaque(words: list[str]) -> list[str]:
    """Those of ``words`` the opaque-word rule takes for secrets (a few random words read as
    identifiers: ``nkjwpanfNDfR8jaA1VHJNuwcsSXOyyygNiRDfloE``), each to be hidden."""
    return [w for w in words if looks_opaque(w) and not harmless_value(w)]


def test_a_line_of_random_words_is_hidden_word_by_word_and_remembered_within_a_budget() -> None:
    words = _words(WEAK_MAX + 1500)
    r = Redactor(FingerprintKey(bytes(range(32)), "test"))
    later = f"https://files.example.com/get/{words[0]}/raw"  # only remembered, no rule finds it
    out = r.sections({"outcome": {"tail": [" ".join(words)]}, "z": {"url": later}})
    line = out["outcome"]["tail"][0]
    secret = _opaque(words)
    assert len(secret) > WEAK_MAX
    assert not any(w in line for w in secret)  # each hidden where it stands, past the budget too
    assert len(line.split()) == len(words)
    assert words[0] not in out["z"]["url"] and "files.example.com/get/" in out["z"]["url"]
    # remembered up to the budget (a few more found by token shapes), not one entry a word
    assert r.known.weak == WEAK_MAX and len(r.known) < WEAK_MAX + 50


def test_a_secret_found_by_its_name_is_remembered_past_the_budget() -> None:
    r = Redactor(FingerprintKey(bytes(range(32)), "test"))
    out = r.sections({"outcome": {"tail": [" ".join(_words(WEAK_MAX + 10)) + " password=hunter2x9"]},
                      "z": {"note": "typed hunter2x9 again"}})
    assert "hunter2x9" not in repr(out)


@pytest.mark.parametrize("seed", range(20))
def test_sub_words_a_piece_at_a_time_is_the_substitution_of_the_whole(seed: int) -> None:
    rng = random.Random(seed)
    pieces = ["ab", "Zq8vLm3nRt5wXy7Q4pK2", "x=y", "  ", "\n", "\t", "-", "+/", "==", "k"]
    text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 400)))
    rx = re.compile(r"(?<![A-Za-z0-9+/_.~-])[A-Za-z0-9+/_.~-]{2,30}={0,3}(?![A-Za-z0-9+/=_.~-])")
    for piece in (1, 3, 7, 50):
        assert sub_words(rx, lambda m: f"<{len(m.group())}>", text, piece) == \
            rx.sub(lambda m: f"<{len(m.group())}>", text)


@pytest.mark.parametrize("seed", range(20))
def test_the_end_marker_is_read_from_the_end_as_from_the_whole_text(seed: int) -> None:
    rng = random.Random(seed)
    parts = ["# end", "x" * 70_000, "\n", " ", "\n\n", "a b", " " * 70_000]
    text = "".join(rng.choice(parts) for _ in range(rng.randrange(0, 6)))
    assert _last_line(text) == text.rstrip().rpartition("\n")[2].strip()


@pytest.fixture(scope="module")
def long_line_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real capture whose output tail is given one line of 6,000 random words (240 KB): what
    a capture never writes (it keeps 4 KB of a line), a hand-made or older snapshot can."""
    tmp = tmp_path_factory.mktemp("line")
    proc = runsnap("capture", "-o", "base.toml", "--", "true", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    text = (tmp / "base.toml").read_text()
    at = text.index("tail = [", text.index("[outcome.stdout]"))
    end = text.index("]\n", at)
    line = " ".join(_words(6000))
    (tmp / "long.toml").write_text(text[:at] + f'tail = [\n    "{line}",\n' + text[end:])
    return tmp


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_report_of_a_long_line_hides_every_word_and_cuts_the_line(long_line_snapshot: Path,
                                                                  fmt: str) -> None:
    words = _opaque(_words(6000))
    proc = runsnap("report", "long.toml", "--format", fmt, cwd=long_line_snapshot,
                   env=bare_env())
    assert proc.returncode == 0, proc.stderr
    assert not any(w in proc.stdout for w in words[:50] + words[-50:])
    if fmt == "markdown":
        assert re.search(r"\.\.\. \([\d,]+ more characters\)", proc.stdout), proc.stdout[-2000:]


def test_scrub_of_a_long_line_hides_every_word(long_line_snapshot: Path, tmp_path: Path) -> None:
    words = _opaque(_words(6000))
    copy = tmp_path / "copy.toml"
    copy.write_text((long_line_snapshot / "long.toml").read_text())
    proc = runsnap("scrub", str(copy), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = copy.read_text()
    assert not any(w in text for w in words)
    assert text.count("<redacted:hmac-sha256:") >= len(words) > 5900
