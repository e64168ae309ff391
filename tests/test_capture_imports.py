"""A capture stays clear of the standard-library modules that cost it the most CPU to import.

runsnap sits in front of every launch, so what ``runsnap capture`` imports is paid on every run
(figures in CHANGELOG.md). The captures here are real ones, in a real repository, in a fresh
interpreter started with ``-S``, so that how runsnap is installed does not count (a setuptools
editable install's finder imports pathlib at start-up; a regular install has none). The source
tree and the folder holding runsnap's dependencies are put on ``sys.path`` by hand.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runsnap
from runsnap.base import digest, paths, pythons
from runsnap.base.timestamps import utc_timestamp
from runsnap.capturing.collect import _uuid4_hex

ROOT = Path(__file__).resolve().parent.parent
DEPENDENCIES = str(Path(psutil.__file__).resolve().parent.parent)

#: What a capture must never import: click (~30 ms, see runsnap/cli/__init__.py), dataclasses (~13 ms,
#: with inspect), uuid (~3 ms, with platform), pathlib (~5 ms), typing (~1-4 ms); nor, untracked,
#: the trackers' package (with shlex), nor importlib (with warnings, ~0.5 ms).
NEVER = ("click", "dataclasses", "inspect", "uuid", "platform", "pathlib", "typing",
         "urllib.parse", "mlflow", "wandb", "runsnap.track", "importlib")
#: Nor, when it runs no child, base64 (~2 ms; runsnap needs it only for undecodable bytes),
#: datetime (~2 ms, with math) and hashlib/hmac (~3 ms: OpenSSL's libcrypto; runsnap.base.digest gives
#: the same digests). With a child, the --log tee hashes with hashlib. Nor tomllib (~8 ms, with
#: typing, datetime, string) unless the project has runsnap settings.
NEVER_WITHOUT_A_CHILD = (*NEVER, "base64", "datetime", "hashlib", "hmac", "tomllib")
NEVER_BEFORE_THE_CHILD = (*NEVER, "hashlib", "hmac", "tomllib")
#: Nor, between the child's end and its outcome written: psutil (~10 ms with base64, glob; the
#: child's memory is read from /proc) and shutil (with bz2, lzma, zlib).
NEVER_WITH_A_CHILD = (*NEVER_BEFORE_THE_CHILD, "psutil", "shutil", "base64", "datetime")

_CAPTURE = """
import sys
root, dependencies, *args = sys.argv[1:]
sys.path[:0] = [root, dependencies]
sys.argv = ["runsnap", "capture", *args]
import os
from runsnap.cli import main
_exit = os._exit  # a capture run as the script leaves through os._exit: report before it

def report():
    sys.stderr.write("\\nimported: %s\\n" % " ".join(sorted(m for m in WATCHED if m in sys.modules)))
    sys.stderr.flush()

os._exit = lambda status: (report(), _exit(status))
try:
    main()
finally:
    report()
"""


def imported_by_capture(repo: Path, out: Path, *args: str, watched: tuple[str, ...],
                        told: str = "") -> list[str]:
    """Which of ``watched`` a ``runsnap capture -o OUT ARGS`` in ``repo`` imported (``told``:
    what its stderr must say besides)."""
    script = f"WATCHED = {watched!r}\n{_CAPTURE}"
    res = subprocess.run(
        [sys.executable, "-S", "-c", script, str(ROOT), DEPENDENCIES, "-o", str(out), *args],
        cwd=repo, capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert told in res.stderr
    assert out.read_text().rstrip().endswith("# end of runsnap snapshot")
    return res.stderr.rstrip().rpartition("imported:")[2].split()


@pytest.mark.parametrize(("args", "never"), [
    (["--no-run"], NEVER_WITHOUT_A_CHILD),
    (["--", sys.executable, "-c", "pass"], NEVER_WITH_A_CHILD),
], ids=["no-run", "run"])
def test_a_capture_imports_none_of_the_costly_modules(
    tmp_path: Path, repo: Path, args: list[str], never: tuple[str, ...]
) -> None:
    assert imported_by_capture(repo, tmp_path / "s.toml", *args, watched=never) == []


def test_the_pre_launch_guard_telling_its_findings_imports_none_of_them(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard runs on every capture of a command and writes each finding wrapped to the
    terminal (runsnap.base.terminal): that costs no dataclasses, inspect or ast either."""
    monkeypatch.setenv("NCCL_DEBUG", "chatty")  # NCCL accepts VERSION, WARN, INFO or TRACE
    args = ["--no-run", "--", sys.executable, "-c", "pass"]
    assert imported_by_capture(repo, tmp_path / "s.toml", *args, told="NCCL_DEBUG='chatty'",
                               watched=(*NEVER_WITHOUT_A_CHILD, "ast", "copy")) == []


def test_a_pyproject_that_only_mentions_runsnap_is_not_parsed(tmp_path: Path, repo: Path) -> None:
    """A dependency on runsnap, a script named runsnap, lint rules naming its packages and the
    words a runsnap table would use: no runsnap table, so tomllib is not even imported."""
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "app"\ndependencies = ["runsnap>=1", "torchmetrics"]\n'
        '[project.scripts]\nrunsnap = "runsnap.cli:main"\n'
        '[tool.importlinter]\nforbidden = ["runsnap.track", "runsnap.redact"]  # strict\n')
    assert imported_by_capture(repo, tmp_path / "s.toml", "--no-run",
                               watched=("tomllib",)) == []
    (repo / "pyproject.toml").write_text('[tool.runsnap.capture]\nredact = ["APP_*"]\n')
    assert imported_by_capture(repo, tmp_path / "t.toml", "--no-run",
                               watched=("tomllib",)) == ["tomllib"]


@pytest.mark.slow
@pytest.mark.parametrize("tracker", ["mlflow", "wandb"])
def test_a_tracked_capture_imports_no_tracker_client(
    tmp_path: Path, repo: Path, tracker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow is spoken to over HTTP, W&B's client runs in a process of its own after the child:
    runsnap's own process imports neither client (both are installed beside it here)."""
    pytest.importorskip(tracker)
    with socket.socket() as s:  # a port where nothing listens: the tracker is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    args = ["--track", tracker, "--track-timeout", "2", "--", sys.executable, "-c", "pass"]
    assert imported_by_capture(repo, tmp_path / "s.toml", *args,
                               watched=("mlflow", "wandb", "click")) == []
    track = runsnap.load(tmp_path / "s.toml").meta["track"]
    assert track["tracker"] == tracker and (track["errors"] != []) == (tracker == "mlflow")


#: What ``runsnap diff A B`` must never import: it is timed against a tomllib parse of the two
#: files (benchmarks/RESULTS.md, "Real scale"), and dataclasses with inspect, ast, dis and
#: tokenize was ~11 ms of its ~110, the fourteen classes it generated as much again.
NEVER_IN_A_DIFF = ("click", "dataclasses", "inspect", "ast", "dis", "tokenize")

_DIFF = """
import sys
root, dependencies, *args = sys.argv[1:]
sys.path[:0] = [root, dependencies]
sys.argv = ["runsnap", "diff", *args]
from runsnap.cli import main
try:
    main()
except SystemExit as exc:
    sys.stderr.write("\\nstatus: %s\\n" % exc.code)
sys.stderr.write("\\nimported: %s\\n" % " ".join(sorted(m for m in WATCHED if m in sys.modules)))
"""


def test_a_diff_of_two_runs_imports_none_of_the_costly_modules(tmp_path: Path, repo: Path) -> None:
    """Two real captures of runs that differ in a variable and in how they ended, compared as
    ``runsnap diff A B`` (no option: click is not needed either)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for name, code in (("a", "pass"), ("b", "import os; raise SystemExit(os.environ['X'])")):
        runsnap.capture([sys.executable, "-c", code], env={**env, "X": name, "N": name * 2},
                        cwd=repo, output=tmp_path / f"{name}.toml")
    script = f"WATCHED = {NEVER_IN_A_DIFF!r}\n{_DIFF}"
    res = subprocess.run(
        [sys.executable, "-S", "-c", script, str(ROOT), DEPENDENCIES,
         str(tmp_path / "a.toml"), str(tmp_path / "b.toml")],
        cwd=repo, capture_output=True, text=True, timeout=120, env=env,
    )
    assert "status: 1" in res.stderr and "X" in res.stdout, res.stderr
    assert res.stderr.rstrip().rpartition("imported:")[2].split() == []


# ----------------------------------------------------------------- what replaced them


_path_parts = st.sampled_from(["", "/", "//", "///", ".", "..", "a", "b.toml", "~", "~root", " ",
                               "x\\y", "é", "\udcff"])


@settings(max_examples=500)
@given(st.lists(_path_parts, max_size=8).map("".join))
def test_path_text_is_what_pathlib_writes(text: str) -> None:
    assert paths.path_str(text) == str(Path(text))
    assert paths.path_str(Path(text)) == str(Path(text))
    try:
        expected = str(Path(text).expanduser())
    except RuntimeError:
        with pytest.raises(RuntimeError):
            paths.expand_user(text)
    else:
        assert paths.expand_user(text) == expected


def test_a_home_that_cannot_be_found_is_an_error_as_with_pathlib() -> None:
    with pytest.raises(RuntimeError):
        Path("~no-such-user-here/x").expanduser()
    with pytest.raises(RuntimeError):
        paths.expand_user("~no-such-user-here/x")


def test_the_snapshot_id_is_still_a_random_uuid4(tmp_path: Path) -> None:
    ids = {_uuid4_hex() for _ in range(2000)}
    assert len(ids) == 2000
    for text in ids:
        u = uuid.UUID(hex=text)
        assert u.version == 4 and u.variant == uuid.RFC_4122 and u.hex == text
    snap = runsnap.capture([], env={"PATH": os.environ["PATH"]}, cwd=tmp_path)
    assert uuid.UUID(hex=snap.id).version == 4 and len(snap.id) == 32


def test_undecodable_bytes_still_round_trip_through_base64(tmp_path: Path) -> None:
    value = b"caf\xe9 \xff".decode("utf-8", "surrogateescape")
    snap = runsnap.capture([], env={"PATH": os.environ["PATH"], "ODD": value, value: "key"},
                           cwd=tmp_path, output=tmp_path / "s.toml")
    assert '"~bytes" = "Y2Fm6SD/"' in (tmp_path / "s.toml").read_text()
    loaded = runsnap.load(tmp_path / "s.toml")
    assert loaded == snap and loaded["env"]["vars"]["ODD"] == value
    assert loaded["env"]["vars"][value] == "key"


_url_pieces = st.sampled_from([*"ab/ %?#:@2fF0;=[]\\", "é", "日", "\udcff", "%2F", "%41", "%e2%82%ac",
                               "%e2%82", "%zz", "%4", "localhost", "[::1]"])


@pytest.mark.slow
@settings(max_examples=1000)
@given(st.lists(_url_pieces, max_size=12).map("".join))
def test_file_urls_give_the_path_urllib_gives(tail: str) -> None:
    """Editable installs' file:// URLs, read without importing urllib.parse (and ipaddress)."""
    from urllib.parse import unquote, urlsplit

    url = "file://" + tail
    try:
        expected = unquote(urlsplit(url).path)
    except ValueError:  # urllib refuses a bracketed host it cannot parse
        return
    assert pythons.file_url_path(url) == expected


@pytest.mark.slow
@settings(max_examples=2000)
@given(st.binary(max_size=200), st.binary(max_size=5000))
def test_digests_are_what_hashlib_and_hmac_give(key: bytes, msg: bytes) -> None:
    assert digest.sha256(msg).hexdigest() == hashlib.sha256(msg).hexdigest()
    assert digest.Hmac(key).hexdigest(msg) == hmac.new(key, msg, hashlib.sha256).hexdigest()


@given(st.floats(min_value=0, max_value=2**33, allow_nan=False, allow_infinity=False)
       | st.integers(0, 2**33).map(lambda s: s + 0.9999995))
def test_captured_at_is_what_datetime_writes(seconds: float) -> None:
    import datetime

    expected = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(
        timespec="milliseconds")
    assert utc_timestamp(seconds) == expected
