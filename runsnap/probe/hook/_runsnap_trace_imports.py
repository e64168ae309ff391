"""Part of runsnap's tracing hook (``sitecustomize.py`` beside it, which imports it at start-up
and takes it out of ``sys.modules`` again): what the program loads. A finder first on
``sys.meta_path`` notes each top-level module and where it was found (``("M", name, file,
None)``), the submodules of the program's own packages, and patches the few modules whose
objects the trace watches; at the end, :func:`loaded` lists the GPU and interconnect libraries
the process mapped. Standard library only."""

import os
import sys

#: How many submodules of the program's own packages a process may still note (a large
#: editable checkout has thousands).
OWN_LEFT = [512]
_INSTALLED = ("/site-packages/", "/dist-packages/", os.path.dirname(os.__file__) + os.sep)
#: Top-level packages found outside installed packages and Python's own library (the
#: program's, a ``PYTHONPATH`` entry's, an editable install's checkout): their submodules are
#: noted too, which tells an edit to ``lm/attention.py`` that ran from one that did not.
_OWN: set = set()
#: What :func:`finder` was given: the tracer, the top-level modules and the submodules to
#: patch after they run (name -> patch(module)), and what to call before each find.
_SET: list = [None, {}, {}, None]


def finder(tracer, top, submodules, before):
    """The finder to put first on ``sys.meta_path``; ``before()`` runs at each find (the hook
    uses it to leave ``sys.modules`` at the program's first import)."""
    _SET[:] = [tracer, top, submodules, before]
    return _Finder


class _Finder:
    """Notes each top-level module, and the submodules of :data:`_OWN`; patches the modules
    named in ``top`` and ``submodules`` right after they run."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        tracer, _top, submodules, before = _SET
        before()
        if path is not None:
            if name in submodules:
                return cls._patched(name, path, target, submodules[name])
            if _OWN and OWN_LEFT[0] > 0 and name.partition(".")[0] in _OWN:
                return cls._found(name, path, target)
            return None
        if name in tracer.mods:
            return None
        tracer.mods.add(name)
        return cls._found(name, path, target)

    @classmethod
    def _found(cls, name, path, target):
        for other in sys.meta_path:
            if other is cls:
                continue
            find = getattr(other, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                _module(name, spec)
                return spec
        return None

    @classmethod
    def _patched(cls, name, path, target, patch):
        try:
            for other in sys.meta_path:
                find = None if other is cls else getattr(other, "find_spec", None)
                spec = find and find(name, path, target)
                if spec is not None:
                    if spec.loader is not None:
                        _after_exec(spec, patch)
                    return spec
        except Exception:
            pass
        return None


def _module(name, spec):
    try:
        tracer, top = _SET[0], _SET[1]
        origin = spec.origin if spec.has_location else None
        locations = spec.submodule_search_locations
        if origin is None and locations:
            origin = list(locations)[0]
        tracer.emit(("M", name, origin, None))
        tracer.counts()
        if _own_package(name, origin, locations):
            _OWN.add(name)
        if name in top:
            _after_exec(spec, top[name])
    except Exception:
        pass


def _own_package(name, origin, locations):
    """Whether module ``name``, found at ``origin``, is a package of the program's own (see
    :data:`_OWN`); a submodule noted uses up one of :data:`OWN_LEFT`."""
    if "." in name:
        OWN_LEFT[0] -= 1
        return False
    return bool(locations) and isinstance(origin, str) and not any(
        part in origin for part in _INSTALLED)


def _after_exec(spec, patch):
    """``patch(module)`` right after the module is executed, restoring its own loader."""
    loader = spec.loader

    class _Patching:
        def create_module(self, s):
            return loader.create_module(s)

        def exec_module(self, module):
            module.__loader__ = loader
            spec.loader = loader
            loader.exec_module(module)
            try:
                patch(module)
            except Exception:
                pass

    spec.loader = _Patching()


#: The libraries whose copy a diff weighs (the toolchain's ``LIBRARY_PREFIXES``, runsnap/
#: capturing/collectors/toolchain.py; tests/tracing/test_libraries_loaded.py keeps them alike).
LIBRARIES = (b"libcuda.so", b"libcudart.so", b"libnccl.so", b"libcudnn.so", b"libcublas.so",
             b"libcublasLt.so", b"libnvrtc.so", b"libnvJitLink.so", b"libnvidia-ml.so",
             b"libcusparseLt.so", b"libnvshmem", b"libibverbs.so", b"libmlx5.so",
             b"libamdhip64.so", b"librccl.so", b"libMIOpen.so", b"librocm_smi64.so")


def loaded():
    """The files of :data:`LIBRARIES` this process has mapped (``/proc/self/maps``), by
    name: which copy of libcudart the loader took, if it took one at all."""
    names = set()
    with open("/proc/self/maps", "rb") as fh:
        for line in fh:
            at = line.rfind(b"/")
            if at >= 0 and line.startswith(LIBRARIES, at + 1):
                names.add(line[at + 1:].rstrip().decode("utf-8", "replace"))
    return sorted(names)
