"""Secrets in whole snapshot sections: plain data walked key by key (a value under a secret
key is a secret), ``[env]`` and ``[runtime]`` variables judged by their names, argv lists as
command lines, ``[meta]`` as text."""

from __future__ import annotations

from collections.abc import Mapping

from runsnap.base.digest import text_sha256
from runsnap.redact.argv import ArgvRedactor
from runsnap.redact.names import FINGERPRINT, PREFIX, harmless_value, is_secret_name, norm

#: The length of a placeholder: ``<redacted:hmac-sha256:`` 16 hex digits ``>``.
_FINGERPRINT_LEN = len(PREFIX) + 17

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Redactor"]

#: Tables whose keys are the names of files and whose values runsnap computed from those files
#: (a model folder's side files' sha256, its weights' sizes): a file name is not a variable
#: name, so a value there is not judged by its key (``tiktoken.model`` is not a token, nor its
#: digest a secret); the value itself is still searched as any value is.
FILE_LISTINGS = frozenset({"files_sha256", "weights"})


class Redactor(ArgvRedactor):
    """Replaces secrets with fingerprints; one instance per capture (it remembers what it
    redacted, so a value hidden in ``[env]`` is also hidden where it reappears)."""

    def walk(self, value: Any, where: str, key: str | None = None) -> Any:
        """Scrub every string inside plain data; a value under a secret key is a secret."""
        if isinstance(value, str):
            if key is not None and value and self.is_secret(key, value):
                return self.value_for(key, value, where)
            return self.whole(value, where)
        if isinstance(value, Mapping):
            if key in FILE_LISTINGS:
                return {k: self.walk(v, f"{where}.{k}") for k, v in value.items()}
            return {k: self.walk(v, f"{where}.{k}", str(k)) for k, v in value.items()}
        if isinstance(value, list):
            if len(value) > 1 and all(isinstance(v, str) for v in value):
                joined = "\n".join(value)
                if "\n" not in "".join(value):
                    out = self.scrub(joined, where)
                    parts = out.split("\n")
                    if len(parts) == len(value):
                        return parts
            return [self.walk(v, f"{where}[{i}]", key) for i, v in enumerate(value)]
        if (key is not None and isinstance(value, int) and not isinstance(value, bool)
                and norm(key) not in self.kept and is_secret_name(key)
                and not harmless_value(str(value), norm(key))):
            self.redacted.append(where)
            return self.fingerprint(str(value))
        return value

    def sections(self, sections: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Redact whole sections: names and shapes, in every section, the meta included, in two
        passes: every secret is found first (:meth:`find`), then every occurrence of each is
        replaced (:meth:`finish`), whatever the order of the sections, names and arguments."""
        return self.finish(self.find(sections))

    def finish(self, value: Any, where: str = "") -> Any:
        """The second pass: ``value`` (sections, or any plain data) with every secret found so
        far replaced wherever it stands, in keys as in values.

        :attr:`redacted` (where something was redacted, for ``meta.redacted``) then holds no
        secret either: the places named by a key are named by the key as it is written."""
        if not self.known:
            return value
        # The places named before are replaced once per set of secrets: a capture calls this
        # for its sections and then for its meta (10,000 places under 10,000 secrets).
        subbed, done, version = self._subbed
        if subbed is not self.redacted or version != self.known.version:
            done = 0
        self.redacted = self.redacted[:done] + [self.known.sub(w) for w in self.redacted[done:]]
        self._subbed = (self.redacted, len(self.redacted), self.known.version)
        return self._finish(value, where)

    _subbed: tuple[list[str] | None, int, int] = (None, 0, -1)
    """(the list :attr:`redacted` was, how many of its places had every secret replaced, at
    which :attr:`known` version)."""

    def _finish(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            if len(value) == _FINGERPRINT_LEN and value.startswith(PREFIX) \
                    and FINGERPRINT.fullmatch(value):
                return value  # a placeholder (most values of a capture with many secrets)
            text = self.known.sub(value)
            if text is not value and text != value:
                self.redacted.append(where)
            return text
        if isinstance(value, Mapping):
            table: dict[Any, Any] = {}
            for k, v in value.items():
                clean = self.known.sub(k) if isinstance(k, str) else k
                table[clean] = self._finish(v, f"{where}.{clean}" if where else str(clean))
            return table
        if isinstance(value, list):
            return [self._finish(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return tuple(self._finish(v, f"{where}[{i}]") for i, v in enumerate(value))
        return value

    def find(self, sections: Mapping[str, Mapping[str, Any]], remember: bool = False
             ) -> dict[str, dict[str, Any]]:
        """The first pass: ``sections`` with the secrets the rules find replaced where they
        are found, and every one of them remembered; :meth:`finish` then replaces each
        wherever else it stands (an argument, a variable under another name, an output line).

        ``remember``: sections a capture meets again unchanged (a host's facts, its packages, a
        model's files); see :meth:`_find_remembered`.
        """
        deferred, self.deferred = self.deferred, True
        try:
            if remember and self.clean is not None:
                return self._find_remembered(sections)
            return self._find(sections)
        finally:
            self.deferred = deferred

    def _find_remembered(self, sections: Mapping[str, Mapping[str, Any]]
                         ) -> dict[str, dict[str, Any]]:
        """:meth:`_find`, where a section in which the rules found nothing at all (nothing
        redacted, no secret learnt, every value as it was) is remembered by the digest of its
        whole text (:attr:`clean`, kind ``section:NAME``: a digest, never a text) and found
        clean again without being walked value by value. A section that held anything is never
        remembered, and is walked every time."""
        store = self._clean_store()
        out: dict[str, dict[str, Any]] = {}
        for name, section in sections.items():
            text = repr(_digest_shape(section, self.MEMO_MIN))
            kind = f"section:{name}"
            if store.holds(text, kind):
                out[name] = _plain_copy(section)
                continue
            before = (len(self.redacted), self.known.version)
            found = self._find({name: section})[name]
            if (len(self.redacted), self.known.version) == before and found == section:
                store.add(text, kind)
            out[name] = found
        return out

    def _find(self, sections: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        # Not a reader of declared fields (issue 35 leaves this walker on mappings): redaction
        # rewrites whatever it is given, a section a collector is still building, one a newer
        # runsnap or a tool wrote, keys no declaration names included, and must hand every key
        # back with its secrets replaced. A record reads only the declared fields and raises
        # on a wrong type; here a key of the wrong type is walked as any value is, and a key
        # not declared is never skipped (a secret in it would be written). So ``.get`` and
        # ``isinstance`` below ask what shape a value has, to pick how to scrub it.
        out: dict[str, dict[str, Any]] = {}
        for name, section in sections.items():
            sec = dict(section)
            if name == "env" and isinstance(sec.get("vars"), Mapping):
                sec["vars"] = {
                    k: self.value_for(k, v, f"env.vars.{k}") if isinstance(v, str) else v
                    for k, v in sec["vars"].items()
                }
                rest = {k: v for k, v in sec.items() if k != "vars"}
                sec = {"vars": sec["vars"], **self.walk(rest, name)}
            elif name == "command":
                if isinstance(sec.get("argv"), list):
                    sec["argv"] = self.argv([str(a) for a in sec["argv"]], "command.argv")
                if isinstance(sec.get("options"), Mapping):
                    sec["options"] = {
                        k: self._option_value(k, v) for k, v in sec["options"].items()
                    }
                rest = {k: v for k, v in sec.items() if k not in ("argv", "options")}
                sec.update(self.walk(rest, name))
            elif name == "runtime":
                sec = self._runtime(sec)
            elif name == "process":
                sec = self._with_argvs(sec, name)
            elif name == "meta":
                sec = self._meta(sec)
            else:
                sec = self.walk(sec, name)
            out[name] = sec
        return out

    def _with_argvs(self, value: Any, where: str) -> Any:
        if isinstance(value, Mapping):
            return {k: (self.argv([str(a) for a in v], f"{where}.{k}")
                        if k == "argv" and isinstance(v, list) else
                        self._with_argvs(v, f"{where}.{k}"))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self._with_argvs(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return self.walk(value, where)

    def _meta(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """``[meta]``: the label and everything else scrubbed as text (names of where things
        were redacted and runsnap's own fields are not secrets)."""
        return {k: (v if k in ("redacted", "fingerprint_key", "id", "captured_at")
                    else self.walk(v, f"meta.{k}")) for k, v in meta.items()}

    def _runtime(self, sec: dict[str, Any]) -> dict[str, Any]:
        """``[runtime]``: values read are judged by the variable's name, as in ``[env]``; the
        processes' argv as ``command.argv``; shapes everywhere."""
        out = dict(sec)
        variables = sec.get("env")
        if isinstance(variables, Mapping):
            clean: dict[str, Any] = {}
            for var, entry in variables.items():
                if isinstance(entry, Mapping):
                    entry = dict(entry)
                    for field in ("value", "other_values"):
                        val = entry.get(field)
                        where = f"runtime.env.{var}.{field}"
                        if isinstance(val, str):
                            entry[field] = self.value_for(var, val, where)
                        elif isinstance(val, list):
                            entry[field] = [self.value_for(var, v, where)
                                            if isinstance(v, str) else v for v in val]
                    entry = {k: v if k in ("value", "other_values")
                             else self.walk(v, f"runtime.env.{var}.{k}") for k, v in entry.items()}
                clean[var] = entry
            out["env"] = clean
        for field in ("values", "other_values"):  # the stored form (schema 2): by name too
            table = sec.get(field)
            if isinstance(table, Mapping):
                out[field] = {var: self._runtime_value(var, val, f"runtime.{field}.{var}")
                              for var, val in table.items()}
        if isinstance(sec.get("processes"), list):
            out["processes"] = self._with_argvs(sec["processes"], "runtime.processes")
        if isinstance(sec.get("parsed_options"), Mapping):
            out["parsed_options"] = {k: self._parsed(k, v, f"runtime.parsed_options.{k}")
                                     for k, v in sec["parsed_options"].items()}
        kept = ("env", "processes", "values", "other_values", "parsed_options")
        rest = self.walk({k: v for k, v in out.items() if k not in kept}, "runtime")
        return {**out, **rest}

    def _runtime_value(self, var: str, val: Any, where: str) -> Any:
        if isinstance(val, str):
            return self.value_for(var, val, where)
        if isinstance(val, list):
            return [self.value_for(var, v, where) if isinstance(v, str) else v for v in val]
        return val

    def _parsed(self, option: str, entry: Any, where: str) -> Any:
        """One of ``[runtime] parsed_options``: its value (the text of a parsed value, a
        string's ``repr`` quoted) judged by the option's name and by its dest's, as a
        ``[command.options]`` value is by its name, then by its shape."""
        if not isinstance(entry, Mapping):
            return self.walk(entry, where, option)
        out = {k: self.walk(v, f"{where}.{k}") for k, v in entry.items() if k != "value"}
        value = entry.get("value")
        if isinstance(value, str) and not value.startswith(PREFIX):
            quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""
            bare = value[1:-1] if quoted else value
            for name in (option, entry.get("dest")):
                if isinstance(name, str) and bare and self.is_secret(name, bare):
                    value = self.value_for(name, bare, f"{where}.value")
                    break
            else:
                value = self.whole(value, f"{where}.value")
        if "value" in entry:
            out["value"] = value
        return out

    def _option_value(self, name: str, value: Any) -> Any:
        where = f"command.options.{name}"
        if isinstance(value, str):
            if value.startswith(PREFIX):
                return value
            return self.value_for(name, value, where)
        if isinstance(value, list):
            return [self._option_value(name, v) for v in value]
        return value


def _plain_copy(value: Any) -> Any:
    """``value`` with every table and array copied (what :meth:`Redactor.find` returns is the
    caller's to change, as a walk's result is).

    >>> v = {"a": [{"b": 1}], "c": "x"}
    >>> w = _plain_copy(v)
    >>> w == v and w["a"] is not v["a"] and w["a"][0] is not v["a"][0]
    True
    """
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
    return value


def _digest_shape(value: Any, long: int) -> Any:
    """``value`` as its digest is taken: the same data, each text of ``long`` characters or
    more standing as its sha256 (a work tree's diff, already hashed by its collector:
    :func:`~runsnap.base.digest.text_sha256` remembers it), in a tuple no section holds;
    its ``repr`` then tells every type apart (a list is not a tuple, ``"1"`` is not ``1``).

    >>> shape = _digest_shape({"a": ["x" * 8, "y", 1]}, 4)
    >>> shape["a"][0] == ("sha256", text_sha256("x" * 8)), shape["a"][1:]
    (True, ['y', 1])
    """
    if isinstance(value, str):
        return ("sha256", text_sha256(value)) if len(value) >= long else value
    if isinstance(value, dict):
        return {k: _digest_shape(v, long) for k, v in value.items()}
    if isinstance(value, list):
        return [_digest_shape(v, long) for v in value]
    return value
