"""List the distributions installed for the interpreter that runs this file.

runsnap runs this source with ``python -c`` *in the child's interpreter*, with the child's
environment and working directory, so that ``sys.path`` is the one the child will see. It must
stay standard-library only and run on every Python runsnap supports (3.8 and later, since the
child's interpreter can be older than runsnap's own): it never imports runsnap or its dependencies.

It prints one JSON object on standard output::

    {"executable", "version", "implementation", "prefix", "base_prefix", "sys_path",
     "distributions": [{"name", "version", "location", "metadata_dir", "direct_url"?,
                        "editable"?, "source"?}],
     "shadowed": [...same fields, for a name already found earlier on sys.path...],
     "errors": [...]}

Speed matters (this runs before every launch): each distribution's metadata is read once, and
only its header lines up to ``Version``.
"""

import json
import os
import platform
import re
import sys

_NORMALIZE = re.compile(r"[-_.]+")


def _normalize(name):
    return _NORMALIZE.sub("-", name).lower()


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


def _direct_url(meta_dir):
    path = os.path.join(meta_dir, "direct_url.json")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError:
        return None
    except ValueError as exc:
        return {"error": "direct_url.json is not JSON: %s" % exc}
    out = {"url": data.get("url", "")}
    dir_info = data.get("dir_info") or {}
    if dir_info.get("editable"):
        out["editable"] = True
    vcs = data.get("vcs_info")
    if vcs:
        out["vcs"] = vcs.get("vcs", "")
        out["commit_id"] = vcs.get("commit_id", "")
        if vcs.get("requested_revision"):
            out["requested_revision"] = vcs["requested_revision"]
    return out


def _source_path(url):
    if not url.startswith("file://"):
        return None
    try:
        from urllib.parse import unquote, urlsplit
    except ImportError:  # pragma: no cover
        return None
    return unquote(urlsplit(url).path)


def main():
    errors = []
    found = {}
    dists = []
    shadowed = []
    seen_dirs = set()
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
            if entry.endswith(".dist-info"):
                direct = _direct_url(meta_dir)
                if direct:
                    record["direct_url"] = direct
                    if direct.get("editable"):
                        record["editable"] = True
                    source = _source_path(direct.get("url", ""))
                    if source:
                        record["source"] = source
            key = _normalize(name)
            if key in found:
                record["shadowed_by"] = found[key]
                shadowed.append(record)
            else:
                found[key] = "%s %s" % (location, entry)
                dists.append(record)
    dists.sort(key=lambda d: _normalize(d["name"]))
    out = {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "sys_path": sys.path,
        "distributions": dists,
        "shadowed": shadowed,
        "errors": errors,
    }
    data = json.dumps(out, ensure_ascii=True, default=str)
    sys.stdout.write(data)
    sys.stdout.flush()


main()
