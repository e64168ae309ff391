"""An independent leak corpus: fresh values of 180 documented token formats of about 150
providers (tests/secrets/formats.py: generated from each provider's documented prefix,
alphabet, length and checksum, never from runsnap's rules), planted in every place a capture
reads, under secret-like and neutral names, and 1,900 non-secrets that must stay visible.

Real ``runsnap capture -- CHILD`` processes run; every byte runsnap wrote or printed (the
snapshots, the ``--log`` file, its own stdout and stderr, ``show``, ``diff`` in three formats,
``report``, ``scrub``) is searched for each planted value and every 12-character piece of its
random part. The formats are split in a ``tune`` and a held-out ``held`` half (a marker in the
data), reported separately, as are places and provider families.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from runsnap.snapshot import load
from tests.conftest import git
from tests.secrets.formats import FORMATS, UNDER_SECRET_NAME_ONLY, generate_masked
from tests.secrets.nonsecrets import nonsecrets

RNG = random.Random(int.from_bytes(os.urandom(8), "big"))
FAMILY = {f[0]: f[1] for f in FORMATS}
HALF = {f[0]: f[2] for f in FORMATS}

#: Places each format's values go to, in turn (three places a format, a fresh value each).
PLACES = ("env secret name", "env neutral name", "json in env", "argv --opt=VALUE",
          "argv --opt VALUE", "argv positional", "argv secret option", "diff neutral",
          "diff secret name", "stdout", "stderr", "traceback message", "config.json",
          "runtime", "diff comment")
SECRET_SUFFIXES = ("_TOKEN", "_API_KEY", "_SECRET", "_PASSWORD", "_CREDENTIALS", "_AUTH_TOKEN")


class Plant:
    """One planted secret: its format, place, value and which characters are random."""

    def __init__(self, fid: str, place: str) -> None:
        spec = next(f[3] for f in FORMATS if f[0] == fid)
        self.fid, self.place = fid, place
        self.value, self.mask = generate_masked(spec, RNG)

    def pieces(self) -> set[str]:
        """The value's 12-character windows holding at least one random character (a window of
        a format's literal prefix only is public text)."""
        v, m = self.value, self.mask
        if len(v) <= 12:
            return {v}
        return {v[i:i + 12] for i in range(len(v) - 11)
                if any(m[i:i + 12]) and "\n" not in v[i:i + 12]}


def _runsnap(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "runsnap", *args], env=env, cwd=cwd,
                          capture_output=True, timeout=300)


def _plants() -> list[Plant]:
    plants: list[Plant] = []
    cycle = 0
    for fid, _, _, spec, _ in FORMATS:
        if fid in UNDER_SECRET_NAME_ONLY:
            plants.append(Plant(fid, "env secret name"))
            continue
        if spec == "{pem}":
            plants += [Plant(fid, p) for p in ("env neutral name", "argv positional", "stdout",
                                               "argv --opt VALUE")]
            continue
        for _ in range(3):
            plants.append(Plant(fid, PLACES[cycle % len(PLACES)]))
            cycle += 1
    # the places that hold a few: the label, a package's direct_url, a frame's source line
    simple = [f[0] for f in FORMATS if f[3] not in ("{pem}",) and f[0] not in UNDER_SECRET_NAME_ONLY
              and "https://" not in f[3] and " " not in f[3]]
    plants += [Plant(RNG.choice(simple), "label") for _ in range(2)]
    plants += [Plant(RNG.choice(simple), "direct_url") for _ in range(3)]
    plants += [Plant(RNG.choice(simple), "traceback source line")]
    return plants


def _py(value: str) -> str:
    return repr(value)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("corpus")
    plants = _plants()
    by_place: dict[str, list[Plant]] = {}
    for p in plants:
        by_place.setdefault(p.place, []).append(p)
    visible = nonsecrets(RNG)
    env_visible: dict[str, str] = {}
    for _, name, value in visible:
        env_visible.setdefault(name, value)

    # ---- a work tree with an uncommitted diff
    work = tmp / "proj"
    work.mkdir()
    git(work, "init", "-q")
    (work / "settings.py").write_text("DEBUG = True\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "first")
    lines = ["DEBUG = True"]
    for i, p in enumerate(by_place.get("diff neutral", [])):
        lines.append(f"value_{i} = {_py(p.value)}")
    for i, p in enumerate(by_place.get("diff secret name", [])):
        lines.append(f"SERVICE_{i}{SECRET_SUFFIXES[i % len(SECRET_SUFFIXES)]} = {_py(p.value)}")
    lines += [f"# rotated on Monday: {p.value}" for p in by_place.get("diff comment", [])]
    (work / "settings.py").write_text("\n".join(lines) + "\n")

    # ---- a model whose config.json holds secrets under neutral and secret keys
    model = tmp / "model"
    model.mkdir()
    config: dict[str, Any] = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                              "_name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}
    for i, p in enumerate(by_place.get("config.json", [])):
        if i % 2:
            config.setdefault("remote", {})[f"endpoint_{i}"] = {"credential": p.value}
        else:
            config[f"extra_{i}"] = p.value
    for i, (_, _, value) in enumerate(visible[:60]):
        config[f"visible_{i}"] = value
    (model / "config.json").write_text(json.dumps(config))

    # ---- a package whose direct_url.json carries credentials
    site = tmp / "site"
    dist = site / "leaky-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: leaky\nVersion: 1.0\n")
    du = by_place.get("direct_url", [])
    url = (f"https://ci:{du[0].value}@pkgs.example.com/simple/leaky-1.0.tar.gz"
           f"?token={du[1].value}&note={du[2].value}")
    (dist / "direct_url.json").write_text(json.dumps({"url": url, "archive_info": {}}))

    # ---- the child: prints, warns, sets and reads variables, fails with a traceback
    src = ["import os, sys"]
    src += [f"print('got', {_py(p.value)})" for p in by_place.get("stdout", [])]
    src += [f"print('loaded', {_py(value)})" for _, _, value in visible[:150]]
    src += [f"print('WARNING: retrying with', {_py(p.value)}, file=sys.stderr)"
            for p in by_place.get("stderr", [])]
    for i, p in enumerate(by_place.get("runtime", [])):
        src.append(f"os.environ['RT_SETTING_{i}'] = {_py(p.value)}")
        src.append(f"os.environ.get('RT_SETTING_{i}')")
    src.append("sys.stdout.flush()")
    message = " ".join(p.value for p in by_place.get("traceback message", []))
    src.append(f"MESSAGE = {_py(message)}")
    (line_secret,) = by_place["traceback source line"]
    src.append("def fail():")
    src.append(f"    raise RuntimeError(MESSAGE + {_py(' ')} + {_py(line_secret.value)})  # retry")
    src.append("fail()")
    child = tmp / "child.py"
    child.write_text("\n".join(src) + "\n")

    # ---- the environment
    home = tmp / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("RUNSNAP_", "GIT_", "PYTHON"))}
    base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1",
                RUNSNAP_KEY_FILE=str(home / "fingerprint.key"),
                RUNSNAP_CACHE_DIR=str(home / "cache"))
    env = dict(base)
    env.update(env_visible)
    for i, p in enumerate(by_place.get("env secret name", [])):
        env[f"{p.fid.upper().replace('-', '_')}{SECRET_SUFFIXES[i % len(SECRET_SUFFIXES)]}"] = p.value
    for i, p in enumerate(by_place.get("env neutral name", [])):
        env[f"SETTING_{i:03d}"] = p.value
    blob: dict[str, Any] = {"service": {"region": "us-east-1", "retries": 3}}
    for i, p in enumerate(by_place.get("json in env", [])):
        blob.setdefault("items", []).append({"name": f"item-{i}", "value": p.value})
    env["APP_SETTINGS_JSON"] = json.dumps(blob)
    env["PYTHONPATH"] = str(site)

    # ---- the command line
    argv = [sys.executable, str(child)]
    for i, p in enumerate(by_place.get("argv --opt=VALUE", [])):
        argv.append(f"--opt-{i}={p.value}")
    for i, p in enumerate(by_place.get("argv --opt VALUE", [])):
        argv += [f"--setting-{i}", p.value]
    for p in by_place.get("argv positional", []):
        argv.append(p.value)
    for i, p in enumerate(by_place.get("argv secret option", [])):
        argv += [f"--service-{i}-{('api-key', 'token', 'secret', 'password')[i % 4]}", p.value]
    argv_visible = [v for _, _, v in visible[:40] if v and not v.startswith("-")]
    argv += argv_visible
    labels = by_place["label"]
    label = f"nightly {labels[0].value} and {labels[1].value}"

    snaps = tmp / "snaps"
    log = tmp / "child.log"
    r1 = _runsnap(["capture", "--label", label, "--model", str(model), "--log", str(log),
                   "--dir", str(snaps), "--", *argv], env, work)
    assert r1.returncode == 1, r1.stderr.decode()[-3000:]
    child_run = subprocess.run(argv, env=env, cwd=work, capture_output=True)
    outputs: dict[str, bytes] = {}
    outputs["capture stdout (runsnap's own)"] = r1.stdout.replace(child_run.stdout, b"")
    own_err = r1.stderr
    for line in child_run.stderr.splitlines(keepends=True):
        own_err = own_err.replace(line, b"", 1)
    outputs["capture stderr (runsnap's own)"] = own_err
    # a second capture after a commit, so that diff has two runs to compare
    git(work, "commit", "-qam", "second")
    r2 = _runsnap(["capture", "--label", "second", "--dir", str(snaps), "--no-trace", "--",
                   sys.executable, "-c", "print('ok')"], base, work)
    assert r2.returncode == 0, r2.stderr.decode()[-3000:]
    files = sorted(snaps.glob("*.toml"), key=lambda f: f.stat().st_mtime)
    assert len(files) == 2
    first = load(files[0])
    for args in (["show", str(files[0])], ["report", str(files[0])],
                 *(["diff", "--format", fmt, "--all", str(files[0]), str(files[1])]
                   for fmt in ("text", "markdown", "json")),
                 ["check", str(files[0])]):
        out = _runsnap(args, base, work)
        assert out.returncode in (0, 1), (args, out.stderr.decode()[-2000:])
        outputs[" ".join(args[:1] + args[1:3:2])] = out.stdout + out.stderr
    for f in files:
        out = _runsnap(["scrub", str(f)], base, work)
        assert out.returncode == 0, out.stderr.decode()
        outputs[f"scrub {f.name}"] = out.stdout + out.stderr
    blobs = dict(outputs)
    for path in [*snaps.rglob("*"), log]:
        if path.is_file():
            blobs[f"file {path.name}"] = path.read_bytes()
    return {"plants": plants, "blobs": blobs, "snapshot": first, "visible": visible,
            "env_visible": env_visible, "argv_visible": argv_visible}


def _found_in(blobs: dict[str, bytes], pieces: set[bytes]) -> dict[str, set[bytes]]:
    """Which of ``pieces`` each blob holds, every byte of it searched. The 12-byte pieces (all
    but a few short whole values) are looked up among the blob's 12-byte windows (``piece in
    blob`` exactly when the piece is one of them), a slice at a time so that memory stays
    bounded: one pass a blob instead of one search a piece and blob (about 20,000 pieces)."""
    size = 12
    windowed = {p for p in pieces if len(p) == size}
    others = pieces - windowed
    found: dict[str, set[bytes]] = {}
    for name, blob in blobs.items():
        hits = {p for p in others if p in blob}
        for start in range(0, max(len(blob) - size + 1, 0), 1 << 20):
            part = blob[start:start + (1 << 20) + size - 1]
            hits |= windowed.intersection(part[i:i + size] for i in range(len(part) - size + 1))
        found[name] = hits
    return found


def _report(plants: list[Plant], leaked: set[int], key: Any) -> dict[str, str]:
    total, bad = Counter(key(p) for p in plants), Counter(key(p) for i, p in enumerate(plants)
                                                          if i in leaked)
    return {k: f"{total[k]} planted, {bad[k]} leaked" for k in sorted(total)}


@pytest.mark.slow  # the corpus: real captures, a replay, each output read
def test_no_planted_secret_reaches_anything_runsnap_writes_or_prints(corpus: dict[str, Any]
                                                                    ) -> None:
    plants: list[Plant] = corpus["plants"]
    blobs: dict[str, bytes] = corpus["blobs"]
    assert len(plants) >= 400
    assert len({p.fid for p in plants}) >= 120
    pieces = {i: [piece.encode() for piece in p.pieces()] for i, p in enumerate(plants)}
    found = _found_in(blobs, {raw for raws in pieces.values() for raw in raws})
    leaked: set[int] = set()
    where: list[str] = []
    for i, p in enumerate(plants):
        for raw in pieces[i]:
            hit = next((name for name, blob in blobs.items() if raw in found[name]), None)
            if hit:
                leaked.add(i)
                where.append(f"{p.place} / {p.fid} ({HALF[p.fid]}): {raw.decode()!r} in {hit}")
                break
    print("by place:", json.dumps(_report(plants, leaked, lambda p: p.place), indent=1))
    print("by family:", json.dumps(_report(plants, leaked, lambda p: FAMILY[p.fid]), indent=1))
    print("by half:", json.dumps(_report(plants, leaked, lambda p: HALF[p.fid]), indent=1))
    assert not where, "\n".join(where)


def test_every_place_was_really_planted_and_recorded(corpus: dict[str, Any]) -> None:
    snap = corpus["snapshot"]
    plants: list[Plant] = corpus["plants"]
    assert {p.place for p in plants} >= {*PLACES, "label", "direct_url", "traceback source line"}
    from runsnap.snapshot.runtime import variables

    runtime = variables(snap["runtime"])  # the reads as recorded, whatever the stored form
    rt = [k for k in runtime if k.startswith("RT_SETTING_")]
    shown = {k: runtime[k].get("value") for k in rt
             if "<redacted:" not in str(runtime[k].get("value", ""))}
    assert rt and not shown, shown
    assert snap["outcome"]["traceback"]["type"] == "RuntimeError"
    assert "leaky" in json.dumps(snap["packages"])
    assert any("config" in m for m in snap["models"]["models"].values())
    assert snap["env"]["vars"]["APP_SETTINGS_JSON"].count("<redacted:") >= 5
    assert snap["git"]


def test_no_planted_non_secret_is_hidden(corpus: dict[str, Any]) -> None:
    snap = corpus["snapshot"]
    visible = corpus["visible"]
    assert len(visible) >= 150
    env = snap["env"]["vars"]
    hidden = {k: v for k, v in corpus["env_visible"].items() if env.get(k) != v}
    argv = snap["command"]["argv"]
    hidden.update({f"argv {v}": v for v in corpus["argv_visible"] if v not in argv})
    tail = "\n".join(snap["outcome"]["stdout"]["tail"])
    hidden.update({f"stdout {v}": v for _, _, v in visible[:150] if f"loaded {v}" not in tail})
    (model,) = snap["models"]["models"].values()
    config = model["config"]
    hidden.update({f"config visible_{i}": v for i, (_, _, v) in enumerate(visible[:60])
                   if config.get(f"visible_{i}") != v})
    print(f"non-secrets: {len(corpus['env_visible']) + len(corpus['argv_visible']) + 210} "
          f"planted, {len(hidden)} hidden")
    assert not hidden, hidden
