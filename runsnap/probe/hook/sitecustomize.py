"""runsnap's tracing hook: records what a Python program reads from its environment and imports.

runsnap launches a Python child with this folder first on ``PYTHONPATH``, so the interpreter's
``site`` module imports this file at start-up, before the program. Standard library only, for
every Python runsnap supports; it never imports runsnap. Nothing here may raise into the
program or change what it prints or does: every hook is wrapped so that a failure of ours is
swallowed and the program's own call goes on exactly as it would have.

What it records, append-only, in ``$RUNSNAP_TRACE_DIR/py-<pid>-<n>.log`` (one file per
process, one Python literal a line, written with ``os.write`` as events happen, so a process
killed with SIGKILL loses at most the counts since its last new event):

* ``("P", pid, ppid, argv, executable, cwd, forked)``: the process;
* ``("S", site, name, via, is_set, value, stack)``: a new place that read variable ``name``
  (``via``: ``[]``, ``get``, ``in``, ``getenv``, ``b[]``/``bget``/``bin`` for ``os.environb``);
  ``stack`` is up to ``DEPTH`` frames ``"rel/path.py:LINE in FUNC"``, innermost first,
  outside this hook and outside ``os`` and ``collections.abc``;
* ``("B", site, stack, names)``: a new place that read the whole environment (iteration,
  ``copy()``, ``dict(os.environ)``, ``repr``): a bulk read of those names;
* ``("W", name)``: the program set or removed ``name`` itself;
* ``("M", name, file, path_entry)``: a top-level module imported;
* ``("F", class, field)``: a field of a loaded model config read (``_runsnap_trace_config``);
* ``("A", prog, from_argv, options)``: what an option parser parsed (``_runsnap_trace_args``);
* ``("O", path, stack)``, ``("o", path)``, ``("Q", n)``: files opened (``_runsnap_trace_files``);
* ``("C", {site: reads})``: cumulative read counts (written with new events and at the end);
* ``("L", names)``: the GPU and interconnect libraries mapped when it ended
  (``_runsnap_trace_imports``, which also notes the modules imported);
* ``("E", status)``: the process ended through ``sys.exit``/``atexit`` or ``os._exit``.

What the program can still observe (documented in docs/runtime.md): the C-level environment
(``/proc/self/environ``, ``ctypes`` ``getenv``) still holds runsnap's ``PYTHONPATH`` entry and
the ``RUNSNAP_TRACE_*`` variables, so that child processes are traced too; ``os._Environ``'s
methods, ``os.execve``, ``os.posix_spawn[p]``, ``os._exit`` and ``subprocess.Popen.
_execute_child`` are wrappers; a finder sits first on ``sys.meta_path``; ``atexit`` is imported.
``os.environ``, ``os.environb``, ``sys.path`` and ``sys.modules['sitecustomize']`` look as they
would without runsnap.
"""

import _thread
import os
import sys

KEY_FRAMES = 4  # frames that tell two read sites apart
MAX_SITES = 16  # read sites written per variable and process (reads beyond are still counted)

_HERE = os.path.dirname(os.path.abspath(__file__))
_data = os.environ._data  # type: ignore[attr-defined]
_enc = os.environ.encodekey


def _take(name):
    """Remove runsnap's variable ``name`` from the program's view (not from the C environment)."""
    value = _data.pop(_enc(name), None)
    return None if value is None else os.environ.decodevalue(value)


def _restore(name, marker):
    """Give variable ``name`` back its launch value in the program's view.

    ``marker`` is ``=VALUE`` (it was set) or empty (it was unset), as runsnap passed it.
    """
    key = _enc(name)
    if marker:
        _data[key] = os.environ.encodevalue(marker[1:])
    else:
        _data.pop(key, None)


_DIR = _take("RUNSNAP_TRACE_DIR")
_PP = _take("RUNSNAP_TRACE_PYTHONPATH")
_PRELOAD = _take("RUNSNAP_TRACE_LD_PRELOAD")
_LIB = _take("RUNSNAP_TRACE_LIB")
if _PP is not None:
    _restore("PYTHONPATH", _PP)
if _PRELOAD is not None:
    _restore("LD_PRELOAD", _PRELOAD)
# The hook's parts, imported while its folder is on sys.path, then out of sys.modules: the
# program sees neither them nor the folder.
import _runsnap_trace_args as _args  # type: ignore[import-not-found]  # noqa: E402
import _runsnap_trace_config as _config  # type: ignore[import-not-found]  # noqa: E402
import _runsnap_trace_files as _files  # type: ignore[import-not-found]  # noqa: E402
import _runsnap_trace_imports as _imports  # type: ignore[import-not-found]  # noqa: E402
import _runsnap_trace_log as _log  # type: ignore[import-not-found]  # noqa: E402
import _runsnap_trace_spawn as _spawn  # type: ignore[import-not-found]  # noqa: E402

for _part in ("_runsnap_trace_log", "_runsnap_trace_spawn", "_runsnap_trace_config",
              "_runsnap_trace_files", "_runsnap_trace_args", "_runsnap_trace_imports"):
    sys.modules.pop(_part, None)
try:
    sys.path.remove(_HERE)
except ValueError:
    pass


def _chain():
    """Import the ``sitecustomize`` the environment had before runsnap's, as ``site`` would.

    Found: it takes this module's place in ``sys.modules``. Not found: this module stays there
    until the next import (``site`` reads it back from ``sys.modules`` right after this file
    ran), then leaves, so the program sees no ``sitecustomize`` as it would without runsnap.
    An exception of the other one propagates, so ``site`` reports it exactly as it would.
    """
    me = sys.modules.pop("sitecustomize", None)
    _KEEP.append(me)
    try:
        __import__("sitecustomize")
    except ImportError as exc:
        if exc.name != "sitecustomize" or "sitecustomize" in sys.modules:
            raise
        sys.modules["sitecustomize"] = me
        _KEEP.append(True)  # unlist at the next import


_KEEP: list = []  # this module stays alive (its functions are the hooks) when it leaves sys.modules


def _unlist():
    """Leave ``sys.modules`` at the program's first import (see :func:`_chain`)."""
    if len(_KEEP) < 2:
        return
    if _KEEP[1] is True and sys.modules.get("sitecustomize") is _KEEP[0]:
        del sys.modules["sitecustomize"]
    del _KEEP[1:]


_SITES: dict = {}  # read site key -> [site id, reads] (cleared, never replaced: the hooks bind it)
_T = _log.Tracer(_DIR, _SITES, _PP) if _DIR else None
_getframe = sys._getframe
_SKIP = frozenset([
    _take.__code__.co_filename, os.getenv.__code__.co_filename,
    os._Environ.__iter__.__code__.co_filename,
    getattr(getattr(sys.modules.get("_collections_abc"), "Mapping", None), "get",
            _take).__code__.co_filename,
])
_Environ = os._Environ
_getitem = _Environ.__getitem__
_setitem = _Environ.__setitem__
_delitem = _Environ.__delitem__
_iter = _Environ.__iter__
_repr = _Environ.__repr__
_NOT_SET = object()


_BULK = [None]  # (id of the frame, its f_lasti) of the last bulk read
# The last read site of os.environ.get: (id of the frame outside, its f_lasti, the name, the
# site's [id, reads], its caller's code and f_lasti). A loop reading one variable at one place
# then costs five comparisons and an increment. A frame is the same live object for as long as
# it runs, so its callers are the same too; but a frame that ended leaves its address to the
# next one (``a(); b()`` each calling ``helper()``: the two helper frames share an address and
# an offset), so the caller's code and offset are compared too: the read from ``b`` is a site
# of its own. (Two callers apart, ``x()`` called from ``a`` and from ``b`` on lines at the same
# offset, could still share a count; never a variable.)
_LAST: list = [None, None, None, None, None, None]
_LOCK = _thread.allocate_lock()
_GETENV = os.getenv.__code__


# The read hooks below are the hot path (a program may call os.environ.get in a loop): the
# original lookup is inlined, a read site is keyed by the ids and instruction offsets of the
# three innermost frames outside os, collections.abc and this file (ints hash fast; code
# objects do not), and a repeat costs one dict lookup and one increment.


def _site_key(key, f):
    while f.f_code.co_filename in _SKIP:
        f = f.f_back
    g = f.f_back
    if g is None:
        return f, (key, id(f.f_code), f.f_lasti)
    h = g.f_back
    if h is None:
        return f, (key, id(f.f_code), f.f_lasti, id(g.f_code), g.f_lasti)
    return f, (key, id(f.f_code), f.f_lasti, id(g.f_code), g.f_lasti, id(h.f_code), h.f_lasti)


def _new_site(env, key, value, frame, k, via):
    with _LOCK:  # threads: one id per site, lines written whole
        _new_site_locked(env, key, value, frame, k, via)


def _new_site_locked(env, key, value, frame, k, via):
    if k in _SITES:
        _SITES[k][1] += 1
        return
    t = _T
    if len(_KEEP) > 1:
        _unlist()
    name = key if isinstance(key, str) else os.fsdecode(key)
    if env is not os.environ:
        via = "b" + via
    written = t.per_name.get(name, 0)
    if written >= MAX_SITES:
        _SITES[k] = [-1, 1]  # counted in memory only
        return
    t.per_name[name] = written + 1
    site = t.next_id
    t.next_id += 1
    _SITES[k] = [site, 1]
    if value is _NOT_SET:
        is_set, shown = False, None
    else:
        is_set, shown = True, value if isinstance(value, str) else os.fsdecode(value)
    t.emit(("S", site, name, via, is_set, shown, t.stack(frame)))
    t.counts()


def _getitem_hook(self, key):
    try:
        value = self.decodevalue(self._data[self.encodekey(key)])
    except KeyError:
        value = _NOT_SET
    try:
        f, k = _site_key(key, _getframe(1))
        rec = _SITES.get(k)
        bulk = _BULK[0]
        if bulk is not None and bulk[0] == id(f) and bulk[1] == f.f_lasti:
            pass  # a value fetched by a bulk read, already counted (dict(os.environ))
        elif rec is None:
            _new_site(self, key, value, f, k, "[]")
        else:
            rec[1] += 1
    except Exception:
        pass
    if value is _NOT_SET:
        raise KeyError(key) from None
    return value


def _get_hook(self, key, default=None):
    try:
        value = self.decodevalue(self._data[self.encodekey(key)])
    except KeyError:
        value = _NOT_SET
    try:  # the hottest path: see _LAST
        caller = f = _getframe(1)
        while f.f_code.co_filename in _SKIP:
            f = f.f_back
        last = _LAST
        g = f.f_back
        if last[1] == f.f_lasti and last[0] == id(f) and last[2] == key and (
                g is None or (last[4] is g.f_code and last[5] == g.f_lasti)):
            last[3][1] += 1
        else:
            f, k = _site_key(key, f)
            rec = _SITES.get(k)
            if rec is None:
                _new_site(self, key, value, f, k,
                          "getenv" if caller.f_code is _GETENV else "get")
                rec = _SITES.get(k)
            else:
                rec[1] += 1
            if rec is not None:
                _LAST[:] = [id(f), f.f_lasti, key, rec, g and g.f_code, g and g.f_lasti]
    except Exception:
        pass
    return default if value is _NOT_SET else value


def _contains_hook(self, key):
    raw = self._data.get(self.encodekey(key), _NOT_SET)
    try:
        f, k = _site_key(key, _getframe(1))
        rec = _SITES.get(k)
        if rec is None:
            _new_site(self, key, _NOT_SET if raw is _NOT_SET else self.decodevalue(raw), f, k,
                      "in")
        else:
            rec[1] += 1
    except Exception:
        pass
    return raw is not _NOT_SET


def _bulk(env):
    try:
        f = _getframe(2)
        while f.f_code.co_filename in _SKIP:
            f = f.f_back
        t = _T
        _BULK[0] = (id(f), f.f_lasti)
        k = ("*", id(f.f_code), f.f_lasti)
        rec = _SITES.get(k)
        if rec is not None:
            rec[1] += 1
            return
        if len(_KEEP) > 1:
            _unlist()
        site = t.next_id
        t.next_id += 1
        _SITES[k] = [site, 1]
        names = [x if isinstance(x, str) else os.fsdecode(x) for x in env._data]
        t.emit(("B", site, t.stack(f), names))
        t.counts()
    except Exception:
        pass


def _iter_hook(self):
    _bulk(self)
    return _iter(self)


def _repr_hook(self):
    _bulk(self)
    return _repr(self)


def _written(env, key):
    try:
        name = key if isinstance(key, str) else os.fsdecode(key)
        _T.emit(("W", name))
        if name == "PYTHONPATH" or name == "LD_PRELOAD":
            _keep_hooked(name)
    except Exception:
        pass


def _setitem_hook(self, key, value):
    _setitem(self, key, value)
    _written(self, key)


def _delitem_hook(self, key):
    _delitem(self, key)
    _written(self, key)


def _keep_hooked(name):
    """After the program changed ``PYTHONPATH``/``LD_PRELOAD``, keep runsnap's entry first in
    the C environment (children stay traced) and pass the program's value on to them."""
    raw = _data.get(_enc(name))
    value = None if raw is None else os.environ.decodevalue(raw)
    ours = _HERE if name == "PYTHONPATH" else _LIB
    if not ours:
        return
    sep = ":" if name == "PYTHONPATH" else " "
    os.putenv(name, ours + (sep + value if value else ""))
    os.putenv("RUNSNAP_TRACE_" + name, "" if value is None else "=" + value)


def _inject(env):
    return _spawn.inject(env, _DIR, _HERE, _LIB)


def _wrap_exec(real, env_index):
    return _spawn.wrap_exec(real, env_index, _inject)


#: Top-level modules patched right after they are executed (the hook never imports them).
_TOP = {"subprocess": lambda module: _spawn.patch_subprocess(module, _inject),
        "argparse": lambda module: _args.patch(module, _T.emit)}  # type: ignore[union-attr]
#: Submodules patched right after they are executed (their config classes).
_SUBMODULES = dict.fromkeys(  # (_T is set whenever a patch runs)
    _config.CONFIG_CLASSES, lambda module: _config.patch(module, _T.emit))  # type: ignore[union-attr]


def _end(status=None):
    try:
        _OPENS[0].end()
        _T.counts()
        try:
            _T.emit(("L", _imports.loaded()))
        except OSError:
            pass
        _T.emit(("E", status))
    except Exception:
        pass


_real_exit = os._exit
_OPENS: list = [None]  # the data files' audit hook (_runsnap_trace_files), once installed


def _exit_hook(status):
    _end(status)
    _real_exit(status)


def _after_fork():
    try:
        t = _T
        if t.fd >= 0:
            os.close(t.fd)
        t.fd = -1
        _SITES.clear()
        t.per_name = {}
        t.next_id = 0
        t.written = 0
        _BULK[0] = None
        _LAST[:] = [None, None, None, None, None, None]
        _OPENS[0].forked()
        global _LOCK
        _LOCK = _thread.allocate_lock()  # a lock held by another thread at fork stays held
        t.open(True)
    except Exception:
        pass


def _install():
    _T.open(False)
    loaded = []
    for name in list(sys.modules):
        mod = sys.modules.get(name)
        if "." not in name and mod is not None and name != "sitecustomize":
            _T.mods.add(name)
            f = getattr(mod, "__file__", None)
            if f:
                loaded.append(("M", name, f, None))
    _T.emit(*loaded)
    _Environ.__getitem__ = _getitem_hook
    _Environ.get = _get_hook
    _Environ.__contains__ = _contains_hook
    _Environ.__iter__ = _iter_hook
    _Environ.__repr__ = _repr_hook
    _Environ.__setitem__ = _setitem_hook
    _Environ.__delitem__ = _delitem_hook
    os.execve = _wrap_exec(os.execve, 2)
    for name in ("posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            setattr(os, name, _wrap_exec(getattr(os, name), 2))
    os._exit = _exit_hook
    _OPENS[0] = _files.install(_T.emit, _T.stack, (_HERE, os.path.dirname(_HERE), _DIR))
    for name in [n for n in _TOP if n in sys.modules]:
        _TOP[name](sys.modules[name])
    sys.meta_path.insert(0, _imports.finder(_T, _TOP, _SUBMODULES, _unlist))
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork)
    import atexit

    atexit.register(_end)


if _T is not None:
    try:
        os.makedirs(_DIR, exist_ok=True)
        _install()
    except Exception:
        pass
_chain()
