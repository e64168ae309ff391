"""Secrets in command lines: the values of secret options (also when they start with ``-``),
programs' password options (``sshpass -p``, ``mysql -pX``), ``NAME=VALUE`` words, and command
lines held in one argument (``bash -c "... --api-key X"``)."""

from __future__ import annotations

import os
import re

from runsnap.base.patterns import on_use
from runsnap.knowledge import secrets as rules
from runsnap.redact.names import PREFIX
from runsnap.redact.text import TextRedactor

__all__ = ["ArgvRedactor"]

_LONG_OPTION = on_use(r"^--[A-Za-z][A-Za-z0-9_-]*(?:=.*)?$", re.S)


class ArgvRedactor(TextRedactor):
    """A :class:`TextRedactor` that also reads command lines."""

    def argv(self, argv: list[str], where: str, depth: int = 0) -> list[str]:
        """``argv`` with the values of secret options replaced by fingerprints.

        ``--hf-token VALUE`` (also a VALUE that starts with ``-``), ``--hf-token=VALUE``,
        ``--header "Authorization: Bearer X"``, program-specific password options
        (``sshpass -p X``, ``mysql -pX``), ``NAME=VALUE`` words, URL credentials, token shapes,
        and command lines held in one argument (``bash -c "... --api-key X"``).
        """
        out: list[str] = []
        pending = False
        tool_opts: frozenset[str] = frozenset()
        table = rules.password_options()
        for i, arg in enumerate(argv):
            here = f"{where}[{i}]"
            if pending:
                pending = False
                if arg != "--" and not _LONG_OPTION.match(arg):
                    self.redacted.append(here)
                    out.append(self.fingerprint(arg))
                    continue
            prog = os.path.basename(arg)
            if prog in table:
                tool_opts = table[prog]
            if (arg.startswith("-") and len(arg) > 1 and arg != "--" and not arg.startswith("---")
                    and "\n" not in arg):
                name, eq, val = arg.partition("=")
                if name in tool_opts or (not name.startswith("--") and name[:2] in tool_opts
                                         and len(name[:2]) == 2 and not eq):
                    if name in tool_opts:
                        if eq and val:
                            self.redacted.append(here)
                            out.append(f"{name}={self.fingerprint(val)}")
                        elif eq:
                            out.append(arg)
                        else:
                            pending = True
                            out.append(arg)
                        continue
                    if len(arg) > 2:  # -pSECRET
                        self.redacted.append(here)
                        out.append(arg[:2] + self.fingerprint(arg[2:]))
                        continue
                nxt = argv[i + 1] if i + 1 < len(argv) else ""
                if eq and val and not val.startswith(PREFIX) and self.is_secret(name, val):
                    self.redacted.append(here)
                    out.append(f"{name}={self.fingerprint(val)}")
                    continue
                if not eq and nxt and self.is_secret(name, nxt):
                    pending = True
                    out.append(arg)
                    continue
            out.append(self._arg_text(arg, here, depth))
        return out

    def _arg_text(self, arg: str, where: str, depth: int) -> str:
        """One argument as text; one that holds a command line is redacted as a command line."""
        if depth < 3 and any(ch.isspace() for ch in arg) and not arg.startswith(PREFIX):
            # deferred: shlex, a few imports; only _arg_text() needs it
            import shlex

            try:
                words = shlex.split(arg)
            except ValueError:
                words = []
            if len(words) > 1:
                self.argv(words, where, depth + 1)  # learns the secrets it finds
        if arg.startswith("-") or any(ch.isspace() for ch in arg):
            return self.scrub(arg, where)
        return self.whole(arg, where)

