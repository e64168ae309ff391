"""What runsnap knows about Python distributions: which are at the core of the stacks."""

from __future__ import annotations

import re

__all__ = ["CORE_PACKAGES", "is_core_package", "normalize_name", "version_change"]

#: Distributions at the core of serving and training stacks: their versions change kernels,
#: defaults and supported models.
CORE_PACKAGES = frozenset({
    "torch", "sglang", "sgl-kernel", "vllm", "transformers", "flashinfer-python", "flashinfer",
    "triton", "xformers", "flash-attn", "deep-gemm", "nvidia-nccl-cu12", "nvidia-nccl-cu13",
    "nvidia-cudnn-cu12", "nvidia-cublas-cu12", "cuda-python", "accelerate", "safetensors",
    "tokenizers", "huggingface-hub", "numpy", "jax", "jaxlib", "tensorrt", "tensorrt-llm",
    "deepspeed", "megatron-core", "torchvision", "torchaudio",
})


def normalize_name(name: str) -> str:
    """A distribution name as PEP 503 normalises it.

    >>> normalize_name("Flash_Attn"), normalize_name("sgl.kernel")
    ('flash-attn', 'sgl-kernel')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def is_core_package(name: str) -> bool:
    """Whether distribution ``name`` is at the core of serving and training stacks.

    >>> is_core_package("Torch"), is_core_package("flashinfer_python"), is_core_package("rich")
    (True, True, False)
    >>> is_core_package("nvidia-cuda-runtime-cu12"), is_core_package("cuda-bindings")
    (True, True)
    """
    norm = normalize_name(name)
    return norm in CORE_PACKAGES or norm.startswith(CORE_PREFIXES)


#: Name starts of the CUDA libraries' wheels (``nvidia-cusparse-cu12``, ``cuda-bindings``...).
CORE_PREFIXES = ("nvidia-", "cuda-", "cupy-", "flashinfer-", "sgl-", "vllm-")


def version_change(x: str, y: str) -> str:
    """``upgraded``, ``downgraded`` or ``changed`` (PEP 440; unparsable versions: ``changed``).

    >>> version_change("2.9.0", "2.10.0"), version_change("1.0", "1.0rc1"), version_change("a", "b")
    ('upgraded', 'downgraded', 'changed')
    """
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
