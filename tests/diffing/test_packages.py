"""[packages]: added / removed / upgraded / downgraded (PEP 440) and locations that moved.

The child's interpreter is real; the distributions are real ``.dist-info`` folders on a
``PYTHONPATH`` the probe sees, exactly as an installer would leave them."""

from __future__ import annotations

import json
from pathlib import Path

from runsnap.diffing import compare

from .conftest import counted


def site(root: Path, dists: dict[str, str], editable: dict[str, str] | None = None) -> str:
    root.mkdir(parents=True, exist_ok=True)
    for name, version in dists.items():
        meta = root / f"{name.replace('-', '_')}-{version}.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
        if editable and name in editable:
            (meta / "direct_url.json").write_text(json.dumps(
                {"url": f"file://{editable[name]}", "dir_info": {"editable": True}}))
    return str(root)


def test_versions_compared_by_pep440(cap, tmp_path):
    a = cap({"PYTHONPATH": site(tmp_path / "a", {
        "torch": "2.9.0", "sglang": "0.5.23", "leftpad": "1.0", "numpy": "2.0.0rc1",
        "zlib-tools": "1.0"})})
    b = cap({"PYTHONPATH": site(tmp_path / "b", {
        "torch": "2.10.0", "sglang": "0.5.9", "rightpad": "0.1", "numpy": "2.0.0",
        "zlib-tools": "1.0"})})
    report = compare(a, b)
    pk = [(k, c) for s, k, c in counted(report) if s == "packages"]
    assert pk == [
        ("sglang", "downgraded"),
        ("numpy", "upgraded"),
        ("torch", "upgraded"),
        ("leftpad", "removed"),
        ("rightpad", "added"),
        ("zlib-tools.location", "changed"),
    ]
    by_key = {d.key: d for d in report.counted}
    # sys.path moved with PYTHONPATH's entries: shown under that variable
    assert [r.key for r in by_key["PYTHONPATH"].related] == ["sys.path"]
    assert (by_key["sglang"].a, by_key["sglang"].b) == ("0.5.23", "0.5.9")
    assert by_key["sglang"].evidence == (f"location: {tmp_path / 'a'} -> {tmp_path / 'b'}",)
    assert by_key["sglang"].score == 82 and by_key["torch"].score == 81
    # The same version from another folder: the location moved.
    assert by_key["zlib-tools.location"].b == str(tmp_path / "b")
    assert by_key["zlib-tools.location"].score == 66


def test_editable_source_moved_with_equal_version(cap, tmp_path):
    path = tmp_path / "lib"
    a = cap({"PYTHONPATH": site(path / "a", {"mylib": "0.1"}, {"mylib": "/src/one"})})
    b = cap({"PYTHONPATH": site(path / "b", {"mylib": "0.1"}, {"mylib": "/src/two"})})
    report = compare(a, b)
    pk = [(k, c) for s, k, c in counted(report) if s == "packages"]
    assert pk == [("mylib.location", "changed"), ("mylib.source", "changed")]
    src = next(d for d in report.counted if d.key == "mylib.source")
    assert (src.a, src.b) == ("/src/one", "/src/two")
    assert "installed from elsewhere" in src.reason


def test_identical_environments_no_package_difference(cap, tmp_path):
    sp = site(tmp_path / "s", {"torch": "2.9.0"})
    assert counted(compare(cap({"PYTHONPATH": sp}), cap({"PYTHONPATH": sp}))) == []
