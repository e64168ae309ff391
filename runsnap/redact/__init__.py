"""The only package that decides what is a secret, and replaces each one with a fingerprint.

Snapshots are attached to public bug reports, so every writer passes what it writes through a
:class:`Redactor` first. A secret is replaced by a *fingerprint*::

    <redacted:hmac-sha256:3f9a0c1d2e4b5a69>

an HMAC of the value under a key that stays on this machine (``RUNSNAP_KEY_FILE``, or
``$XDG_CONFIG_HOME/runsnap/fingerprint.key``), so two snapshots of one user say "same
secret" or "changed secret" while the value cannot be recovered from either.

What counts as a secret (the rules are data in :mod:`runsnap.knowledge.secrets`):

* the value of a variable, option, config key or text assignment whose *name* is a secret
  name (``*TOKEN*``, ``*_CONNECTION_STRING``, ``SSHPASS``), or a name that holds a secret when
  its *value* looks like a credential (``HF_AUTH=hf_...``, ``AUTH_HEADER=Bearer ...``, but not
  ``TORCH_CUDNN_V8_API_DISABLED=1``), or a name the user listed (``--redact``, ``redact = [...]``
  in ``[tool.runsnap.capture]``); ``--keep NAME`` keeps one;
* in any text: a value shaped like a known token (gitleaks' and detect-secrets' shapes: JWTs,
  npm, GitHub, Hugging Face, Slack, Stripe, AWS, OpenAI and Anthropic keys...), a PEM private
  key block, ``name = value`` / ``"name": "value"`` / ``--name value`` / ``Authorization:
  Bearer ...`` where the name is a secret name, and any value already redacted elsewhere in
  the same capture;
* in URLs: the credentials (``scheme://user:password@``) and secret query parameters
  (``?token=``, ``?sig=``); scheme, host, port and path stay readable;
* in command lines: the values of secret options, also when they start with ``-``, options
  that take a password for particular programs (``sshpass -p``, ``mysql -pSECRET``), and
  command lines inside arguments (``bash -c "... --api-key X"``).
"""

from __future__ import annotations

from runsnap.knowledge.secrets import Policy, load_policy
from runsnap.redact.fingerprint import FingerprintKey, load_key
from runsnap.redact.names import is_fingerprint, is_secret_name, looks_like_credential
from runsnap.redact.structures import Redactor

__all__ = [
    "FingerprintKey",
    "Policy",
    "Redactor",
    "is_fingerprint",
    "is_secret_name",
    "load_key",
    "load_policy",
    "looks_like_credential",
]
