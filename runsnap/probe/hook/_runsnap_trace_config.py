"""Part of runsnap's tracing hook (``sitecustomize.py`` beside it, which imports it at start-up
and takes it out of ``sys.modules`` again): the fields of a loaded model config that the
program reads while it runs. Standard library only.

A model library's config class (transformers' ``PreTrainedConfig``, ``PretrainedConfig`` before
version 5) gets a ``__getattribute__`` that first does exactly what the class's own did, then,
the first time a name is seen, notes it when it is one of the instance's fields (in its
``__dict__``, after the class's ``attribute_map`` of aliases): ``("F", class, field)``, once per
field and process. A name that is the class's own (a method, a property) is never looked at
again; a name that is neither is looked at again next time (it may be set later). The value,
the exception and the cost of a repeated name are the class's own plus one set look-up.

A read by the config's own code is the library's bookkeeping, not a use: the caller's file is
that of the class or of one of its bases (construction, validation, ``to_dict``, ``repr``), or a
``dataclasses.py`` (the strict dataclass fields of ``huggingface_hub`` that transformers 5 uses
check every field as it is set). Such a read is not noted, and the name is looked at again.
"""

import sys

#: Module -> the config classes in it whose instances' field reads are noted.
CONFIG_CLASSES = {
    "transformers.configuration_utils": ("PreTrainedConfig", "PretrainedConfig"),
}


def patch(module, emit):
    """Wrap the config classes of ``module`` (just executed); ``emit(record)`` writes one."""
    done = set()
    for name in CONFIG_CLASSES.get(module.__name__, ()):
        cls = module.__dict__.get(name)
        if not isinstance(cls, type) or id(cls) in done:
            continue
        done.add(id(cls))
        cls.__getattribute__ = _wrap(cls.__getattribute__, emit)


def _wrap(real, emit):
    seen = set()  # names noted or known to be the class's own
    get = object.__getattribute__
    own = {}  # class -> the files of its code and its bases'

    def __getattribute__(self, key):
        value = real(self, key)
        if key not in seen:
            try:
                _note(self, key, seen, get, emit, own)
            except Exception:
                pass
        return value

    __getattribute__.__wrapped__ = real
    return __getattribute__


def _note(self, key, seen, get, emit, own):
    if not isinstance(key, str) or key.startswith("_"):
        seen.add(key)
        return
    cls = type(self)
    amap = getattr(cls, "attribute_map", None)
    field = amap.get(key, key) if isinstance(amap, dict) else key
    if field in get(self, "__dict__"):
        caller = sys._getframe(2).f_code.co_filename  # _note, the wrapper, then the caller
        files = own.get(cls)
        if files is None:
            files = own[cls] = _files(cls)
        if caller in files or caller.endswith("dataclasses.py"):
            return
        seen.add(key)
        emit(("F", cls.__name__, field))
    elif hasattr(cls, key):
        seen.add(key)


def _files(cls):
    out = set()
    for c in cls.__mro__:
        mod = sys.modules.get(getattr(c, "__module__", None) or "")
        f = getattr(mod, "__file__", None)
        if f:
            out.add(f)
    return frozenset(out)
