"""Part of runsnap's tracing hook (``sitecustomize.py`` beside it, which imports it at start-up
and takes it out of ``sys.modules`` again): what the program's option parser made of its command
line. Standard library only; it never imports ``argparse``: ``sitecustomize`` hands it the
module right after the program's own import executed it.

``argparse.ArgumentParser.parse_known_args`` (which ``parse_args`` calls, and a subclass that
does not replace it inherits: transformers' ``HfArgumentParser``) gets a wrapper that first
does exactly what the method did, then writes one record per parse that returned::

    ("A", prog, from_argv, [(option_strings, dest, value, own, given), ...])

``from_argv``: the parse read ``sys.argv`` (no ``args`` given), or is a subcommand's parse
inside one that did; ``value`` is the value of
``dest`` in the namespace after the parse, as short text (:func:`text`); ``own``: the action is
one of argparse's own classes (``store``, ``store_true``, ``append``, ``count``...), whose call
does nothing but set the dest; a program's own ``Action`` subclass may do more; ``given``: the
option strings that stand among the words the parse read (``--lr``, ``--lr=0.1``; a short
option also glued to its value, ``-n0``), so that a parse is known to be the one that received
an option, not another program's parser declaring the same string. Actions without
option strings (positionals) and those whose dest the parse left unset are not written. A parse
that raised (``--help``, ``--version``, an error: ``SystemExit``) writes nothing and the
exception passes through untouched; a failure of ours is swallowed and the real result returned.

Not seen: jsonargparse's ``ArgumentParser`` (it replaces ``parse_known_args`` with one that
raises, and parses through argparse's private ``_parse_known_args`` before merging its defaults,
environment and config files), ``parse_known_intermixed_args`` on Python 3.13 and later.
"""

import sys
from _thread import get_ident

#: The longest value text written; a longer one is cut and ends with ``...`` (no longer a
#: Python literal: diff does not take two cut values for equal).
MAX_TEXT = 200

#: The options written per parse (a dataclass parser can declare hundreds).
MAX_ACTIONS = 1000

#: The parses written per process (a test suite may parse thousands of times).
MAX_PARSES = 64

_SIMPLE = (bool, int, float, str, type(None))


def text(value):
    """The short text of a parsed value: ``repr`` of ``None``, a bool, int, float or str (not of
    a subclass), or of a list or tuple of those; anything else ``<its type name>``.

    >>> text(0), text("0"), text([1e-3, None]), text(object()), text("x" * 300)[-5:]
    ('0', "'0'", '[0.001, None]', '<object>', 'xx...')
    """
    kind = type(value)
    try:
        if kind is str:
            out = repr(value[:MAX_TEXT + 1])  # a long text is cut below: never repr'd whole
        elif kind in _SIMPLE or (kind in (list, tuple) and len(value) <= MAX_TEXT
                                 and all(type(v) in _SIMPLE for v in value)):
            out = repr(value)  # ValueError for an int past sys.get_int_max_str_digits()
        else:
            out = "<%s>" % kind.__name__
    except ValueError:
        out = "<%s>" % kind.__name__
    return out if len(out) <= MAX_TEXT and (kind is not str or len(value) <= MAX_TEXT) \
        else out[:MAX_TEXT] + "..."


def patch(module, emit):
    """Wrap ``module.ArgumentParser.parse_known_args`` (``module``: argparse, just executed);
    ``emit(record)`` writes one."""
    cls = module.__dict__.get("ArgumentParser")
    real = getattr(cls, "parse_known_args", None)
    if real is None or getattr(real, "__wrapped__", None) is not None:
        return
    suppress = getattr(module, "SUPPRESS", "==SUPPRESS==")
    running = {}  # thread -> whether the parse under way there read sys.argv
    parses = [0]  # records written by this process

    def parse_known_args(self, *args, **kwargs):
        try:  # a subcommand's parse, inside its parent's, read what the parent read
            me = get_ident()
            outer = running.get(me)
            words = args[0] if args else kwargs.get("args")
            from_argv = words is None or bool(outer)
            running[me] = from_argv
        except Exception:
            me = outer = None
        try:
            result = real(self, *args, **kwargs)
        finally:
            if outer is None:
                running.pop(me, None)
            else:
                running[me] = outer
        try:
            if parses[0] < MAX_PARSES:
                parses[0] += 1
                words = sys.argv[1:] if words is None else words
                emit(("A", str(getattr(self, "prog", "")), from_argv,
                      _options(self, result[0], suppress, _seen(words))))
        except Exception:
            pass
        return result

    parse_known_args.__wrapped__ = real
    parse_known_args.__name__ = real.__name__
    parse_known_args.__qualname__ = real.__qualname__
    parse_known_args.__doc__ = real.__doc__
    cls.parse_known_args = parse_known_args


def _seen(words):
    """The option strings that ``words`` hold, as given alone or before ``=``, and the
    two-character prefix of a short option glued to its value (``-n0``)."""
    out = set()
    for w in words:
        if type(w) is str and w[:1] == "-":
            out.add(w.partition("=")[0])
            if w[1:2] != "-" and len(w) > 2:
                out.add(w[:2])
    return out


def _options(parser, namespace, suppress, seen):
    out = []
    unset = object()
    for action in parser._actions[:MAX_ACTIONS]:
        strings = action.option_strings
        dest = action.dest
        if not strings or not isinstance(dest, str) or dest == suppress:
            continue
        value = getattr(namespace, dest, unset)
        if value is unset or (type(value) is str and value == suppress):
            continue
        out.append((list(strings), dest, text(value), type(action).__module__ == "argparse",
                    [o for o in strings if o in seen]))
    return out
