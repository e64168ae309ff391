"""Where Hugging Face libraries keep what they fetch, by their own rules, and the switches that
say whether they may fetch at all.

``huggingface_hub`` (``constants.py``): ``HF_HUB_CACHE``, else the older
``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``,
else ``~/.cache/huggingface/hub``. ``datasets`` (``config.py``): ``HF_DATASETS_CACHE``, else
``$HF_HOME/datasets``, else the same ``huggingface`` folder's ``datasets``. A switch of
:data:`OFFLINE` (read at the library's import) decides whether a file asked for by its repo id
may come from the network or only from that cache: in a run that asked for none (a model loaded
from a folder), it decided nothing.

Resolved under a given environment (a snapshot's, another shell's), its ``HOME`` for ``~``.
Stdlib and :mod:`runsnap.base.paths` only: the capture uses it.
"""

from __future__ import annotations

import os

from runsnap.base.paths import expand_user, path_str

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["OFFLINE", "datasets_cache", "hub_cache"]

#: Offline switch -> the caches (``hub``, ``datasets``) whose files it decides the source of.
OFFLINE = {"HF_HUB_OFFLINE": ("hub",), "TRANSFORMERS_OFFLINE": ("hub",),
           "HF_DATASETS_OFFLINE": ("hub", "datasets")}


def _value(env: Mapping[str, object], name: str) -> str:
    value = env.get(name)
    return value if isinstance(value, str) and "<redacted" not in value else ""


def _expand(path: str, env: Mapping[str, object]) -> str:
    """``path`` with a leading ``~`` as ``env``'s ``HOME`` (this process's where it has none)."""
    home = _value(env, "HOME")
    if home and (path == "~" or path.startswith("~/")):
        return path_str(home + path[1:])
    return expand_user(path)


def _huggingface(env: Mapping[str, object]) -> str:
    if _value(env, "HF_HOME"):
        return _expand(_value(env, "HF_HOME"), env)
    xdg = _value(env, "XDG_CACHE_HOME") or os.path.join(_value(env, "HOME") or "~", ".cache")
    return path_str(os.path.join(_expand(xdg, env), "huggingface"))


def hub_cache(env: Mapping[str, object]) -> str:
    """The Hub's cache folder under ``env`` (see the module's text).

    >>> hub_cache({"HOME": "/home/u"}), hub_cache({"HOME": "/h", "HF_HOME": "~/hf"})
    ('/home/u/.cache/huggingface/hub', '/h/hf/hub')
    """
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if _value(env, name):
            return _expand(_value(env, name), env)
    return path_str(os.path.join(_huggingface(env), "hub"))


def datasets_cache(env: Mapping[str, object]) -> str:
    """``datasets``' cache folder under ``env`` (see the module's text).

    >>> datasets_cache({"HOME": "/home/u", "XDG_CACHE_HOME": "/c"})
    '/c/huggingface/datasets'
    """
    if _value(env, "HF_DATASETS_CACHE"):
        return _expand(_value(env, "HF_DATASETS_CACHE"), env)
    return path_str(os.path.join(_huggingface(env), "datasets"))
