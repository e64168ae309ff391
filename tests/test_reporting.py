"""``runsnap report``: a bug report ready to paste, checked with a real CommonMark/GFM parser
(markdown-it-py with GFM tables), within GitHub's size limit, scrubbed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

import runsnap
import runsnap.checks.rules
from tests.conftest import asset, make_repo, run_runsnap

TOKEN = "hf_" + "Q7fLr2mXc9PzK4sVbN8tY3wJ6hD1gA5eU0"
DEMO = [sys.executable, str(asset("demo", "launch_server.py")), "--model-path",
        str(asset("models", "kimi-k2.5-target")), "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft"))]


def runsnap_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    return run_runsnap(*args, cwd=cwd, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> tuple[Path, Path, Path]:
    """The EAGLE-3 incident captured for real in a git repository with uncommitted work (a
    secret among the changes): good (flag set) and bad (flag missing)."""
    work = tmp_path_factory.mktemp("incident")
    key = work / "fingerprint.key"
    repo = make_repo(work / "proj", {"serve.sh": "echo serve\n"})
    (repo / "serve.sh").write_text(f"export HF_TOKEN={TOKEN}\n" + "echo serve # tuned\n" * 3000)
    # TF_CLI_CONFIG_FILE is Terraform's (not TensorFlow's); JAX_PLATFORMS belongs to a stack
    # this run does not have: neither is a variable that matters here
    env = {"HF_TOKEN": TOKEN, "RUNSNAP_KEY_FILE": str(key), "NCCL_IB_HCA": "mlx5_0",
           "TF_CLI_CONFIG_FILE": "/root/.terraformrc", "JAX_PLATFORMS": "cpu"}
    good = runsnap_cli("capture", "--label", "good", "-o", str(work / "good.toml"), "--", *DEMO,
                       cwd=repo, env={**env, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})
    bad = runsnap_cli("capture", "--label", "bad", "-o", str(work / "bad.toml"), "--", *DEMO,
                      cwd=repo, env=env)
    assert (good.returncode, bad.returncode) == (0, 1), good.stderr + bad.stderr
    return work / "good.toml", work / "bad.toml", key


def parse(md: str):
    return MarkdownIt("commonmark").enable("table").parse(md)


def plain(inline) -> str:
    """What an inline token reads as: its text and code spans, escapes resolved."""
    return "".join(c.content for c in inline.children or [])


def headings(tokens) -> list[str]:
    return [plain(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"]


def tables(tokens) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    out: list[list[list[str]]] = []
    row: list[str] = []
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            out.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            inline = tokens[i + 1]
            row.append(plain(inline) if inline.type == "inline" else "")
        elif t.type == "tr_close":
            out[-1].append(row)
    return out


def test_report_of_two_runs(incident):
    good, bad, key = incident
    done = runsnap_cli("report", str(good), str(bad), env={"RUNSNAP_KEY_FILE": str(key)})
    assert done.returncode == 0, done.stderr
    md = done.stdout
    tokens = parse(md)
    heads = headings(tokens)
    # the heading a maintainer would write: program, exit, error type and first clause
    assert heads[0] == ("launch_server.py exited with status 1: ValueError: Warning: Target "
                        "model's context_length (262144) is greater than the derived "
                        "context_length (131072)"), heads[0]
    assert heads[1:4] == ["Command", "Outcome", "Why A and B differ (runsnap diff A B)"]
    assert heads[4].startswith("runsnap diff: ") and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" \
        in heads[4]
    assert heads[5:] == ["Environment", "Variables that matter", "Git",
                         "Models (the config fields that matter)", "All packages",
                         "Outcome of A (the reference)"]
    fences = [t.content for t in tokens if t.type == "fence"]
    assert any(f.startswith("ValueError: Warning: Target model's context_length (262144)") and
               f.rstrip().endswith("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1") for f in fences)
    assert any("in _derive_context_length" in f and "raise ValueError(" in f for f in fences)
    cells = {row[0]: row for tbl in tables(tokens) for row in tbl}
    assert cells["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"][1] == "(unset)"
    assert cells["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"][2].startswith(
        "read, not set (the program took its default) at demo_sglang/srt/environ.py")
    assert cells["NCCL_IB_HCA"][1:] == ["mlx5_0", "set, not seen read"]
    assert "TF_CLI_CONFIG_FILE" not in cells and "JAX_PLATFORMS" not in cells
    contexts = {row[1] for tbl in tables(tokens) for row in tbl
                if row[0].endswith("max_position_embeddings")}
    assert contexts == {"262144", "131072"}  # the target's and the draft's
    assert "Python" in cells and "GPU" in cells and cells["GPU"][1].startswith("none (")
    # secrets: the token appears nowhere, its fingerprint does, and the report says how
    assert TOKEN not in md and "<redacted:hmac-sha256:" in md
    assert "Replaced here: env.vars.HF_TOKEN" in md.replace("\\", "")
    # the 57 KiB uncommitted diff does not fit beside the rest: it alone goes, and it says so
    assert len(md) <= 65536
    details = [t.content for t in tokens if t.type == "html_block"]
    assert not any(d.startswith("<details><summary>Uncommitted diff of") for d in details)
    assert any(d.startswith("<details><summary>") and "distributions" in d for d in details)
    assert "Trimmed to fit 65,536 characters: git (shortened; in full: `runsnap show SNAPSHOT " \
           "--section git`)." in md.replace("\\", "")


def test_budget_trims_least_important_first(incident, tmp_path):
    good, bad, key = incident
    env = {"RUNSNAP_KEY_FILE": str(key)}
    full = runsnap_cli("report", str(bad), env=env).stdout
    small = runsnap_cli("report", str(bad), "--max-chars", "6000", "--attach",
                        str(tmp_path / "att"), env=env)
    assert small.returncode == 0, small.stderr
    md = small.stdout
    assert len(full) > 6000 >= len(md)
    text = md.replace("\\", "")
    # the 57 KiB uncommitted diff goes first; whatever else was cut is named with where to get it
    assert "Trimmed to fit 6,000 characters: " in text
    assert "git (shortened; in full: `runsnap show SNAPSHOT --section git`)" in text
    heads = headings(parse(md))
    assert heads[1:3] == ["Command", "Outcome"]  # the essentials stay
    files = sorted(p.name for p in (tmp_path / "att").iterdir())
    assert len(files) == 1 and files[0].startswith("runsnap-bad-") and files[0].endswith(".txt")
    assert f"Attach {files[0]} to the issue" in text
    attached = runsnap.load(tmp_path / "att" / files[0])
    assert attached.id == runsnap.load(bad).id and TOKEN not in (tmp_path / "att" / files[0]
                                                                  ).read_text()


def test_text_and_json(incident):
    good, bad, key = incident
    env = {"RUNSNAP_KEY_FILE": str(key)}
    text = runsnap_cli("report", str(bad), "--format", "text", env=env).stdout
    assert "<details>" not in text and "|---" not in text
    assert "\nOutcome\n-------\nExited with status 1" in text
    doc = json.loads(runsnap_cli("report", str(bad), "--format", "json", env=env).stdout)
    assert doc["format"] == "runsnap-report/1"
    assert [p["key"] for p in doc["parts"]] == ["command", "outcome", "facts", "variables", "git",
                                                "models", "packages"]
    assert TOKEN not in json.dumps(doc)


def test_hostile_values_stay_inside_their_blocks(tmp_path):
    """A value that tries to close a code block, a details block or inject HTML stays text."""
    work = tmp_path / "w"
    work.mkdir()
    script = ("import sys; print('boom ``` </details> <script>x</script>\\x1b[2J', file=sys.stderr); "
              "raise SystemExit('``` </details><img src=x onerror=alert(1)>')")
    done = runsnap_cli("capture", "-o", str(tmp_path / "s.toml"), "--", sys.executable, "-c",
                       script, cwd=work, env={"NCCL_ALGO": "</details><b>|x|</b>"})
    assert done.returncode == 1
    md = runsnap_cli("report", str(tmp_path / "s.toml")).stdout
    tokens = parse(md)
    html = [t.content for t in tokens if t.type == "html_block"] + [
        c.content for t in tokens if t.type == "inline" for c in t.children or []
        if c.type == "html_inline"]
    assert all(h.startswith(("<details><summary>", "</details>")) for h in html), html
    assert "\x1b" not in md
    cells = {row[0]: row for tbl in tables(tokens) for row in tbl}
    assert cells["NCCL_ALGO"][1] == "</details><b>|x|</b>"


def test_bad_input_is_one_line(tmp_path, incident):
    good, bad, _ = incident
    missing = runsnap_cli("report", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    three = runsnap_cli("report", str(good), str(bad), str(bad))
    assert three.returncode == 2 and "report takes one snapshot, or two" in three.stderr
    tiny = runsnap_cli("report", str(bad), "--max-chars", "100")
    assert tiny.returncode == 2 and "Traceback" not in tiny.stderr


def test_report_carries_the_check_findings(incident):
    """The findings ``runsnap check`` makes of the snapshot are in its report: here the real
    Kimi-K2.5 target and its EAGLE-3 draft disagree on the context length."""
    _, bad, key = incident
    found = runsnap.checks.rules.check(runsnap.load(bad)).findings
    assert any(f.kind == "draft-target" for f in found)
    done = runsnap_cli("report", str(bad), env={"RUNSNAP_KEY_FILE": str(key)})
    assert done.returncode == 0, done.stderr
    md = done.stdout.replace("\\", "")
    assert "Findings of `runsnap check`:" in md
    for f in found:
        assert f.message.replace("\\", "") in md


def test_heading_fits_a_github_title_in_whole_words(tmp_path):
    code = "raise RuntimeError('NCCL error in: ' + ' '.join(['communicator'] * 60))"
    snap = tmp_path / "long.toml"
    done = runsnap_cli("capture", "-o", str(snap), "--", sys.executable, "-u", "-c", code,
                       cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    md = runsnap_cli("report", str(snap), cwd=tmp_path).stdout
    title = headings(parse(md))[0]
    assert len(title) <= 256 and title.endswith("…"), title
    assert title.startswith("python3 -c exited with status 1: RuntimeError: NCCL error in: "
                            ) or title.startswith(f"{Path(sys.executable).name} -c exited "
                                                  "with status 1: RuntimeError: NCCL error in:")
    assert title[:-1].split()[-1] == "communicator", title
