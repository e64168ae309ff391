"""The module -> distribution index of a ``site-packages`` folder is kept between captures
(:mod:`runsnap.tracing.distindex`) and gives the same answers as reading the metadata."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import packaging
import pluggy
import pytest

from runsnap.tracing import distindex, merge


def _dist_info(module: object) -> Path:
    """The real ``*.dist-info`` folder of the distribution that installed ``module``."""
    top = Path(str(getattr(module, "__file__", ""))).parent
    name = top.name.replace("-", "_")
    found = sorted(top.parent.glob(f"{name}-*.dist-info"))
    assert found, f"no dist-info for {name} beside {top}"
    return found[0]


def _folder(tmp_path: Path, *modules: object) -> Path:
    """A site-packages folder holding the real metadata of the distributions of ``modules``."""
    folder = tmp_path / "site-packages"
    folder.mkdir(exist_ok=True)
    for module in modules:
        meta = _dist_info(module)
        shutil.copytree(meta, folder / meta.name)
    return folder


def test_index_is_kept_and_read_back_the_same(tmp_path: Path) -> None:
    folder = _folder(tmp_path, packaging, pluggy)
    expected = merge._read_folder(str(folder))
    assert expected["packaging"][0] == "packaging" and expected["pluggy"][0] == "pluggy"

    built = merge._Dists({})
    assert built.lookup(str(folder), "pluggy") == expected["pluggy"]
    cache = Path(os.environ["RUNSNAP_CACHE_DIR"]) / "distindex"
    kept = list(cache.iterdir())
    assert len(kept) == 1 and "pluggy\tpluggy\t" in kept[0].read_text()

    again = merge._Dists({})
    assert again._index(str(folder)) == expected
    assert distindex.load(str(folder), str(distindex.stamp(str(folder)))) == expected


def test_an_install_in_the_folder_is_seen(tmp_path: Path) -> None:
    folder = _folder(tmp_path, packaging)
    assert merge._Dists({}).lookup(str(folder), "pluggy") is None
    meta = _dist_info(pluggy)
    shutil.copytree(meta, folder / meta.name)  # a new distribution: the folder changed
    name, _, version = meta.name.removesuffix(".dist-info").partition("-")
    assert merge._Dists({}).lookup(str(folder), "pluggy") == (name, version)


def test_a_damaged_cache_file_is_not_trusted(tmp_path: Path) -> None:
    folder = _folder(tmp_path, pluggy)
    expected = merge._read_folder(str(folder))
    merge._Dists({}).lookup(str(folder), "pluggy")
    (kept,) = (Path(os.environ["RUNSNAP_CACHE_DIR"]) / "distindex").iterdir()
    kept.write_text(kept.read_text().replace("\tpluggy\t", "\tpluggy\tbad\t"))
    assert merge._Dists({})._index(str(folder)) == expected


def test_no_cache_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNSNAP_NO_CACHE", "1")
    folder = _folder(tmp_path, pluggy)
    assert merge._Dists({})._index(str(folder)) == merge._read_folder(str(folder))
    assert not (Path(os.environ["RUNSNAP_CACHE_DIR"]) / "distindex").exists()


def test_probe_names_still_win_over_the_folders_spelling(tmp_path: Path) -> None:
    folder = _folder(tmp_path, pluggy)
    dists = {"distributions": {"Pluggy": {"location": str(folder), "version": "9.9"}}}
    for _ in range(2):  # built, then from the cache
        assert merge._Dists(dists).lookup(str(folder), "pluggy") == ("Pluggy", "9.9")
