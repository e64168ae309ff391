"""What ``torch.cuda.is_available()`` and ``torch.xpu.is_available()`` would answer in the
child, inferred without importing torch, each with its reason in words.

It runs after the collectors (it is :data:`runsnap.capturing.collectors.DERIVED`), from facts they
recorded: the torch build (``[packages] builds.torch``), the GPUs and driver (``[system] gpu``),
and the child's own environment (the recorded ``[env]``):

``torch.cuda.is_available()`` is true when torch is built with CUDA (or ROCm), a driver is
loaded, at least one device is visible (``CUDA_VISIBLE_DEVICES``; ROCm also
``ROCR_VISIBLE_DEVICES`` and ``HIP_VISIBLE_DEVICES``), and the driver is new enough for the
build's CUDA (else ``cudaGetDeviceCount`` fails and torch counts no device). Where the GPUs were
read from ``/proc/driver/nvidia`` (no nvidia-smi), only devices whose node this process has
count, and the driver's CUDA comes from its branch (``cuda_version_from``); for a branch
runsnap's table lacks it is unknown, and the answer is yes with a reason that says so.

``torch.xpu.is_available()`` is true when torch is built with XPU and an Intel GPU is present
(a render node of vendor ``0x8086`` under ``/sys/class/drm``; the Level Zero driver is not
checked, so this one is the weaker inference, and its reason says so).

The facts join ``builds.torch``: ``cuda_available`` / ``cuda_available_reason``,
``xpu_available`` / ``xpu_available_reason``.
"""

from __future__ import annotations

from runsnap.base.patterns import on_use
from runsnap.base.records import FrozenRecord
from runsnap.capturing.collectors.sysread import listdir, read
from runsnap.knowledge.devices import visible_devices

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, TypeVar

    from runsnap.capturing.context import CaptureContext

    _F = TypeVar("_F", bound=FrozenRecord)

__all__ = ["collect", "cuda_available", "driver_supports", "infer",
           "xpu_available"]

_VERSION = on_use(r"^(\d+)\.(\d+)")


class _Torch(FrozenRecord):
    """``[packages] builds.torch``, the fields read here (:mod:`.builds` writes them)."""

    version: Any = "?"
    cuda: Any = None
    hip: Any = None
    xpu: Any = None
    config: Any = None


class _Device(FrozenRecord):
    """One of ``[system] gpu.devices`` (:mod:`.gpu`)."""

    uuid: Any = None
    usable: Any = None
    """False: the driver lists it, but this process has no device node for it."""


class _Gpu(FrozenRecord):
    """``[system] gpu``, the fields read here (:mod:`.gpu` writes them)."""

    available: Any = False
    reason: Any = None
    count: Any = None
    devices: Any = None
    driver_version: Any = None
    cuda_version: Any = None
    cuda_version_from: Any = None
    source: Any = None
    nvidia_smi_error: Any = None
    amd: Any = None


class _Amd(FrozenRecord):
    """``[system] gpu.amd`` (:mod:`.amdsmi`)."""

    count: Any = None


def _read(cls: type[_F], facts: Any) -> _F:
    """``facts``, a table a collector wrote, as ``cls``: each declared field read once, its
    default where the table leaves it out (a table that is no table: every default)."""
    got = facts if isinstance(facts, dict) else {}
    return cls(**{name: got[name] for name in cls._fields if name in got})


def _major_minor(text: Any) -> tuple[int, int] | None:
    m = _VERSION.match(str(text or ""))
    return (int(m[1]), int(m[2])) if m else None


def driver_supports(build: str, driver: str) -> tuple[bool | None, str]:
    """Whether a driver whose ``nvidia-smi`` says "CUDA Version: ``driver``" runs code built
    with CUDA ``build``, and how (None: a version is unknown).

    The rule is NVIDIA's "CUDA Minor Version Compatibility"
    (https://docs.nvidia.com/deploy/cuda-compatibility/#minor-version-compatibility): since
    CUDA 11, an application built with any toolkit of a major release runs on any driver of
    that major release or later (nvidia-smi prints the newest CUDA the driver supports), so the
    driver's major must be at least the build's; before CUDA 11 the driver had to support the
    build's version itself. (A CUDA forward-compatibility package, ``cuda-compat``, can give an
    older datacenter driver a newer ``libcuda``; nvidia-smi does not show it.)

    >>> driver_supports("12.8", "12.4")[0], driver_supports("12.8", "11.4")[0]
    (True, False)
    >>> driver_supports("10.2", "10.1")[0], driver_supports("12.8", "")[0]
    (False, None)
    """
    b, d = _major_minor(build), _major_minor(driver)
    if b is None or d is None:
        return None, f"the driver's CUDA version is unknown (nvidia-smi said {driver!r})"
    if b[0] >= 11:
        if d[0] < b[0]:
            return False, (f"the driver supports CUDA {driver}, older than the build's major "
                           f"release {b[0]} (CUDA minor-version compatibility needs a driver of "
                           f"CUDA {b[0]}.x or later)")
        if d < b:
            return True, (f"the driver supports CUDA {driver}: the build's CUDA {build} runs on "
                          f"it by minor-version compatibility (kernels that need PTX JIT of a "
                          f"newer CUDA can still fail)")
        return True, f"the driver supports CUDA {driver}"
    if d < b:
        return False, (f"the driver supports CUDA {driver}, older than the build's {build} "
                       "(before CUDA 11 the driver must support the build's version)")
    return True, f"the driver supports CUDA {driver}"


def _visibility(env: Mapping[str, str], names: Sequence[str], count: int,
                uuids: Sequence[str]) -> tuple[int, str]:
    """Devices left after each variable of ``names`` that is set (each filters the last)."""
    left, said = count, []
    for name in names:
        value = env.get(name)
        if value is None:
            continue
        left, why = visible_devices(value, left, uuids if left == count else ())
        said.append(f"{name}={value!r}" + (f": {why}" if why else ""))
    return left, "; ".join(said)


def cuda_available(torch: Mapping[str, Any], gpu: Mapping[str, Any], env: Mapping[str, str]
                   ) -> tuple[bool, str]:
    """``(torch.cuda.is_available(), why)`` for the build ``torch``, the GPUs ``gpu`` and the
    child's environment ``env``."""
    built, facts = _read(_Torch, torch), _read(_Gpu, gpu)
    label = f"torch {built.version}"
    cuda, hip = built.cuda, built.hip
    if not cuda and not hip:
        return False, f"{label} is built without CUDA or ROCm: torch.version.cuda is None"
    if hip:
        count = int(_read(_Amd, facts.amd).count or 0)
        if not count:
            return False, (f"{label} is built for ROCm (HIP {hip}), and neither amd-smi nor "
                           "rocm-smi reported an AMD GPU")
        names: Sequence[str] = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
        if "HIP_VISIBLE_DEVICES" not in env:
            names = ("ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
        left, how = _visibility(env, names, count, ())
        if not left:
            return False, f"{label} is built for ROCm, {count} AMD GPU(s), none visible: {how}"
        return True, (f"{label} is built for ROCm (HIP {hip}); {left} of {count} AMD GPU(s) "
                      "visible" + (f" ({how})" if how else ""))
    if not facts.available:
        return False, (f"{label} is built with CUDA {cuda}, but no NVIDIA GPU is usable: "
                       f"{facts.reason or 'nvidia-smi listed none'}")
    # a device the driver lists without its device node here (``usable`` false) is not seen
    devices = [d for d in (_read(_Device, d) for d in facts.devices or []
                           if isinstance(d, dict)) if d.usable is not False]
    count = int(facts.count or len(devices))
    uuids = [str(d.uuid) for d in devices if d.uuid]
    left, how = _visibility(env, ("CUDA_VISIBLE_DEVICES",), count, uuids)
    if not left:
        return False, f"{label} is built with CUDA {cuda}; {count} GPU(s), none visible: {how}"
    ok, driver = driver_supports(str(cuda), str(facts.cuda_version or ""))
    if ok is None and facts.source and not facts.cuda_version:
        driver = (f"the driver's CUDA version is unknown: the GPUs were read from "
                  f"{facts.source} because {facts.nvidia_smi_error or 'nvidia-smi failed'}"
                  f", and {facts.cuda_version_from or 'only nvidia-smi says it'}")
    elif facts.cuda_version_from:
        driver += f" ({facts.cuda_version_from})"
    driver = f"driver {facts.driver_version or '?'}: {driver}"
    if ok is False:
        return False, f"{label} is built with CUDA {cuda}; {driver}"
    seen = f"{left} of {count} GPU(s) visible" + (f" ({how})" if how else "")
    return True, f"{label} is built with CUDA {cuda}; {seen}; {driver}"


def intel_gpus(root: str) -> int:
    """Render nodes of Intel GPUs (PCI vendor ``0x8086``) under ``/sys/class/drm``."""
    return sum(1 for name in listdir(root, "/sys/class/drm") if name.startswith("renderD")
               and read(root, f"/sys/class/drm/{name}/device/vendor") == "0x8086")


def xpu_available(torch: Mapping[str, Any], root: str = "/") -> tuple[bool, str]:
    """``(torch.xpu.is_available(), why)``: built with XPU, and an Intel GPU in ``root``."""
    # deferred: runsnap.capturing.collectors.torchconfig, ~12 ms measured under load; only xpu_available()
    # needs it
    from runsnap.capturing.collectors.torchconfig import switch

    build = _read(_Torch, torch)
    label = f"torch {build.version}"
    xpu = build.xpu
    if not xpu and not switch((build.config or {}).get("USE_XPU", "")):
        return False, f"{label} is built without XPU: torch.version.xpu is None"
    found = intel_gpus(root)
    built = f"{label} is built with XPU" + (f" {xpu}" if xpu else "")
    if not found:
        return False, f"{built}, but /sys/class/drm has no Intel GPU render node"
    return True, (f"{built}; {found} Intel GPU render node(s) in /sys/class/drm; the Level Zero "
                  "driver is not checked")


def infer(sections: Mapping[str, Any], env: Mapping[str, str], root: str = "/"
          ) -> dict[str, Any]:
    """The part to merge into ``[packages]``: ``builds.torch`` availability facts (nothing
    when torch is not installed for the child)."""
    builds = (sections.get("packages") or {}).get("builds") or {}
    torch = builds.get("torch")
    if not isinstance(torch, dict) or not torch.get("version"):
        return {"errors": []}
    gpu = (sections.get("system") or {}).get("gpu") or {}
    cuda, cuda_why = cuda_available(torch, gpu, env)
    xpu, xpu_why = xpu_available(torch, root)
    return {"builds": {"torch": {"cuda_available": cuda, "cuda_available_reason": cuda_why,
                                 "xpu_available": xpu, "xpu_available_reason": xpu_why}},
            "errors": []}


def collect(ctx: CaptureContext, sections: Mapping[str, Any]) -> dict[str, Any]:
    """The availability facts for the capture ``ctx`` from its ``sections`` so far."""
    return infer(sections, ctx.env)
