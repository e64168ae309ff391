"""``[packages.builds]`` and ``[packages.libraries]``: how the child's engines were built, and the
CUDA/ROCm libraries it will load, read from files without importing anything.

Importing torch to ask it costs seconds, so the package probe (run in the child's interpreter)
returns the small files that hold the answers and the folders that hold the libraries
(``probe/packages.py``: ``modules`` and ``nvidia``), and this module reads them:

* ``builds.torch``: ``version`` with its local part (``2.9.1+cu128``) from ``torch/version.py``,
  ``cuda``, ``hip``, ``rocm``, ``xpu`` it was built with (absent: not built for it), ``debug``,
  ``git_version``, and the libraries bundled in ``torch/lib``; its build settings
  (``torch.__config__.show()``) and configured switches (``USE_XNNPACK``), read by
  :mod:`runsnap.capturing.collectors.torchconfig`.
* ``builds.vllm``, ``sglang``, ``sgl_kernel``, ``flashinfer``, ``xformers``: their version files
  (and ``xformers/cpp_lib.json``: the CUDA and torch it was built against), and their native
  extensions (``_C.abi3.so`` is a CUDA build of vLLM, ``_rocm_C.abi3.so`` a ROCm one;
  ``sgl_kernel``'s ``sm90``/``sm100`` folders are the architectures it carries);
  ``triton``: its backends.
* ``libraries``: family (``nccl``, ``cudnn``, ``cuda-runtime``, ``cublas``...) -> ``version``,
  ``source`` (the ``nvidia-*`` wheel, or ``torch/lib`` for bundled copies), ``dir`` and
  ``files``. The version is the wheel's (``nvidia-nccl-cu12 2.27.3``: the library file is only
  ``libnccl.so.2``), or the file name's when it carries the full version (``libnccl.so.2.21.5``).
"""

from __future__ import annotations

import json
import re

from runsnap.base.patterns import on_use
from runsnap.knowledge.packages import distribution_version, normalize_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["LIBRARY_FAMILIES", "collect", "library_family", "parse_assignments", "read_builds"]

#: Library file stem -> family (the name of the ``nvidia-<family>-cuXX`` wheel). Longest first.
LIBRARY_FAMILIES = (
    ("libcudnn", "cudnn"), ("libnccl", "nccl"), ("libcudart", "cuda-runtime"),
    ("libcublasLt", "cublas"), ("libcublas", "cublas"), ("libcusparseLt", "cusparselt"),
    ("libcusparse", "cusparse"), ("libnvshmem", "nvshmem"), ("libnvrtc", "cuda-nvrtc"),
    ("libnvJitLink", "nvjitlink"), ("libcufft", "cufft"), ("libcurand", "curand"),
    ("libcusolver", "cusolver"), ("libcupti", "cuda-cupti"), ("libnvToolsExt", "nvtx"),
    ("libnvtx", "nvtx"), ("libcufile", "cufile"), ("librccl", "rccl"), ("libMIOpen", "miopen"),
    ("libamdhip64", "hip"), ("libhipblaslt", "hipblaslt"), ("libhipblas", "hipblas"),
    ("librocblas", "rocblas"), ("libnvpl", "nvpl"),
)
_ASSIGN = on_use(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*(.+?)\s*$")
_CHAIN = on_use(r"^[A-Za-z_]\w*\s*=\s*")
_FULL_VERSION = on_use(r"\.so\.(\d+\.\d+(?:\.\d+)*)$")
_SM = on_use(r"^sm_?\d+[a-z]?$")


def _literal(text: str) -> Any:
    """A Python literal as plain data: strings, None, booleans, integers; else the text.

    >>> _literal("'2.9.1+cu128'"), _literal("None"), _literal("False"), _literal("(0, 11)")
    ('2.9.1+cu128', None, False, '(0, 11)')
    """
    text = text.split(" #", 1)[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    if text.isdigit():
        return int(text)
    return text


def parse_assignments(source: str) -> dict[str, Any]:
    """Top-level ``name = literal`` lines of a generated version file.

    >>> parse_assignments("__version__ = version = '0.11.0'\\ncuda: Optional[str] = '12.8'\\n")
    {'__version__': '0.11.0', 'cuda': '12.8'}
    """
    out: dict[str, Any] = {}
    for line in source.splitlines():
        m = _ASSIGN.match(line)
        if not m:
            continue
        value = m[2]
        while _CHAIN.match(value) and not value.startswith(("'", '"')):
            value = _CHAIN.sub("", value, count=1)
        out.setdefault(m[1], _literal(value))
    return out


def library_family(file_name: str) -> str | None:
    """The family of a library file (``libcublasLt.so.12`` -> ``cublas``), or None."""
    for stem, family in LIBRARY_FAMILIES:
        if file_name.startswith(stem) and file_name[len(stem):len(stem) + 1] in (".", "-", "_", ""):
            return family
    return None


def _wheel_for(family: str, dists: Mapping[str, str]) -> tuple[str, str] | None:
    """(distribution, version) of the ``nvidia-<family>[-cuXX]`` wheel, if installed."""
    for name, version in dists.items():
        if re.fullmatch(rf"nvidia-{re.escape(family)}(?:-cu\d+)?", name):
            return name, version
    return None


def _torch(files: Mapping[str, str], errors: list[str]) -> dict[str, Any]:
    # deferred: runsnap.capturing.collectors, ~12 ms measured under load; only _torch() needs it
    from runsnap.capturing.collectors import torchconfig

    facts = parse_assignments(files.get("version.py", ""))
    out: dict[str, Any] = {}
    if "__version__" in facts:
        out["version"] = facts["__version__"]
    for key in ("cuda", "hip", "rocm", "xpu"):
        if facts.get(key):
            out[key] = facts[key]
    if "debug" in facts:
        out["debug"] = facts["debug"]
    if facts.get("git_version"):
        out["git_version"] = facts["git_version"]
    accel = [f"{k} {out[k]}" for k in ("cuda", "hip", "xpu") if k in out]
    out["built_for"] = ", ".join(accel) or "cpu"
    config, problems = torchconfig.read(files)
    out.update(config)
    errors.extend(problems)
    return out


def _version_file(files: Mapping[str, str]) -> dict[str, Any]:
    for name, text in files.items():
        if name.endswith(".py"):
            facts = parse_assignments(text)
            version = facts.get("__version__") or facts.get("version")
            if isinstance(version, str):
                return {"version": version, "version_file": name}
    return {}


def _module(name: str, found: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
    files: Mapping[str, str] = found["files"]
    lists: Mapping[str, list[str]] = found["lists"]
    out: dict[str, Any] = {"path": found["dir"]}
    out.update(_torch(files, errors) if name == "torch" else _version_file(files))
    if "cpp_lib.json" in files:
        try:
            data = json.loads(files["cpp_lib.json"])
            version = data.get("version") or {}
            out["built_with"] = {k: str(v) for k, v in version.items() if v is not None}
        except (ValueError, AttributeError) as exc:
            errors.append(f"{name}/cpp_lib.json: not understood: {exc}")
    native = lists.get(".")
    if native:
        out["native"] = native
    if name == "torch" and lists.get("lib"):
        bundled = [f for f in lists["lib"] if library_family(f)]
        out["bundled_libraries"] = bundled
    if lists.get("backends") is not None:
        out["backends"] = [b for b in lists["backends"] if not b.startswith(("_", "."))]
    if name == "sgl_kernel":
        archs = [n for n in native or [] if _SM.match(n)]
        if archs:
            out["architectures"] = archs
    if name == "vllm" and native is not None:
        out["built_for"] = ("rocm" if any(n.startswith("_rocm_C") for n in native)
                            else "cuda" if any(n.startswith("_C.") for n in native) else "")
    return out


def _libraries(nvidia: Iterable[Mapping[str, Any]], torch_lib: Mapping[str, Any] | None,
               dists: Mapping[str, str]) -> dict[str, Any]:
    """Family -> where its library comes from, first found first (torch/lib, then wheels)."""
    out: dict[str, Any] = {}
    places: list[tuple[str, list[str], str]] = []
    if torch_lib:
        places.append((torch_lib["dir"], torch_lib["libs"], "torch/lib"))
    places += [(n["dir"], list(n["libs"]), "") for n in nvidia]
    for folder, names, source in places:
        by_family: dict[str, list[str]] = {}
        for fname in names:
            family = library_family(fname)
            if family:
                by_family.setdefault(family, []).append(fname)
        for family, fnames in by_family.items():
            if family in out:
                out[family].setdefault("other_dirs", []).append(folder)
                continue
            entry: dict[str, Any] = {"dir": folder, "files": fnames}
            wheel = _wheel_for(family, dists)
            full = [m[1] for f in fnames if (m := _FULL_VERSION.search(f))]
            if source:
                entry["source"] = source
            elif wheel:
                entry["source"] = f"{wheel[0]} (pip)"
            if full:
                entry["version"] = max(full, key=lambda v: [int(p) for p in v.split(".")])
            elif wheel and not source:
                entry["version"] = wheel[1]
            out[family] = entry
    return out


def read_builds(probe: Mapping[str, Any]) -> dict[str, Any]:
    """``{"builds", "libraries", "errors"}`` from a package probe's answer, checked where it
    arrived (:func:`runsnap.base.probeanswer.checked`: every field is there)."""
    errors: list[str] = []
    modules: Mapping[str, Any] = probe["modules"]
    builds = {name: _module(name, found, errors) for name, found in modules.items()}
    dists = {normalize_name(d["name"]): d["version"] for d in probe["distributions"]}
    for name, build in builds.items():
        # a package without a version file (sglang, triton) is versioned by its distribution
        if not build.get("version") and (version := distribution_version(name, dists)):
            build["version"] = version
            build["version_from"] = "distribution"
    torch = modules.get("torch")
    torch_lib = None
    if torch and torch["lists"].get("lib") is not None:
        torch_lib = {"dir": f"{torch['dir']}/lib", "libs": torch["lists"]["lib"]}
    libraries = _libraries(probe["nvidia"], torch_lib, dists)
    return {"builds": builds, "libraries": libraries, "errors": errors}


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """The builds part of ``[packages]``."""
    probe = ctx.probe
    if "error" in probe:
        return {"errors": []}  # the probe's failure is already in [packages] errors
    return read_builds(probe)
