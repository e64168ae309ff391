"""Part of runsnap's tracing hook (``sitecustomize.py`` beside it, which imports it at start-up
and takes it out of ``sys.modules`` again): the children a traced program starts are traced
too. Standard library only."""

import os


def inject(env, trace_dir, here, lib):
    """``env`` (a mapping given to exec/spawn) with runsnap's variables, so the child is traced
    (``trace_dir``: its log folder; ``here``: the hook's folder; ``lib``: the getenv
    interposer, or None)."""
    try:
        if env is None or not hasattr(env, "keys"):
            return env
        keys = list(env.keys())
        as_bytes = bool(keys) and isinstance(keys[0], bytes)
        conv = os.fsencode if as_bytes else (lambda s: s)
        if conv("RUNSNAP_TRACE_DIR") in env:
            return env
        out = dict(env)
        pp = out.get(conv("PYTHONPATH"))
        out[conv("RUNSNAP_TRACE_DIR")] = conv(trace_dir)
        out[conv("RUNSNAP_TRACE_PYTHONPATH")] = conv("") if pp is None else conv("=") + pp
        out[conv("PYTHONPATH")] = conv(here) + (conv(":") + pp if pp else conv(""))
        if lib:
            pre = out.get(conv("LD_PRELOAD"))
            out[conv("RUNSNAP_TRACE_LIB")] = conv(lib)
            out[conv("RUNSNAP_TRACE_LD_PRELOAD")] = conv("") if pre is None else conv("=") + pre
            out[conv("LD_PRELOAD")] = conv(lib) + (conv(" ") + pre if pre else conv(""))
        return out
    except Exception:
        return env


def wrap_exec(real, env_index, inject):
    """``real`` (exec, spawn) giving its environment argument through ``inject``."""
    def wrapper(*args, **kwargs):
        if "env" in kwargs:
            kwargs["env"] = inject(kwargs["env"])
        elif len(args) > env_index:
            args = args[:env_index] + (inject(args[env_index]),) + args[env_index + 1:]
        return real(*args, **kwargs)

    wrapper.__name__ = getattr(real, "__name__", "wrapper")
    wrapper.__doc__ = getattr(real, "__doc__", None)
    return wrapper


def patch_subprocess(module, inject):
    """``subprocess.Popen`` starting its children through ``inject``."""
    try:
        popen = module.Popen
        real = popen._execute_child
        popen._execute_child = wrap_exec(real, 7, inject)  # (self, args, executable, ..., cwd, env
    except Exception:
        pass
