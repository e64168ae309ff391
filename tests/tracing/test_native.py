"""Native reads: the getenv interposer with a real shared library, and the fallback without it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from runsnap import tracing
from runsnap.tracing import native
from tests.tracing.conftest import child_env

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


@needs_cc
def test_reads_from_a_real_shared_library_are_recorded(traced, tmp_path: Path) -> None:
    src = tmp_path / "knob.c"
    src.write_text('#include <stdlib.h>\n'
                   'const char *nccl_knob(void) { return getenv("NCCL_TEST_KNOB"); }\n'
                   'const char *other(void) { return getenv("NCCL_UNSET_KNOB"); }\n')
    lib = tmp_path / "libknob.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    record, rt, out = traced(f"""
        import ctypes
        lib = ctypes.CDLL({str(lib)!r})
        lib.nccl_knob.restype = ctypes.c_char_p
        lib.other.restype = ctypes.c_char_p
        print(lib.nccl_knob(), lib.other(), lib.nccl_knob())
    """, env=child_env(NCCL_TEST_KNOB="Ring"))
    assert out == "b'Ring' None b'Ring'\n" and record.exit_status == 0
    assert rt["native"] == "observed"
    knob = rt["env"]["NCCL_TEST_KNOB"]
    assert knob["native"] is True and knob["python"] is False and knob["set"] is True
    assert knob["native_reads"] == 2
    assert rt["env"]["NCCL_UNSET_KNOB"]["set"] is False
    assert tracing.read_status(rt, "NCCL_TEST_KNOB")[0] == "read"
    assert tracing.read_status(rt, "NCCL_NEVER_READ") == (
        "unread", "not read by the program (native reads observed)")


def test_without_a_compiler_native_reads_are_not_observed(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "getenv_trace.c"
    copy.write_text(Path(native.SOURCE).read_text() + "\n/* another build */\n")
    monkeypatch.setattr(native, "SOURCE", str(copy))
    lib, why = native.interposer({"PATH": str(tmp_path), "RUNSNAP_CACHE_DIR": str(tmp_path)})
    assert lib is None
    assert why == "no C compiler (cc, gcc or clang) to build the getenv interposer"


def test_python_trace_never_calls_a_native_family_unread(traced, monkeypatch) -> None:
    monkeypatch.setenv("RUNSNAP_NO_NATIVE", "1")
    _record, rt, _out = traced("import os\nos.environ.get('HF_HOME')\n",
                               env=child_env(NCCL_ALGO="Ring", OTHER_KNOB="1"))
    assert rt["native"] == "not observed: RUNSNAP_NO_NATIVE is set"
    kind, words = tracing.read_status(rt, "NCCL_ALGO")
    assert kind == "native-maybe"
    assert words == "not read from Python (native libraries may read it: NCCL (libnccl.so))"
    assert tracing.read_status(rt, "OTHER_KNOB")[0] == "unread"
    assert tracing.read_status(rt, "HF_HOME")[0] == "read"
    assert tracing.read_status({"traced": False}, "HF_HOME")[0] == "untraced"


@needs_cc
def test_the_interposer_is_built_in_the_cache_never_beside_the_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file written into the install outlives ``pip uninstall``, and its folder then shadows
    an editable install of runsnap (``pip install .``, a traced run, ``pip install -e .``)."""
    install = tmp_path / "site-packages" / "runsnap" / "probe" / "native"
    install.mkdir(parents=True)
    copy = install / "getenv_trace.c"
    copy.write_text(Path(native.SOURCE).read_text() + "\n/* a build of its own */\n")
    monkeypatch.setattr(native, "SOURCE", str(copy))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "RUNSNAP_CACHE_DIR": str(tmp_path / "cache")}
    lib, why = native.interposer(env)
    assert why == "" and lib is not None
    assert Path(lib).parent == tmp_path / "cache" / "native" and Path(lib).is_file()
    assert sorted(p.name for p in install.iterdir()) == ["getenv_trace.c"]
    # one a packager ships beside the install is taken as it is
    shipped = install / "build" / Path(lib).name
    shipped.parent.mkdir()
    shipped.write_bytes(Path(lib).read_bytes())
    assert native.interposer(env) == (str(shipped), "")


@needs_cc
def test_a_build_begun_early_is_taken_over_by_the_same_environment_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``runsnap capture -- COMMAND`` begins the build first thing (prebuild); the launch's
    interposer() takes that answer when it asks for the same environment, and otherwise looks
    again itself (here: another cache folder, where it is built anew)."""
    copy = tmp_path / "getenv_trace.c"
    copy.write_text(Path(native.SOURCE).read_text() + "\n/* built early */\n")
    monkeypatch.setattr(native, "SOURCE", str(copy))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "RUNSNAP_CACHE_DIR": str(tmp_path / "a")}
    native.prebuild(env)
    lib, why = native.interposer(env)
    assert why == "" and Path(lib or "").parent == tmp_path / "a" / "native"
    native.prebuild(env)
    other = {**env, "RUNSNAP_CACHE_DIR": str(tmp_path / "b")}
    lib, why = native.interposer(other)
    assert why == "" and Path(lib or "").parent == tmp_path / "b" / "native"
    assert native.interposer(other) == (lib, "")  # nothing left over from the early build
