"""List the distributions installed for the interpreter that runs this file.

runsnap runs this source with ``python -c`` *in the child's interpreter*, with the child's
environment and working directory, so that ``sys.path`` is the one the child will see. It must
stay standard-library only and run on every Python runsnap supports (3.8 and later, since the
child's interpreter can be older than runsnap's own): it never imports runsnap or its dependencies.

It prints one JSON object on standard output::

    {"executable", "version", "implementation", "prefix", "base_prefix", "sys_path",
     "user_site", "customized",
     "distributions": [{"name", "version", "location", "metadata_dir", "direct_url_json"?}],
     "shadowed": [...same fields, for a name already found earlier on sys.path...],
     "modules": {name: {"dir", "files": {file: text}, "lists": {subdir: [names]}}},
     "nvidia": [{"dir", "libs": [names]}],
     "errors": [...]}

``direct_url_json`` is true when the dist-info holds a ``direct_url.json``; runsnap reads those
few files itself (``runsnap.capturing.context``), so the probe never needs a JSON parser.

Speed matters (this runs before every launch, and its start-up is most of its cost): it imports
nothing beyond ``os`` and ``sys``, which every interpreter has loaded already (``json`` would
import ``re`` and ``enum``; the C string encoder ``_json`` is used directly when present),
and each distribution's metadata is read once, only its header lines up to ``Version``.

``modules`` holds what the engines' build facts are read from without importing them (importing
torch costs seconds): for each package of :data:`BUILD_SPEC` found on ``sys.path`` (the copy the
child would import), a few small files as text (``torch/version.py``, ``macros.h``) and a few
folder listings (``torch/lib``); ``nvidia`` lists the shared libraries the ``nvidia-*`` wheels ship
(``nvidia/nccl/lib``), in ``sys.path`` order. runsnap parses them (``collectors/builds.py``).
"""

import os
import sys

try:
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - an interpreter without CPython's accelerator
    from json import dumps as _quote


def _normalize(name):
    """PEP 503 name normalisation (``re.sub(r"[-_.]+", "-", name).lower()``) without ``re``."""
    out = name.lower().replace("_", "-").replace(".", "-")
    while "--" in out:
        out = out.replace("--", "-")
    return out


def _read_header(path):
    """Name and Version from a METADATA / PKG-INFO file, reading only as far as needed."""
    name = version = None
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            if not line.strip():
                break
            if name is None and line.startswith("Name:"):
                name = line[5:].strip()
            elif version is None and line.startswith("Version:"):
                version = line[8:].strip()
            if name is not None and version is not None:
                break
    return name, version


def _from_dir_name(entry):
    """Name and version from ``name-version.dist-info`` when the metadata file is unreadable."""
    stem = entry.rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    return name, version.split("-py")[0] or None


def _json(value):
    """JSON text for plain data (str, bool, None, int, list, dict); ASCII only."""
    if isinstance(value, str):
        return _quote(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(_quote(str(k)) + ":" + _json(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return _quote(str(value))


def _user_site():
    """The user site directory site.py looked at (even when it does not exist yet)."""
    site = sys.modules.get("site")
    if site is None or not getattr(site, "ENABLE_USER_SITE", False):
        return None
    return getattr(site, "USER_SITE", None)


#: Package -> (small files read as text, folders listed: "." keeps only native libraries).
#: torch's ``macros.h`` holds the build settings ``torch.__config__.show()`` prints, and its
#: ``TorchConfig.cmake`` the configured ``USE_XNNPACK``-style switches (a few KiB each).
BUILD_SPEC = {
    "torch": (("version.py", "include/caffe2/core/macros.h",
               "share/cmake/Torch/TorchConfig.cmake"), ("lib",)),
    "vllm": (("_version.py", "version.py"), (".",)),
    "sglang": (("version.py",), ()),
    "sgl_kernel": (("version.py",), (".",)),
    "flashinfer": (("_build_meta.py", "version.py"), ()),
    "xformers": (("version.py", "cpp_lib.json"), (".",)),
    "triton": ((), ("backends",)),
    "flash_attn": ((), (".",)),
    "deep_gemm": ((), (".",)),
}
_MAX_FILE = 16384
_MAX_NAMES = 400


def _native(name):
    """A native library, or a folder of them per GPU architecture (``sm90``)."""
    if name.startswith("sm") and name[2:].lstrip("_")[:1].isdigit():
        return True
    return ".so" in name or name.endswith((".pyd", ".dylib"))


def _listing(path, native_only):
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    if native_only:
        names = [n for n in names if _native(n)]
    return names[:_MAX_NAMES]


def _builds(locations, errors):
    """Build files of the packages in BUILD_SPEC, and the nvidia-* wheels' libraries."""
    modules = {}
    nvidia = []
    for location in locations:
        for name, (files, lists) in BUILD_SPEC.items():
            if name in modules:
                continue
            pkg = os.path.join(location, name)
            if not os.path.isfile(os.path.join(pkg, "__init__.py")):
                continue
            found = {"dir": pkg, "files": {}, "lists": {}}
            for fname in files:
                try:
                    with open(os.path.join(pkg, fname), encoding="utf-8",
                              errors="replace") as fh:
                        found["files"][fname] = fh.read(_MAX_FILE)
                except (FileNotFoundError, NotADirectoryError):  # noqa: PERF203
                    continue
                except OSError as exc:
                    errors.append("%s: %s" % (os.path.join(pkg, fname), exc.strerror or exc))
            for sub in lists:
                names = _listing(os.path.join(pkg, sub), sub == ".")
                if names is not None:
                    found["lists"][sub] = names
            modules[name] = found
        base = os.path.join(location, "nvidia")
        for sub in _listing(base, False) or ():
            libs = _listing(os.path.join(base, sub, "lib"), True)
            if libs:
                nvidia.append({"dir": os.path.join(base, sub, "lib"), "libs": libs})
    return modules, nvidia


def main():
    errors = []
    found = {}
    dists = []
    shadowed = []
    seen_dirs = set()
    locations = []
    for entry_dir in sys.path:
        location = os.path.abspath(entry_dir or os.getcwd())
        if location in seen_dirs:
            continue
        seen_dirs.add(location)
        try:
            names = sorted(os.listdir(location))
        except (NotADirectoryError, FileNotFoundError):
            continue
        except OSError as exc:
            errors.append("%s: %s" % (location, exc.strerror or exc))
            continue
        locations.append(location)
        for entry in names:
            if entry.endswith(".dist-info"):
                meta_dir = os.path.join(location, entry)
                meta_file = os.path.join(meta_dir, "METADATA")
            elif entry.endswith(".egg-info"):
                meta_dir = os.path.join(location, entry)
                meta_file = meta_dir
                if os.path.isdir(meta_dir):
                    meta_file = os.path.join(meta_dir, "PKG-INFO")
            else:
                continue
            try:
                name, version = _read_header(meta_file)
            except OSError as exc:
                name, version = _from_dir_name(entry)
                errors.append("%s: %s" % (meta_file, exc.strerror or exc))
            if not name:
                name, version = _from_dir_name(entry)
            record = {
                "name": name,
                "version": version or "",
                "location": location,
                "metadata_dir": entry,
            }
            if entry.endswith(".dist-info") and os.path.exists(
                os.path.join(meta_dir, "direct_url.json")
            ):
                record["direct_url_json"] = True
            key = _normalize(name)
            if key in found:
                record["shadowed_by"] = found[key]
                shadowed.append(record)
            else:
                found[key] = "%s %s" % (location, entry)
                dists.append(record)
    dists.sort(key=lambda d: _normalize(d["name"]))
    modules, nvidia = _builds(locations, errors)
    impl = sys.implementation.name
    out = {
        "executable": sys.executable,
        "version": sys.version.split()[0],
        "implementation": {"cpython": "CPython", "pypy": "PyPy"}.get(impl, impl),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "sys_path": sys.path,
        "user_site": _user_site(),
        "customized": any(m in sys.modules for m in ("sitecustomize", "usercustomize")),
        "distributions": dists,
        "shadowed": shadowed,
        "modules": modules,
        "nvidia": nvidia,
        "errors": errors,
    }
    sys.stdout.write(_json(out))
    sys.stdout.flush()


main()
