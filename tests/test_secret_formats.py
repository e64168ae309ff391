"""The providers' token formats as data: each rule has its source and samples it matches, no
rule matches any value of a realistic non-secret set, and fresh values of every documented
format (generated from tests/secrets/formats.py, not from the rules) are found without their
provider's name beside them."""

from __future__ import annotations

import os
import random
import re

import pytest

from runsnap.knowledge import rule_lines
from runsnap.knowledge.secrets import token_spans, value_rules
from runsnap.redact import FingerprintKey, Redactor
from runsnap.redact.names import PREFIX, harmless_value, looks_opaque
from tests.secrets.formats import FORMATS, UNDER_SECRET_NAME_ONLY, generate
from tests.secrets.nonsecrets import nonsecrets

ROWS = rule_lines("secret-formats.tsv")
RNG = random.Random(int.from_bytes(os.urandom(8), "big"))


def test_formats_are_data_with_sources_samples_and_halves() -> None:
    assert len(ROWS) >= 120
    ids = [row[0] for row in ROWS]
    assert len(ids) == len(set(ids))
    halves = {row[2] for row in ROWS}
    assert halves == {"tune", "held"}
    for row in ROWS:
        assert len(row) == 7, row[0]
        _, family, _, keywords, regex, source, samples = row
        assert family and source and samples, row[0]
        re.compile(regex)
        assert keywords.startswith("re:") or keywords == keywords.lower(), row[0]


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_every_rule_finds_its_samples_in_text_without_a_keyword(row: list[str]) -> None:
    rule = next(r for r in value_rules()[0] if r.id == f"format:{row[0]}")
    for sample in row[6].split():
        assert list(rule.spans(sample)), sample
        # alone in a line of output, the gate and the rule find it whole
        text = f"connecting with {sample} now"
        spans = token_spans(text)
        assert spans, sample
        hidden = "".join(text[a:b] for a, b in spans)
        assert sample in hidden or len(hidden) >= len(sample) * 0.9, (sample, spans)


def test_no_rule_matches_a_value_of_the_non_secret_set() -> None:
    values = nonsecrets(RNG)
    assert len(values) >= 150
    shape_hits = [(kind, name, value) for kind, name, value in values
                  if token_spans(value) or token_spans(f"{name}={value}")
                  or (looks_opaque(value) and not harmless_value(value))]
    rate = len(shape_hits) / len(values)
    print(f"shape rules on {len(values)} non-secrets: {len(shape_hits)} hits ({rate:.2%})")
    assert not shape_hits


def test_no_value_of_the_non_secret_set_is_hidden_by_name_or_shape() -> None:
    r = Redactor(FingerprintKey(os.urandom(32), "test"))
    values = nonsecrets(RNG)
    env = {}
    for _, name, value in values:
        env.setdefault(name, value)
    out = r.sections({"env": {"vars": env}})["env"]["vars"]
    hidden = {k: v for k, v in env.items() if out[k] != v}
    assert not hidden
    # nor in text: an assignment in a diff, a word of an output line, a JSON document
    import json

    for _, name, value in values:
        for text in (f"{name}={value}", f"loaded {value} in 3 s", json.dumps({name: value})):
            assert r.scrub(text, "t") == text, text


def _recall(half: str) -> tuple[int, list[str]]:
    r = Redactor(FingerprintKey(os.urandom(32), "test"))
    planted: dict[str, tuple[str, str]] = {}  # variable -> (format, value)
    for fid, _, fhalf, spec, _ in FORMATS:
        if fhalf != half or fid in UNDER_SECRET_NAME_ONLY:
            continue
        for _ in range(3):
            planted[f"SETTING_{len(planted):03d}"] = (fid, generate(spec, RNG))
    # one environment holding them all, as a capture sees many variables: each value is judged
    # on its own, and the known secrets are searched for once, not once a value
    env = r.sections({"env": {"vars": {k: v for k, (_, v) in planted.items()}}})["env"]["vars"]
    missed = [f"{fid}: {value[:40]}" for name, (fid, value) in planted.items()
              if any(piece in env[name] for piece in _pieces(value))]
    return len(planted), missed


def _pieces(value: str) -> set[str]:
    core = value.replace("-----BEGIN PRIVATE KEY-----", "").replace("-----END PRIVATE KEY-----", "")
    return {core[i:i + 12] for i in range(0, max(1, len(core) - 11))
            if "\n" not in core[i:i + 12] and PREFIX not in core[i:i + 12]
            and not any(core[i:i + 12] in w for w in _PUBLIC_PARTS)}


#: Fixed parts of the formats: public text, not secrets.
_PUBLIC_PARTS = ("https://hooks.slack.com/services/", "https://acme.webhook.office.com/webhookb2/", "https://discord.com/api/webhooks/",
                 "webhook.office.com/webhookb2/", "/IncomingWebhook/", "pypi-AgEIcHlwaS5vcmc",
                 "pypi-AgENdGVzdC5weXBpLm9yZw", "access_token$production$", "AAAAAAAAAAAAAAAAAAAAA",
                 "cmVmdGtuOjAxOjE3", "IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE", "sk-ant-admin01-",
                 "sk-ant-api03-", "sk-svcacct-", "access-production-",
                 "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9")


@pytest.mark.parametrize("half", ["tune", "held"])
def test_fresh_values_of_every_format_are_hidden_under_a_neutral_name(half: str) -> None:
    planted, missed = _recall(half)
    print(f"{half}: {planted} planted, {len(missed)} missed")
    assert planted >= 150
    assert not missed


def test_a_keyword_is_found_where_it_overlaps_another() -> None:
    """The keyword gate finds each keyword wherever it starts, also where the text before it
    ends in another keyword: a MaxMind key ending ``...EMB_mmk`` holds ``b_`` and then
    ``_mmk``, and about one fresh MaxMind key in 700 leaked while the gate consumed ``b_``."""
    from runsnap.knowledge.secrets import keyword_positions

    words = sorted(k for k in value_rules()[2] if k != "*" and not k.startswith("re:"))
    starting: dict[str, list[str]] = {}  # a proper prefix -> the keywords it begins
    for b in words:
        for o in range(1, len(b)):
            starting.setdefault(b[:o], []).append(b)
    pairs = 0
    for a in words:
        for o in range(1, len(a)):
            for b in starting.get(a[-o:], ()):
                text = a + b[o:]
                assert len(a) - o in keyword_positions(text).get(b, []), (a, b, text)
                pairs += 1
    assert pairs > 100
    key = "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"
    assert token_spans(f"license {key} ok") == [(8, 8 + len(key))]


def test_a_key_whose_head_looks_like_a_name_is_hidden_whole() -> None:
    """A Firebase server key's head (``AAAA`` and seven characters) can read as a name before
    ``:`` (``AAAAPIbNF2C:APA91b...``), as in ``key:value``; about one value in 400 does. The
    rule finds the whole token, and the whole is hidden (CI of 6518793 drew one such value)."""
    r = Redactor(FingerprintKey(os.urandom(32), "test"))
    value = ("AAAAPIbNF2C:APA91bWuGsBxfIKari28Pvwljj69aJE5cwAHHO3p6CREUaeuX-zQ6DZcBKcfogfjpCv-"
             "ZXWPMJduodm5GMyqqYqTaxNqtq4BrWc0R5uBaQIuywDaVqs2iIqIV_pvWNrDHc9EeeNmSwDF")
    for text in (value, f"sending with {value} now"):
        out = r.scrub(text, "t")
        assert "AAAAPIbNF2C" not in out and "APA91bWuGs" not in out, out
    env = r.sections({"env": {"vars": {"PUSH_SETTING": value}}})["env"]["vars"]
    assert "AAAAPIbNF2C" not in env["PUSH_SETTING"], env
    # an ordinary key:value stays as it was
    assert r.scrub("loss:0.5 step:12 at 12:30:45", "t") == "loss:0.5 step:12 at 12:30:45"
