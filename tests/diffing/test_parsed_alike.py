"""An option that differs on the two command lines but that both runs' parsers set to the same
value (``[runtime] parsed_options``): ``--node-rank 0`` where 0 is the default, ``--lr 1e-3``
against ``--lr 0.001``, a ``store_true`` flag already true, another spelling of one option.
Real traced launches of a real argparse program."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare, differences
from runsnap.diffing.confidence import LIKELY
from runsnap.diffing.sections.command import parsed_alike

from .conftest import write_script

PROGRAM = '''
import argparse, pathlib, sys
p = argparse.ArgumentParser()
p.add_argument("--node-rank", "--rank", type=int, default=0)
p.add_argument("--pipeline-parallel-size", type=int, default=1)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--fast", action="store_true", default=True)
p.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("out"))
class Seed(argparse.Action):  # does more than set its dest: what it does is not recorded
    def __call__(self, parser, namespace, values, option_string=None):
        print("seeded", values)
p.add_argument("--seed", action=Seed)
a = p.parse_args()
print("parallel", a.pipeline_parallel_size, "lr", a.lr)
if a.pipeline_parallel_size > 1:
    sys.exit("RuntimeError: rendezvous timed out after 600 s: 1 of 2 nodes joined")
'''


@pytest.fixture
def serve(tmp_path: Path, launched):
    script = write_script(tmp_path, "serve.py", PROGRAM)
    return lambda *args: launched({}, [sys.executable, str(script), *args])


def _alike(a, b):
    return parsed_alike(a, b, differences(a, b))


def test_the_incident_node_rank_0_is_the_default(serve) -> None:
    good = serve()
    bad = serve("--pipeline-parallel-size", "2", "--node-rank", "0")
    assert _alike(good, bad) == {"--node-rank": "B's --node-rank 0 is what A parsed too (its "
                                                "default): the program sees no difference"}
    assert _alike(bad, good) == {"--node-rank": "A's --node-rank 0 is what B parsed too (its "
                                                "default): the program sees no difference"}


def test_another_spelling_of_the_same_value(serve) -> None:
    a = serve("--lr", "0.001", "--rank", "0")
    b = serve("--lr", "1e-3", "--node-rank", "0", "--fast")
    got = _alike(a, b)
    assert got["--lr"] == ("--lr 0.001 in A and 1e-3 in B parse to the same value (lr = 0.001): "
                           "the program sees no difference")
    assert got["--node-rank"] == ("B's --node-rank 0 is what A parsed too (given as --rank): "
                                  "the program sees no difference")
    assert got["--fast"] == ("B's --fast is what A parsed too (its default): the program sees "
                             "no difference")
    assert got["--rank"].startswith("A's --rank 0 is what B parsed too (given as --node-rank)")


def test_values_that_differ_or_cannot_be_compared_stay(serve) -> None:
    a = serve("--out-dir", "x")
    b = serve("--pipeline-parallel-size", "1", "--lr", "0.01", "--out-dir", "x2", "--seed", "3")
    assert b["runtime"]["parsed_options"]["--seed"] == {"dest": "seed", "value": "None",
                                                        "given": True, "custom": True}
    got = _alike(a, b)
    # another lr: a difference; --out-dir's value is a Path, recorded by its type's name only;
    # --seed's dest is None in both, but its action is the program's own
    assert set(got) == {"--pipeline-parallel-size"}


def test_a_parser_that_did_not_receive_the_option_proves_nothing(launched, tmp_path) -> None:
    """A launcher declares ``--port`` too but parses only its own words; the program it starts
    reads ``--port`` without argparse. Both launchers' parses say 29500: not the program's."""
    worker = write_script(tmp_path, "worker.py", "import sys\nprint(sys.argv[1:])\n")
    launcher = write_script(tmp_path, "launch.py", f'''
        import argparse, subprocess, sys
        p = argparse.ArgumentParser()
        p.add_argument("--nproc", type=int, default=1)
        p.add_argument("--port", default="29500")
        at = sys.argv.index({str(worker)!r})
        p.parse_args(sys.argv[1:at])
        subprocess.run([sys.executable, *sys.argv[at:]], check=True)
    ''')
    a, b = (launched({}, [sys.executable, str(launcher), "--nproc", "2", str(worker),
                          "--port", port]) for port in ("1", "2"))
    parsed = a["runtime"]["parsed_options"]
    assert parsed["--port"] == {"dest": "port", "value": "'29500'"}  # not given to it
    assert parsed["--nproc"] == {"dest": "nproc", "value": "2", "given": True}
    assert [d.key for d in differences(a, b) if d.section == "command"] == ["--port"]
    assert _alike(a, b) == {}


def test_nothing_without_both_runs_parses(serve, tmp_path: Path) -> None:
    traced = serve("--node-rank", "0")
    script = str(tmp_path / "serve.py")
    untraced = run([sys.executable, script], cwd=tmp_path, output=tmp_path / "u.toml",
                   trace=False).snapshot
    assert "parsed_options" not in (untraced.get("runtime") or {})
    assert _alike(untraced, traced) == {} and _alike(traced, untraced) == {}
    # a traced run whose program parsed nothing (it never imported argparse)
    other = write_script(tmp_path, "plain.py", "import sys\nprint(sys.argv)\n")
    plain = run([sys.executable, str(other), "--node-rank", "1"], cwd=tmp_path,
                output=tmp_path / "p.toml").snapshot
    assert plain["runtime"]["traced"] and "parsed_options" not in plain["runtime"]
    assert _alike(plain, traced) == {}


def test_the_diff_scores_it_under_likely(serve) -> None:
    """The incident: B failed with words that name neither option; before, the two options
    tied at 88 and the diff was undecided."""
    good = serve()
    bad = serve("--pipeline-parallel-size", "2", "--node-rank", "0")
    report = compare(good, bad)
    by_key = {d.key: d for d in report.differences}
    assert by_key["--node-rank"].score < LIKELY
    assert "(its default): the program sees no difference" in by_key["--node-rank"].reason
    assert by_key["--pipeline-parallel-size"].score >= LIKELY
    assert report.confidence == "confident"
    assert [d.key for d in report.candidates] == ["--pipeline-parallel-size"]
