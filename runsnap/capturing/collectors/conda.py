"""``[packages.conda]``: the conda packages of the child's environment, which pip cannot see.

CUDA toolkits, NCCL, cuDNN, MKL and compilers often come from conda, not from wheels. The
environment is the child interpreter's prefix (or, for a venv made from a conda Python, its
base prefix), else ``CONDA_PREFIX``; its ``conda-meta`` folder has one ``NAME-VERSION-BUILD.json``
per package. The names are read from the file names (one directory listing: the JSON files
hold every installed file and run to megabytes), as ``conda list`` shows them.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["collect", "read_conda", "split_record_name"]


def split_record_name(file_name: str) -> tuple[str, str, str] | None:
    """(name, version, build) from ``conda-meta`` file names.

    >>> split_record_name("cuda-nvcc-12.4.131-0.json")
    ('cuda-nvcc', '12.4.131', '0')
    >>> split_record_name("python-3.11.7-hab00c5b_1_cpython.json")
    ('python', '3.11.7', 'hab00c5b_1_cpython')
    >>> split_record_name("history") is None
    True
    """
    if not file_name.endswith(".json"):
        return None
    parts = file_name[:-5].rsplit("-", 2)
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def read_conda(prefix: str) -> dict[str, Any]:
    """``{"prefix", "count", "packages": {name: {"version", "build"}}}`` of one environment."""
    names = sorted(os.listdir(os.path.join(prefix, "conda-meta")))
    packages: dict[str, Any] = {}
    for file_name in names:
        record = split_record_name(file_name)
        if record:
            packages[record[0]] = {"version": record[1], "build": record[2]}
    return {"prefix": prefix, "count": len(packages), "packages": packages}


def find_prefix(probe: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """The conda environment the child runs in, or None (``probe``: a checked answer,
    :func:`runsnap.base.probeanswer.checked`)."""
    for prefix in (probe["prefix"], probe["base_prefix"], env.get("CONDA_PREFIX")):
        if prefix and os.path.isdir(os.path.join(prefix, "conda-meta")):
            return prefix
    return None


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """The conda part of ``[packages]`` (nothing when the child does not run in conda)."""
    prefix = find_prefix(ctx.probe, ctx.env)
    if prefix is None:
        return {"errors": []}
    try:
        return {"conda": read_conda(prefix), "errors": []}
    except OSError as exc:
        return {"errors": [f"{prefix}/conda-meta: {exc.strerror or exc}"]}
