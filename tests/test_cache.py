"""The probe, file-hash and scrubbed-text caches: used while what they describe is unchanged,
never after; and never holding a secret."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import runsnap
from runsnap.base import cache
from runsnap.base.probeanswer import checked
from runsnap.redact import FingerprintKey, Policy, Redactor
from tests.collectors.test_packages import write_dist
from tests.conftest import asset, git, make_repo
from tests.interpreters import customised, plain_base, venv_on


@pytest.fixture(scope="module")
def plain_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This suite's base interpreter without any sitecustomize (Debian's python3 has one, and
    runsnap never caches the probe of a customised interpreter)."""
    return plain_base(tmp_path_factory.mktemp("plain-python"))


@pytest.fixture
def env_dir(tmp_path: Path, plain_python: Path) -> Path:
    """A venv on :func:`plain_python`, with torch: an interpreter whose probe is cached."""
    d = tmp_path / "venv"
    py, site = venv_on(plain_python, d)
    assert customised(py) == []  # what the cache tests below stand on
    write_dist(site, "torch", "2.13.0")
    return d


def site_of(env_dir: Path) -> Path:
    return next((env_dir / "lib").glob("python*/site-packages"))


def packages(env_dir: Path, cwd: Path, **extra: str) -> dict:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), **extra}
    return dict(runsnap.capture([str(env_dir / "bin" / "python"), "-c", "pass"], env=env,
                                cwd=cwd)["packages"])


def test_a_second_capture_uses_the_cached_probe(env_dir: Path, tmp_path: Path) -> None:
    first = packages(env_dir, tmp_path)
    second = packages(env_dir, tmp_path)
    assert (first["probe"], second["probe"]) == ("run", "cache")
    assert {k: v for k, v in first.items() if k != "probe"} == \
           {k: v for k, v in second.items() if k != "probe"}


@pytest.mark.parametrize("change", ["install", "uninstall", "upgrade", "pth", "pyvenv"])
def test_any_change_to_the_environment_runs_the_probe_again(
    env_dir: Path, tmp_path: Path, change: str
) -> None:
    site = site_of(env_dir)
    (site / "extra.pth").write_text("/nowhere\n")
    assert packages(env_dir, tmp_path)["probe"] == "run"
    assert packages(env_dir, tmp_path)["probe"] == "cache"
    time.sleep(0.01)  # file times on this filesystem have a fine grain, but not an infinite one
    if change == "install":
        write_dist(site, "sglang", "0.5.23")
    elif change == "uninstall":
        (site / "torch-2.13.0.dist-info" / "METADATA").unlink()
        (site / "torch-2.13.0.dist-info" / "INSTALLER").unlink()
        (site / "torch-2.13.0.dist-info").rmdir()
    elif change == "upgrade":
        os.rename(site / "torch-2.13.0.dist-info", site / "torch-2.14.1.dist-info")
        (site / "torch-2.14.1.dist-info" / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.14.1\n\n")
    elif change == "pth":
        (site / "extra.pth").write_text(f"{tmp_path}\n")  # same name, new content
    else:
        with open(env_dir / "pyvenv.cfg", "a") as fh:
            fh.write("# edited\n")
    after = packages(env_dir, tmp_path)
    assert after["probe"] == "run"
    versions = {n: d["version"] for n, d in after["distributions"].items()}
    expected = {"install": {"torch": "2.13.0", "sglang": "0.5.23"}, "uninstall": {},
                "upgrade": {"torch": "2.14.1"}}.get(change, {"torch": "2.13.0"})
    assert versions == expected


def test_another_pythonpath_is_another_key(env_dir: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    write_dist(extra, "torch", "2.9.1")
    assert packages(env_dir, tmp_path)["probe"] == "run"
    shadowing = packages(env_dir, tmp_path, PYTHONPATH=str(extra))
    assert shadowing["probe"] == "run"
    assert shadowing["distributions"]["torch"]["version"] == "2.9.1"
    assert packages(env_dir, tmp_path, PYTHONPATH=str(extra))["probe"] == "cache"
    write_dist(extra, "vllm", "0.33.0")  # a new install on PYTHONPATH is seen
    assert "vllm" in packages(env_dir, tmp_path, PYTHONPATH=str(extra))["distributions"]


def test_an_interpreter_with_sitecustomize_is_never_cached(env_dir: Path, tmp_path: Path) -> None:
    (site_of(env_dir) / "sitecustomize.py").write_text("import sys\n")
    assert customised(env_dir / "bin" / "python") == [str(site_of(env_dir) / "sitecustomize.py")]
    assert packages(env_dir, tmp_path)["probe"] == "run"
    assert packages(env_dir, tmp_path)["probe"] == "run"


def test_a_venv_on_a_customised_base_is_never_cached(tmp_path: Path) -> None:
    """A base whose standard library holds a ``sitecustomize.py`` (Debian's and Ubuntu's
    python3 ship the apport hook there) customises every venv made from it: none is cached,
    though nothing in the venv itself is customised."""
    base = plain_base(tmp_path / "debian-like", sitecustomize="import sys\nsys.path.append('/x')\n")
    env_dir = tmp_path / "venv"
    py, site = venv_on(base, env_dir)
    write_dist(site, "torch", "2.13.0")
    planted = next((tmp_path / "debian-like").glob("lib*/python*/sitecustomize.py"))
    assert customised(py) == [str(planted)]
    first, second = packages(env_dir, tmp_path), packages(env_dir, tmp_path)
    assert (first["probe"], second["probe"]) == ("run", "run")
    assert first["distributions"]["torch"]["version"] == "2.13.0"
    assert "/x" in first["sys_path"]  # what the customisation did, seen by the probe
    assert not list(Path(str(cache.cache_dir())).glob("probe-*.json"))


def test_caching_can_be_turned_off(env_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RUNSNAP_NO_CACHE", "1")
    assert packages(env_dir, tmp_path)["probe"] == "run"
    assert packages(env_dir, tmp_path)["probe"] == "run"


def test_an_answer_racing_an_install_is_not_kept(env_dir: Path, tmp_path: Path) -> None:
    result = checked({"sys_path": [str(site_of(env_dir))], "prefix": str(env_dir)})
    probe_began = time.time_ns()
    time.sleep(0.01)
    write_dist(site_of(env_dir), "sglang", "0.5.23")  # installed while the probe ran
    cache.store_probe("k" * 32, str(tmp_path), result, started_ns=probe_began)
    assert cache.load_probe("k" * 32, str(tmp_path)) is None
    time.sleep(0.01)
    cache.store_probe("k" * 32, str(tmp_path), result, started_ns=time.time_ns())
    assert cache.load_probe("k" * 32, str(tmp_path)) == result


@pytest.mark.parametrize(("field", "value", "said"), [
    ("modules", ["torch"], "modules is not an object"),
    ("distributions", [{"name": "torch", "version": 2}], "distributions[0].version is not a string"),
    ("nvidia", [{"dir": "/x", "libs": "libcudnn.so"}], "nvidia[0].libs is not an array"),
])
def test_a_cached_answer_the_probe_does_not_give_is_probed_again(
    env_dir: Path, tmp_path: Path, field: str, value: Any, said: str
) -> None:
    """The cache is a file on the user's disk: an entry that anything changed into an answer
    the probe never gives (here with its stamps still true) is probed again, where it once
    stopped the capture with an internal error before the launch."""
    first = packages(env_dir, tmp_path)
    (path,) = Path(str(cache.cache_dir())).glob("probe-*.json")
    entry = json.loads(path.read_text())
    entry["result"][field] = value
    path.write_text(json.dumps(entry))
    with pytest.raises(ValueError, match=said.replace("[", r"\[").replace("]", r"\]")):
        checked(entry["result"])
    again = packages(env_dir, tmp_path)
    assert again["probe"] == "run"
    assert again["distributions"] == first["distributions"]


def test_side_file_hashes_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    import shutil

    model = tmp_path / "model"
    shutil.copytree(asset("models", "kimi-k2.5-target"), model)
    tok = model / "tokenizer_config.json"

    def side_hash() -> str:
        snap = runsnap.capture(["serve", str(model)], env={"PATH": os.environ["PATH"]},
                               cwd=tmp_path)
        return snap["models"]["models"]["argv[1]"]["files_sha256"]["tokenizer_config.json"]

    first = side_hash()
    store = Path(os.environ["RUNSNAP_CACHE_DIR"]) / f"hashes-v{cache.FORMAT}.json"
    entries = json.loads(store.read_text())
    assert entries[str(tok)][4] == first
    # The cache is what answers while the file is unchanged:
    entries[str(tok)][4] = "cached-answer"
    store.write_text(json.dumps(entries))
    assert side_hash() == "cached-answer"
    # Same size, modification time set back: the change time still tells, and it is hashed again.
    st = tok.stat()
    text = tok.read_text()
    tok.write_text(text.replace("false", "fals3"))
    os.utime(tok, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert tok.stat().st_size == st.st_size
    import hashlib

    assert side_hash() == hashlib.sha256(tok.read_bytes()).hexdigest()


def test_a_script_standing_in_for_python_is_never_cached(env_dir: Path, tmp_path: Path) -> None:
    """pyenv's shims pick the interpreter from PYENV_VERSION and .python-version at run time."""
    shim = tmp_path / "python3"
    shim.write_text(f'#!/bin/sh\nexec {env_dir / "bin" / "python"} "$@"\n')
    shim.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for _ in range(2):
        pk = runsnap.capture([str(shim), "-c", "pass"], env=env, cwd=tmp_path)["packages"]
        assert pk["probe"] == "run"
        assert set(pk["distributions"]) == {"torch"}


TOKEN = "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123456789"
PASSWORD = "Zq8vLm3nRt5wXy7Q4"


def _large_text() -> str:
    filler = "".join(f"+    value_{i} = compute({i}, scale=0.5)\n" for i in range(3000))
    return (f"+echo {PASSWORD}\n{filler}+API_KEY={PASSWORD}\n+url = 'https://bob:{PASSWORD}"
            f"@db.example.com/app'\n{filler}+token {TOKEN}\n")


def _redactor(memo: cache.ScrubbedTexts, seed: int = 0, **policy: tuple[str, ...]) -> Redactor:
    return Redactor(FingerprintKey(bytes([seed]) * 32, "test"), Policy(**policy), memo)


def test_a_large_text_scrubbed_again_comes_from_the_cache_with_its_secrets(tmp_path: Path) -> None:
    memo = cache.ScrubbedTexts({"RUNSNAP_CACHE_DIR": str(tmp_path)})
    text = _large_text()
    assert len(text) >= Redactor.MEMO_MIN
    first = _redactor(memo)
    out = first.scrub(text, "git.repos.app.diff")
    assert TOKEN not in out and PASSWORD not in out
    (entry,) = tmp_path.glob("scrubbed-*.txt")
    assert TOKEN not in entry.read_text() and PASSWORD not in entry.read_text()

    again = _redactor(memo)
    assert again.scrub(text, "git.repos.app.diff") == out
    assert (again.known.values, again.redacted) == (first.known.values, first.redacted)
    # what the cached secrets were remembered for: hidden where they reappear later
    assert PASSWORD not in again.scrub(f"the child printed {PASSWORD}", "outcome.stdout")

    # the answer really is the cached one ...
    head = entry.read_text().partition("\n")[0]
    entry.write_text(head + "\nFROM THE CACHE")
    assert _redactor(memo).scrub(text, "x") == "FROM THE CACHE"
    # ... and only for the same key, policy and secrets already known
    assert _redactor(memo, seed=1).scrub(text, "x").startswith("+echo <redacted:")
    assert _redactor(memo, redact=("VALUE_*",)).scrub(text, "x") != "FROM THE CACHE"
    knows = _redactor(memo)
    knows.fingerprint("compute(7, scale")
    assert knows.scrub(text, "x") != "FROM THE CACHE"
    assert _redactor(memo).scrub(text + "+one more line\n", "x") != "FROM THE CACHE"


def test_only_the_newest_scrubbed_texts_are_kept_and_none_when_caching_is_off(
    tmp_path: Path
) -> None:
    memo = cache.ScrubbedTexts({"RUNSNAP_CACHE_DIR": str(tmp_path)})
    for i in range(cache.ScrubbedTexts.KEEP + 3):
        memo.put(f"{i:040d}", f"text {i}", [])
        time.sleep(0.002)
    kept = sorted(p.name for p in tmp_path.glob("scrubbed-*.txt"))
    assert len(kept) == cache.ScrubbedTexts.KEEP and kept[0] == "scrubbed-" + f"{3:040d}.txt"
    memo.put("s" * 40, "a lone surrogate \ud800 from a JSON escape", [])  # not kept, no error
    assert memo.get("s" * 40) is None
    off = cache.ScrubbedTexts({"RUNSNAP_NO_CACHE": "1", "RUNSNAP_CACHE_DIR": str(tmp_path / "o")})
    off.put("k" * 40, "text", [])
    assert off.get("k" * 40) is None and not (tmp_path / "o").exists()
    assert _redactor(off).scrub(_large_text(), "x").startswith("+echo <redacted:")


def _cleaning(tmp_path: Path, seed: int = 0, **policy: tuple[str, ...]
              ) -> tuple[Redactor, list[str]]:
    """A redactor remembering clean texts in ``tmp_path``, and the texts its rules searched."""
    red = Redactor(FingerprintKey(bytes([seed]) * 32, "test"), Policy(**policy), None,
                   cache.CleanTexts({"RUNSNAP_CACHE_DIR": str(tmp_path)}))
    return red, _record_calls(red, "_scrub", lambda text: [text])


def _record_calls(red: Redactor, method: str, what: Callable[[Any], list[str]]) -> list[str]:
    """The list ``what(argument)`` of every call of ``red``'s ``method`` is added to, from now."""
    seen: list[str] = []
    real = getattr(red, method)

    def spy(arg: Any) -> Any:
        seen.extend(what(arg))
        return real(arg)

    setattr(red, method, spy)
    return seen


def test_texts_the_rules_left_as_they_were_are_not_searched_again(tmp_path: Path) -> None:
    texts = ["numpy 2.1.0", "/opt/venv/lib/python3.11/site-packages/numpy",
             f"curl -H 'Authorization: Bearer {TOKEN}' https://api.example.com",
             "x86_64 Linux 6.1.0", f"db=postgres://app:{PASSWORD}@db.example.com/app"]
    first, searched = _cleaning(tmp_path)
    outs = [first.scrub(t, "x") for t in texts]
    assert searched == texts and TOKEN not in repr(outs) and PASSWORD not in repr(outs)
    assert first.is_secret("MY_AUTH", "/etc/app/auth.conf") is False
    first.save_clean()
    (kept,) = tmp_path.glob("clean-*")
    data = kept.read_bytes()
    assert not any(t.encode() in data or t[:12].encode() in data for t in texts)  # digests only

    again, searched = _cleaning(tmp_path)
    assert [again.scrub(t, "x") for t in texts] == outs
    assert searched == [texts[2], texts[4]]  # only those holding a secret, every time
    asked: list[str] = []
    import runsnap.redact.text as text_module

    real = text_module.looks_like_credential
    text_module.looks_like_credential = lambda v: asked.append(v) or real(v)  # type: ignore[assignment]
    try:
        assert again.is_secret("MY_AUTH", "/etc/app/auth.conf") is False
        assert again.is_secret("MY_AUTH", "Zq8vLm3nRt5wXy7Q4pK2") is True  # never remembered
    finally:
        text_module.looks_like_credential = real
    assert asked == ["Zq8vLm3nRt5wXy7Q4pK2"]

    # another fingerprint key or policy is another search: nothing is taken from the file
    for seed, policy in ((1, {}), (0, {"redact": ("NUMPY*",)}), (0, {"keep": ("DB",)})):
        other, searched = _cleaning(tmp_path, seed, **policy)
        [other.scrub(t, "x") for t in texts]
        assert searched == texts


def test_captures_under_two_keys_in_turn_each_keep_their_clean_texts(tmp_path: Path) -> None:
    """Two projects with their own policies (or two runsnap versions) capturing in turn: each
    finds its own texts again, instead of the other's file and a search of every text."""
    texts = ["numpy 2.1.0", "x86_64 Linux 6.1.0", f"curl -H 'Authorization: Bearer {TOKEN}'"]
    for policy in ({}, {"redact": ("APP_*",)}):
        red, searched = _cleaning(tmp_path, **policy)
        [red.scrub(t, "x") for t in texts]
        red.save_clean()
        assert searched == texts
    for policy in ({}, {"redact": ("APP_*",)}, {}):
        red, searched = _cleaning(tmp_path, **policy)
        [red.scrub(t, "x") for t in texts]
        red.save_clean()
        assert searched == [texts[2]]  # only the one holding a secret
    for seed in range(cache.CleanTexts.KEEP + 2):  # the newest KEEP keys are kept
        red, _ = _cleaning(tmp_path, seed + 10)
        red.scrub(f"text {seed}", "x")
        red.save_clean()
        time.sleep(0.002)
    assert len(list(tmp_path.glob("clean-*.bin"))) == cache.CleanTexts.KEEP
    red, searched = _cleaning(tmp_path, cache.CleanTexts.KEEP + 11)
    red.scrub(f"text {cache.CleanTexts.KEEP + 1}", "x")
    assert searched == []


def test_no_clean_text_is_remembered_when_caching_is_off(tmp_path: Path) -> None:
    store = cache.CleanTexts({"RUNSNAP_NO_CACHE": "1", "RUNSNAP_CACHE_DIR": str(tmp_path / "o")})
    red = Redactor(FingerprintKey(b"k" * 32, "test"), Policy(), None, store)
    assert red.scrub("numpy 2.1.0", "x") == "numpy 2.1.0"
    red.save_clean()
    assert not (tmp_path / "o").exists()


def test_two_captures_of_one_work_tree_record_the_same_scrubbed_diff(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app", {"app.py": "print('hello')\n"})
    (repo / "app.py").write_text(_large_text().replace("+", ""))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    first = runsnap.capture([], env=env, cwd=repo)["git"]["repos"]["app"]
    assert list(Path(os.environ["RUNSNAP_CACHE_DIR"]).glob("scrubbed-*.txt"))
    second = runsnap.capture([], env=env, cwd=repo)["git"]["repos"]["app"]
    assert first == second and first["diff_bytes"] >= Redactor.MEMO_MIN
    assert TOKEN not in repr(second) and PASSWORD not in repr(second)
    assert git(repo, "status", "--porcelain") == " M app.py\n"


def _sections_walked(tmp_path: Path, sections: dict[str, dict], seed: int = 0
                     ) -> tuple[Redactor, dict, list[str]]:
    """A capture's first pass over ``sections`` (each remembered when clean) and its second,
    by a redactor remembering clean texts in ``tmp_path``; the sections walked value by value."""
    red, _ = _cleaning(tmp_path, seed)
    walked = _record_calls(red, "_find", list)
    found = {}
    for name, section in sections.items():
        found.update(red.find({name: section}, remember=True))
    out = red.finish(found)
    red.save_clean()
    return red, out, walked


def test_a_section_that_held_nothing_is_not_walked_again(tmp_path: Path) -> None:
    """A host's facts and its packages, met again unchanged at every capture: found clean by
    their digest. A section that held a secret is walked every time, and a secret found in
    another section is still replaced wherever it stands in a remembered one (the order-free
    second pass)."""
    system = {"errors": [], "host": "node-1", "cpu": {"model": "EPYC", "count": 2},
              "hint": f"see {PASSWORD}"}  # the password appears here under a neutral word
    packages = {"errors": [], "distributions": {"numpy": {"version": "2.1.0"}}, "paths": ["/a"]}
    env = {"errors": [], "vars": {"DB_PASSWORD": PASSWORD, "HOME": "/root"}}
    sections = {"system": system, "packages": packages, "env": env}
    first, out1, walked = _sections_walked(tmp_path, sections)
    assert walked == ["system", "packages", "env"]
    assert PASSWORD not in repr(out1) and PASSWORD not in repr(first.redacted)

    again, out2, walked = _sections_walked(tmp_path, sections)
    assert walked == ["env"]  # system and packages held nothing the rules find
    assert out2 == out1 and again.redacted == first.redacted
    assert PASSWORD not in repr(out2)  # found in [env], replaced in [system] too
    assert out2["packages"] == packages and out2["packages"]["paths"] is not packages["paths"]

    changed = {**sections, "packages": {**packages, "paths": ["/a", "/b"]}}
    _, out3, walked = _sections_walked(tmp_path, changed)
    assert walked == ["packages", "env"] and out3["packages"]["paths"] == ["/a", "/b"]
    _, _, walked = _sections_walked(tmp_path, sections, seed=1)  # another key: afresh
    assert walked == ["system", "packages", "env"]
    listed = {**sections, "packages": {**packages, "paths": ("/a",)}}  # a tuple is not a list
    _, _, walked = _sections_walked(tmp_path, listed)
    assert walked == ["packages", "env"]
