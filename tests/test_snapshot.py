"""The snapshot model: lossless codec, validated loading, atomic saving."""

from __future__ import annotations

import copy
import math
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runsnap
from runsnap.errors import SnapshotError
from runsnap.snapshot import SCHEMA_VERSION, Snapshot, decode, dumps, encode, load, loads

META = {"id": "abc", "captured_at": "2026-11-29T16:00:00.000+00:00", "label": "t"}

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)
# Environment values as os.environ holds them: undecodable bytes arrive as lone surrogates.
env_text = st.binary(max_size=40).map(lambda b: b.replace(b"\0", b"").decode("utf-8", "surrogateescape"))
env_names = env_text.filter(lambda s: s and "=" not in s)


def roundtrip(value: Any) -> Any:
    snap = Snapshot(meta=META, sections={"x": {"v": value}})
    return loads(dumps(snap)).sections["x"]["v"]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(json_values)
def test_any_json_config_round_trips(value: Any) -> None:
    assert roundtrip(value) == value


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(env_names, env_text, max_size=20))
def test_any_environment_round_trips(env: dict[str, str]) -> None:
    snap = Snapshot(meta=META, sections={"env": {"vars": env, "errors": []}})
    assert loads(dumps(snap)) == snap


# Text as it appears in diffs and configs: quotes, backslashes, CRLF, tabs, control characters.
diff_text = st.text(alphabet=st.sampled_from("ab '\"\\\r\n\t\x00\x1b\x7fé"), max_size=40)


@settings(max_examples=300, deadline=None)
@given(diff_text)
def test_any_multiline_text_round_trips_through_toml(value: str) -> None:
    assert roundtrip(value) == value
    assert roundtrip({value: value}) == {value: value}


def test_crlf_line_ends_survive() -> None:
    diff = "--- a/w.bat\r\n+++ b/w.bat\r\n-echo 1\r\n+echo 2\r\n"
    assert roundtrip(diff) == diff


def test_plain_multiline_text_is_written_as_a_literal_string() -> None:
    diff = 'diff --git a/x b/x\n+print("hi")  # \\d\n'
    text = dumps(Snapshot(meta=META, sections={"git": {"diff": diff}}))
    assert f"diff = '''\n{diff}'''\n" in text  # no escapes: the text as it is
    for awkward in ("ends with a quote\n'", "has ''' inside\n", "carriage\r\n", "bell\x07\n"):
        assert roundtrip(awkward) == awkward  # TOML allows no literal string for these:
        assert 'v = """' in dumps(Snapshot(meta=META, sections={"x": {"v": awkward}}))


def test_the_writer_lays_out_tables_like_tomli_w() -> None:
    tomli_w = pytest.importorskip("tomli_w")
    doc = {"schema": 1, "meta": {"id": "x", "captured_at": "t", "list": [1, 2], "empty": {}},
           "git": {"repos": {"r": {"changed": [{"path": "a", "status": ".M"}],
                                   "untracked": [{"path": "p" * 120, "size": 1}],
                                   "remotes": {"origin": "u"}, "errors": []}}},
           "k": {"weird key": "x", "~~t": True, "f": 1.5, "n": -(2**63), "nested": [[1], []]}}
    from runsnap.snapshot.writer import table_chunks as _table_chunks

    assert "".join(_table_chunks(doc, "")) == tomli_w.dumps(doc, multiline_strings=True)


def test_undecodable_bytes_are_stored_as_the_original_bytes() -> None:
    value = b"caf\xe9".decode("utf-8", "surrogateescape")
    assert encode(value) == {"~bytes": "Y2Fm6Q=="}
    assert decode(encode(value)).encode("utf-8", "surrogateescape") == b"caf\xe9"


def test_marker_keys_in_real_data_are_escaped() -> None:
    tricky = {"~null": True, "~bytes": "x", "~~a": 1, "~b64:zz": None, "": [None, 2**70]}
    assert roundtrip(tricky) == tricky


def test_floats_survive_including_special_values() -> None:
    assert roundtrip([0.1, -0.0, 1e308, math.inf]) == [0.1, -0.0, 1e308, math.inf]
    assert math.isnan(roundtrip(math.nan))


def test_sections_are_written_in_a_stable_order() -> None:
    snap = Snapshot(meta=META, sections={"zzz": {}, "system": {}, "command": {}, "env": {}})
    text = dumps(snap)
    order = [text.index(f"[{n}]") for n in ("meta", "command", "env", "system", "zzz")]
    assert order == sorted(order)


def test_save_then_load_gives_an_equal_snapshot(tmp_path: Path) -> None:
    snap = Snapshot(meta=META, sections={"command": {"argv": ["a"], "x": None}})
    saved = snap.save(tmp_path / "deep" / "s.toml")
    assert saved.path == tmp_path / "deep" / "s.toml"
    assert saved.path_text == str(tmp_path / "deep" / "s.toml") and snap.path_text is None
    assert runsnap.load(saved.path) == snap


def test_a_snapshot_is_a_frozen_value_whose_path_is_not_its_identity(tmp_path: Path) -> None:
    snap = Snapshot(meta=META, sections={"a": {"n": 1}})
    saved = snap.save(tmp_path / "s.toml")
    assert saved == snap and saved.path == tmp_path / "s.toml"
    assert snap.replace(sections={}) == Snapshot(meta=META, sections={})
    assert snap.replace(sections={}).path is None and saved.replace(sections={}).path == saved.path
    assert snap.replace(schema=0) != snap and snap != (META, {"a": {"n": 1}}, 1)
    assert repr(snap) == f"Snapshot(meta={META!r}, sections={{'a': {{'n': 1}}}}, schema=2, path=None)"
    with pytest.raises(AttributeError):
        snap.meta = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        snap.replace(label="x")
    assert copy.copy(saved).path == saved.path and pickle.loads(pickle.dumps(saved)) == saved


def test_atomic_save_leaves_no_temporary_files_and_replaces_whole(tmp_path: Path) -> None:
    target = tmp_path / "s.toml"
    Snapshot(meta=META, sections={"a": {"n": 1}}).save(target)
    Snapshot(meta=META, sections={"a": {"n": 2}}).save(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]
    assert load(target).sections["a"]["n"] == 2


def test_failed_save_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "s.toml"
    Snapshot(meta=META, sections={"a": {"n": 1}}).save(target)
    with pytest.raises(TypeError):
        Snapshot(meta=META, sections={"a": {"n": object()}}).save(target)
    assert load(target).sections["a"]["n"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"", "empty file"),
        (b"this is = = not toml", "not a runsnap snapshot"),
        (b"schema = 1\nthis is = = not toml", "not valid TOML"),
        (b'title = "a config file"\n', "not a runsnap snapshot"),
        (b"schema = 1\n[meta]\nlabel = 'x'\n# end of runsnap snapshot\n", "lacks id"),
        (b"\xff\xfe\x00binary", "not a runsnap snapshot"),
        (b"schema = 1\n\xff\xfe\x00binary", "not a text file"),
        (f"schema = {SCHEMA_VERSION + 1}\n[meta]\nid='a'\ncaptured_at='t'\n".encode(), "newer"),
        (b"schema = 1\n[meta]\nid='a'\ncaptured_at='t'\n[env]\nvars = 'x'\n[command]\nargv = [\n",
         "is the file truncated"),
    ],
)
def test_bad_files_raise_one_clear_error(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "snap.toml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SnapshotError, match=message):
        load(path)


def test_a_directory_is_not_a_snapshot(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="is a directory"):
        load(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(SnapshotError, match="cannot read"):
        load(path)


def test_a_truncated_real_snapshot_is_rejected(tmp_path: Path) -> None:
    snap = runsnap.capture(["true"], env={"PATH": os.environ["PATH"], "A": "1"}, cwd=tmp_path)
    text = dumps(snap)
    path = tmp_path / "cut.toml"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(SnapshotError):
        load(path)


def test_a_snapshot_cut_at_a_line_end_is_still_caught(tmp_path: Path) -> None:
    snap = runsnap.capture(["true"], env={"PATH": os.environ["PATH"], "A": "1"}, cwd=tmp_path)
    lines = dumps(snap).splitlines(keepends=True)
    for cut in (len(lines) - 2, len(lines) // 2, 8):
        path = tmp_path / f"cut{cut}.toml"
        path.write_text("".join(lines[:cut]))
        with pytest.raises(SnapshotError, match="truncated"):
            load(path)


def test_crlf_text_survives_multiline_strings() -> None:
    for text in ("a\r\nb", "\r\n", "x\r\r\ny\n", "only\rcr\n", "diff --git a/w.bat\r\n+echo\r\n"):
        assert roundtrip(text) == text


def test_an_unwritable_target_is_a_runsnap_error_not_an_oserror(tmp_path: Path) -> None:
    from runsnap.errors import CaptureError

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CaptureError, match=r"^cannot write .*/file/s\.toml: "):
        Snapshot(meta=META, sections={}).save(blocker / "s.toml")
