"""What a difference in torch's build configuration means for a run: the build settings of
``torch.__config__.show()`` (``builds.torch.config``), the switches of ``TorchConfig.cmake``
(``builds.torch.switches``), the C++ ABI, and whether torch can use the GPUs
(``cuda_available``, ``xpu_available``, inferred with a reason by
:mod:`runsnap.capturing.collectors.availability`). Diff ranks with it
(:mod:`runsnap.diffing.sections.facts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["FIELDS", "MESSAGES", "SETTINGS", "evidence", "messages", "not_compared", "score"]

#: Build setting (``torch.__config__.show()`` and ``TorchConfig.cmake`` names) -> score, why.
SETTINGS: dict[str, tuple[int, str]] = {
    "USE_CUDA": (76, "built with CUDA in one run only: without it every CUDA call fails"),
    "USE_ROCM": (76, "built for ROCm in one run only"),
    "CUDA_VERSION": (74, "built for another CUDA version: it needs another driver and ships "
                         "other kernels"),
    "ROCM_VERSION": (74, "built for another ROCm version"),
    "USE_NCCL": (72, "built with NCCL in one run only: torch.distributed's nccl backend, which "
                     "every multi-GPU run uses, exists only in a build with it"),
    "USE_XPU": (70, "built with XPU (Intel GPU) support in one run only"),
    "USE_CUDNN": (68, "built with cuDNN in one run only: convolutions and attention take other "
                      "kernels"),
    "CUDNN_VERSION": (66, "built against another cuDNN: convolution and attention kernels "
                          "change"),
    "TORCH_VERSION": (66, "another torch release"),
    "USE_XCCL": (60, "built with XCCL (Intel GPU collectives) in one run only"),
    "BUILD_TYPE": (60, "another build type (Debug or Release): speed and checks differ"),
    "COMMIT_SHA": (58, "built from another commit"),
    "USE_GLOO": (55, "built with Gloo in one run only: CPU collectives and the default "
                     "distributed backend without GPUs"),
    "USE_MPI": (50, "built with MPI in one run only: the mpi distributed backend"),
    "BLAS_INFO": (52, "another BLAS: CPU matrix products, their speed and rounding change"),
    "LAPACK_INFO": (50, "another LAPACK: CPU linear algebra changes"),
    "USE_MKL": (52, "built with MKL in one run only: CPU BLAS and FFT change"),
    "USE_MKLDNN": (52, "built with oneDNN in one run only: CPU convolutions and matmuls change"),
    "USE_OPENMP": (50, "built with OpenMP in one run only: CPU threading changes"),
    "USE_CUSPARSELT": (48, "built with cuSPARSELt in one run only: 2:4 sparse kernels"),
    "USE_XNNPACK": (40, "built with XNNPACK in one run only: quantized and mobile CPU kernels"),
    "CUDA_FLAGS": (50, "other nvcc flags: kernels built for other GPU architectures or "
                       "options"),
    "CXX_FLAGS": (38, "other C++ compiler flags"),
    "CXX_COMPILER": (35, "built with another C++ compiler"),
}
#: Other fields of ``builds.torch`` this module scores -> score, why.
FIELDS: dict[str, tuple[int, str]] = {
    "xnnpack_available": (40, "torch.backends.xnnpack.enabled differs: quantized and mobile "
                              "CPU kernels"),
    "cxx11_abi": (55, "another C++ ABI (_GLIBCXX_USE_CXX11_ABI): extensions built for one do "
                      "not load in the other"),
}
#: What torch (or the CUDA runtime under it) prints when a field below is why a run failed;
#: an error or a warning of one run saying it is evidence ("named") for that difference.
_NO_CUDA = ("Torch not compiled with CUDA enabled",  # torch/cuda/__init__.py _lazy_init
            "No CUDA GPUs are available",  # torch/cuda/__init__.py: no device visible
            "Found no NVIDIA driver on your system",  # c10/cuda: no driver
            "The NVIDIA driver on your system is too old",  # c10/cuda: the build's CUDA newer
            "CUDA driver version is insufficient for CUDA runtime version")  # cudaGetErrorString
MESSAGES: dict[str, tuple[str, ...]] = {
    "cuda_available": _NO_CUDA,
    "config.USE_CUDA": _NO_CUDA[:1],
    "config.CUDA_VERSION": _NO_CUDA[3:],
    "xpu_available": ("Torch not compiled with XPU enabled",),
    # torch/distributed/distributed_c10d.py, creating a process group of that backend
    "config.USE_NCCL": ("Distributed package doesn't have NCCL built in",),
    "config.USE_GLOO": ("Distributed package doesn't have Gloo built in",),
    "config.USE_MPI": ("Distributed package doesn't have MPI built in",),
}
#: Fields recorded since runsnap read torch's build files: a snapshot without them (an older
#: runsnap, or a torch that lacks the files, which its errors say) is not compared on them.
_NEW = ("config", "switches", "cxx11_abi", "xnnpack_available", "cuda_available",
        "xpu_available")


#: How CMake writes a true and a false switch in torch's build files.
CMAKE_TRUE = {"ON", "1", "TRUE", "YES", "Y"}
CMAKE_FALSE = {"OFF", "0", "FALSE", "NO", "N", ""}


def switch(value: Any) -> bool | None:
    """A CMake boolean as written in these files (``ON``, ``1``, ``OFF``, ``0``, empty: unset).

    >>> switch("ON"), switch("1"), switch("OFF"), switch(""), switch("mkl")
    (True, True, False, False, None)
    """
    text = str(value).strip().upper()
    return True if text in CMAKE_TRUE else False if text in CMAKE_FALSE else None


def _switch(value: Any) -> Any:
    """``ON``/``1``/``TRUE`` and ``OFF``/``0``/empty written alike (both spellings occur)."""
    got = switch(value) if isinstance(value, str) else None
    return value if got is None else got


def not_compared(parts: Sequence[Any], a: Mapping[str, Any], b: Mapping[str, Any],
                 x: Any, y: Any) -> bool:
    """Whether the difference at ``parts`` of two ``builds.torch`` tables is none: a reason
    (evidence of its fact, not a fact), a field one side never recorded, or one switch spelt
    two ways (``1`` and ``ON``).

    >>> not_compared(("config", "USE_NCCL"), {"config": {}}, {"config": {}}, "1", "ON")
    True
    """
    head = str(parts[0])
    if head.endswith("_reason"):
        return True
    if head in _NEW and (head not in a or head not in b):
        return True
    return head == "config" and len(parts) == 2 and str(parts[1]).startswith(
        ("USE_", "HAS_", "PERF_")) and _switch(x) == _switch(y)


def evidence(parts: Sequence[Any], a: Mapping[str, Any], b: Mapping[str, Any]
             ) -> tuple[str, ...]:
    """For an availability fact, both sides' reasons."""
    head = str(parts[0])
    if head in ("cuda_available", "xpu_available", "xnnpack_available"):
        return tuple(f"{side}: {t.get(head + '_reason')}" for side, t in (("A", a), ("B", b))
                     if t.get(f"{head}_reason"))
    return ()


def score(field: str, a: Any, b: Any) -> tuple[int, str] | None:
    """(score, why) for a difference of ``builds.torch.<field>`` (dotted), or None.

    >>> score("cuda_available", True, False)[0], score("config.USE_NCCL", "1", "OFF")[0]
    (88, 72)
    """
    head, _, rest = field.partition(".")
    if head in ("cuda_available", "xpu_available"):
        which = "CUDA" if head == "cuda_available" else "XPU"
        if a is True and b is False:
            return (88 if which == "CUDA" else 80,
                    f"torch.{which.lower()}.is_available() is False in B: the run falls back to "
                    f"the CPU or fails at its first {which} call")
        return (80 if which == "CUDA" else 72,
                f"torch.{which.lower()}.is_available() differs: the runs use other devices")
    if head in ("config", "switches") and rest:
        s, why = SETTINGS.get(rest, (40, "another build setting"))
        return s, f"torch {why} ({rest})"
    if head in FIELDS:
        return FIELDS[head]
    return None


def messages(field: str) -> tuple[str, ...]:
    """What a run prints when ``builds.torch.<field>`` is why it failed (see :data:`MESSAGES`).

    >>> messages("config.USE_NCCL")
    ("Distributed package doesn't have NCCL built in",)
    """
    return MESSAGES.get(field, ())
