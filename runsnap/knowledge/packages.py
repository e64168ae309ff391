"""What runsnap knows about Python distributions: which are at the core of the stacks."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from runsnap.knowledge import rule_lines

__all__ = ["MODULE_DISTRIBUTIONS", "distribution_version", "is_core_package",
           "normalize_name", "stack_packages", "version_change"]

def stack_packages(tag: str) -> tuple[str, ...]:
    """The distributions of ``stack-packages.tsv`` beside this module that carry ``tag``
    (``core``, ``report``, ``expected``, ``summary``: the file says what each means), in the
    file's order.

    >>> stack_packages("expected")
    ('torch', 'sglang', 'vllm', 'transformers', 'flashinfer-python', 'triton')
    """
    return tuple(name for name, tags in _stack_table() if tag in tags)


@functools.lru_cache(maxsize=1)
def _stack_table() -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((row[0], frozenset(row[1].split(","))) for row in rule_lines("stack-packages.tsv"))


def normalize_name(name: str) -> str:
    """A distribution name as PEP 503 normalises it.

    >>> normalize_name("Flash_Attn"), normalize_name("sgl.kernel")
    ('flash-attn', 'sgl-kernel')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


#: Modules whose distribution is named otherwise than the module (PEP 503 normalised), as their
#: projects publish them; any other module's distribution is its own name normalised.
MODULE_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "triton": ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu"),
    "sgl_kernel": ("sgl-kernel",),
    "flash_attn": ("flash-attn",),
    "deep_gemm": ("deep-gemm", "deep_gemm"),
    "torch": ("torch",),
}


def distribution_version(module: str, versions: Mapping[str, str | None]) -> str:
    """The version of the distribution that installs ``module``, from distribution name (any
    spelling) -> version; ``""`` when none is listed.

    >>> distribution_version("sgl_kernel", {"sgl-kernel": "0.3.9"})
    '0.3.9'
    >>> distribution_version("triton", {"Triton": "3.8.0"}), distribution_version("x", {})
    ('3.8.0', '')
    """
    by_norm = {normalize_name(str(k)): v for k, v in versions.items()}
    for name in MODULE_DISTRIBUTIONS.get(module, (module,)):
        version = by_norm.get(normalize_name(name))
        if isinstance(version, str) and version:
            return version
    return ""


def is_core_package(name: str) -> bool:
    """Whether distribution ``name`` is at the core of serving and training stacks.

    >>> is_core_package("Torch"), is_core_package("flashinfer_python"), is_core_package("rich")
    (True, True, False)
    >>> is_core_package("nvidia-cuda-runtime-cu12"), is_core_package("cuda-bindings")
    (True, True)
    """
    norm = normalize_name(name)
    return norm in stack_packages("core") or norm.startswith(CORE_PREFIXES)


#: Name starts of the CUDA libraries' wheels (``nvidia-cusparse-cu12``, ``cuda-bindings``...).
CORE_PREFIXES = ("nvidia-", "cuda-", "cupy-", "flashinfer-", "sgl-", "vllm-")


def version_change(x: str, y: str) -> str:
    """``upgraded``, ``downgraded`` or ``changed`` (PEP 440; unparsable versions: ``changed``).

    >>> version_change("2.9.0", "2.10.0"), version_change("1.0", "1.0rc1"), version_change("a", "b")
    ('upgraded', 'downgraded', 'changed')
    """
    # deferred: packaging, ~23 ms measured under load; only version_change() needs it
    from packaging.version import InvalidVersion, Version

    try:
        va, vb = Version(x), Version(y)
    except InvalidVersion:
        return "changed"
    if vb > va:
        return "upgraded"
    if vb < va:
        return "downgraded"
    return "changed"  # equal by PEP 440 but spelt differently (1.0 vs 1.0.0)
