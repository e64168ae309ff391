"""torch's build configuration, read from the small text files a torch install ships, never by
importing torch (that costs seconds):

* ``torch/include/caffe2/core/macros.h``: ``CAFFE2_BUILD_STRINGS``, the table that
  ``torch.__config__.show()`` prints as "Build settings" (``USE_CUDA``, ``CUDA_VERSION``,
  ``CUDNN_VERSION``, ``USE_NCCL``, ``BLAS_INFO``, ``COMMIT_SHA``, ``CXX_FLAGS`` ...). CMake
  writes it from ``caffe2/core/macros.h.in``; torch 1.9 to 2.12 write every value as a C
  string, 2.13 long ones as raw strings (``R"PYT(...)PYT"``); older releases have fewer
  settings (no ``ROCM_VERSION``), some empty. Recorded as ``config``, every value as the text
  torch prints.
* ``torch/share/cmake/Torch/TorchConfig.cmake``: the switches CMake configured into
  ``cmake/TorchConfig.cmake.in`` (``if(@USE_XNNPACK@)`` before
  ``append_torchlib_if_found(XNNPACK)`` is written ``if(ON)`` or ``if(OFF)``), recorded as
  ``switches``; ``-D_GLIBCXX_USE_CXX11_ABI=N`` there (older releases write it; 2.13 does
  not) is ``cxx11_abi``.

``Is XNNPACK available`` (``torch.backends.xnnpack.enabled``, which is
``torch._C._is_xnnpack_enabled()``, which is ``#ifdef USE_XNNPACK`` in ATen's
``Context::isXNNPACKAvailable``) is that compile switch: from ``TorchConfig.cmake``, else from
``-DUSE_XNNPACK`` in ``CXX_FLAGS`` (``cmake/Dependencies.cmake`` adds it with the switch).
"""

from __future__ import annotations

import re

from runsnap.knowledge.torchbuild import CMAKE_FALSE, CMAKE_TRUE, switch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["CMAKE_FILE", "MACROS_FILE", "build_strings", "read", "settings_line", "switch",
           "switches"]

#: Where the two files sit in the torch package (the probe reads them: ``probe/packages.py``).
MACROS_FILE = "include/caffe2/core/macros.h"
CMAKE_FILE = "share/cmake/Torch/TorchConfig.cmake"

_ENTRY = re.compile(r'\{\s*"(\w+)"\s*,\s*(?:R"(\w{0,16})\((.*?)\)\2"|"((?:[^"\\\n]|\\.)*)")\s*\}',
                    re.S)
_IF = re.compile(r"^\s*if\s*\(\s*(\w+)\s*\)\s*$")
_APPEND = re.compile(r"^\s*append_(?:torchlib|wholearchive_lib)_if_found\(\s*([\w-]+)")
_ABI = re.compile(r"-D_GLIBCXX_USE_CXX11_ABI=([01])\b")
#: The first library a ``TorchConfig.cmake`` block appends -> the CMake switch guarding it.
_LIB_SWITCH = {
    "XNNPACK": "USE_XNNPACK", "nnpack": "USE_NNPACK", "pytorch_qnnpack": "USE_PYTORCH_QNNPACK",
    "qnnpack": "USE_QNNPACK", "kleidiai": "USE_KLEIDIAI", "fbgemm": "USE_FBGEMM",
    "dnnl": "USE_MKLDNN", "kineto": "USE_KINETO", "torch_cuda": "USE_CUDA",
    "torch_xpu": "USE_XPU",
}
def build_strings(text: str) -> dict[str, str] | None:
    """``CAFFE2_BUILD_STRINGS`` of a ``macros.h``, in its order; None when it has none.

    >>> build_strings('#define CAFFE2_BUILD_STRINGS { \\\\\\n {"USE_CUDA", "ON"}, \\\\\\n'
    ...               ' {"CXX_FLAGS", R"PYT( -O2)PYT"}, \\\\\\n}')
    {'USE_CUDA': 'ON', 'CXX_FLAGS': ' -O2'}
    """
    at = text.find("CAFFE2_BUILD_STRINGS")
    if at < 0:
        return None
    out: dict[str, str] = {}
    for m in _ENTRY.finditer(text, at):
        value = m[3] if m[3] is not None else re.sub(r"\\(.)", r"\1", m[4])
        out.setdefault(m[1], value)
    return out


def switches(text: str) -> dict[str, bool]:
    """The switches a ``TorchConfig.cmake`` was configured with: ``if(ON)`` / ``if(OFF)``
    directly before a block appending a known library (a condition that is not one constant,
    such as ``if(OFF AND ON)``, says nothing alone and is skipped).

    >>> switches("if(OFF)\\n  append_torchlib_if_found(XNNPACK)\\nendif()\\n")
    {'USE_XNNPACK': False}
    """
    out: dict[str, bool] = {}
    cond: bool | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _IF.match(line)
        if m:
            cond = switch(m[1]) if m[1].upper() in CMAKE_TRUE | CMAKE_FALSE else None
            continue
        lib = _APPEND.match(line)
        if cond is not None and lib and lib[1] in _LIB_SWITCH:
            out.setdefault(_LIB_SWITCH[lib[1]], cond)
        cond = None
    return out


def settings_line(config: Mapping[str, Any]) -> str:
    """The "Build settings" line ``torch.__config__.show()`` prints from the same table
    (``at::show_config``: every non-empty value, by key, each followed by ``, ``).

    >>> settings_line({"USE_CUDA": "0", "CUDA_VERSION": "", "BLAS_INFO": "mkl"})
    'Build settings: BLAS_INFO=mkl, USE_CUDA=0, '
    """
    return "Build settings: " + "".join(f"{k}={v}, " for k, v in sorted(config.items())
                                         if isinstance(v, str) and v)


def read(files: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """``(facts, errors)`` for ``builds.torch`` from the probe's copies of the two files:
    ``config``, ``switches``, ``cxx11_abi``, ``xnnpack_available`` and its reason."""
    out: dict[str, Any] = {}
    errors: list[str] = []
    macros, cmake = files.get(MACROS_FILE), files.get(CMAKE_FILE)
    config = build_strings(macros) if macros is not None else None
    if macros is None:
        errors.append(f"torch/{MACROS_FILE} not found (a source checkout or a stripped install?):"
                      " torch.__config__.show()'s build settings are not recorded")
    elif config is None:
        errors.append(f"torch/{MACROS_FILE}: no CAFFE2_BUILD_STRINGS in it (a format not known "
                      "yet): torch.__config__.show()'s build settings are not recorded")
    else:
        out["config"] = config
    found = switches(cmake) if cmake is not None else {}
    if found:
        out["switches"] = found
    if cmake is not None and (abi := _ABI.search(cmake)):
        out["cxx11_abi"] = abi[1] == "1"
    if "USE_XNNPACK" in found:
        on = found["USE_XNNPACK"]
        out["xnnpack_available"] = on
        out["xnnpack_available_reason"] = (
            f"USE_XNNPACK is {'ON' if on else 'OFF'} in torch/{CMAKE_FILE}; "
            "torch.backends.xnnpack.enabled is this compile switch")
    elif config is not None and "CXX_FLAGS" in config:
        on = re.search(r"(?<!\S)-DUSE_XNNPACK(?!\S)", config["CXX_FLAGS"]) is not None
        out["xnnpack_available"] = on
        out["xnnpack_available_reason"] = (
            f"-DUSE_XNNPACK is {'in' if on else 'not in'} CXX_FLAGS of torch/{MACROS_FILE}; "
            "torch.backends.xnnpack.enabled is this compile switch")
    if cmake is None:
        errors.append(f"torch/{CMAKE_FILE} not found: its configured switches are not recorded"
                      + ("" if "xnnpack_available" in out else
                         ", nor whether XNNPACK is available"))
    return out, errors
