"""Public material (public keys, fingerprints, publishable keys, documented ids) is found whether
or not its pattern had to be compiled: the cheap test that spares a capture the compilation
(``runsnap.redact.names._may_be_public``) never turns away a value the pattern matches."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runsnap.redact import names
from runsnap.redact.names import _PUBLIC, _may_be_public, harmless_value

#: One sample of each form of the pattern, from the formats' documentation.
FORMS = [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
    "ssh-rsa\tAAAAB3NzaC1yc2EAAAADAQABAAABAQC7",
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY=",
    "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
    "SHA1:" + "A" * 27,
    "MD5:" + ":".join(["16", "27", "ac", "a5", "76", "28", "2d", "36", "63", "1b", "56", "4d", "eb",
                       "df", "a6", "48"]),
    ":".join(["43", "51", "43", "a1", "b5", "fc", "8b", "b7", "0a", "3a", "a9", "b1", "0f", "66",
              "73", "a8"]),
    "3AA5C343", "0x3AA5C343", "3AA5C34371567BD2", "0x3AA5C34371567BD2",
    "ABCD EF01 2345 6789 ABCD EF01 2345 6789 ABCD EF01",
    "ABCD  EF01  2345  6789  ABCD  EF01  2345  6789  ABCD  EF01",
    "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
    "AAAAB3NzaC1yc2EAAAADAQABAAABAQC7",
    "arn:aws:iam::123456789012:user/deploy", "arn:aws-cn:s3:::bucket:key",
    "pk_live_51H8xYzAbCdEf", "pk_test_51H8xYzAbCdEf", "pk.eyJ1IjoibWFwYm94IiwiYSI6ImNrIn0",
    "phc_abcdefghijklmnop", "sb_publishable_abcdef", "pk-lf-1234abcd", "NEXT_PUBLIC_SITE_URL",
    "chatcmpl-8abcDEF123", "cmpl-abc123XYZ", "req_011CAbcdef", "msg_01XFDUDYJgAACzvnptvVoYEL",
    "file-abc123XYZ", "toolu_01A09q90qw90lq917835lq9", "cus_NffrFeUfNV2Hib", "prod_NWjs8kKbJWmuuc",
    "01ARZ3NDEKTSV4RRFFQ69G5FAV",
]


@pytest.mark.parametrize("value", FORMS)
def test_every_form_is_public_and_passes_the_cheap_test(value: str) -> None:
    assert _PUBLIC.match(value)
    assert _may_be_public(value)
    assert harmless_value(value, "MY_SECRET_KEY")


_HEADS = ["", "", "", *names._PUBLIC_HEADS, "ab:", "ABCD ", "0x"]


@settings(max_examples=3000)
@given(st.sampled_from(_HEADS),
       st.text(alphabet=string.ascii_letters + string.digits + "_-.:/+=@ \t", max_size=70),
       st.text(alphabet="0123456789abcdefABCDEF: ", max_size=70))
def test_the_cheap_test_never_turns_away_public_material(head: str, tail: str, hexes: str) -> None:
    for value in (head + tail, head + hexes, hexes):
        v = value.strip()
        if _PUBLIC.match(v):
            assert _may_be_public(v), v


def test_tokens_and_sentences_do_not_compile_the_pattern() -> None:
    """The values a capture meets under secret names on every Linux host: a token, a path,
    a kernel's mitigation sentence under ``spec_store_bypass`` (``*PASS*``)."""
    for v in ("hf_" + "x" * 34, "0123456789abcdef0123456789abcdef01234567",
              "/tmp/work/fingerprint.key",
              "Mitigation: Speculative Store Bypass disabled via prctl"):
        assert not _may_be_public(v)
