"""What the program's option parser made of its command line (``[runtime] parsed_options``): the
tracing hook wraps ``argparse.ArgumentParser.parse_known_args`` once the program imports
argparse, and records each parse's options, dests and values; real programs, real parses."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tracing.conftest import child_env

PROGRAM = '''
import argparse, os, pathlib, sys
p = argparse.ArgumentParser(prog="serve")
p.add_argument("--node-rank", "--rank", type=int, default=0)
p.add_argument("--pipeline-parallel-size", type=int, default=1)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--fast", action="store_true", default=True)
p.add_argument("--layers", type=int, nargs="*", default=[1, 2])
p.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("out"))
p.add_argument("--note", default="n" * 300)
p.add_argument("--ids", type=int, nargs="*", default=list(range(300)))
p.add_argument("--big", type=int, default=10 ** 5000)  # too many digits for repr
p.add_argument("--quiet", default=argparse.SUPPRESS, action="store_true")
p.add_argument("model", nargs="?")
args = p.parse_args()
print(sorted((k, v) for k, v in vars(args).items() if k != "big"), "argparse" in sys.modules)
'''


def _parsed(runtime: dict[str, Any]) -> dict[str, tuple[str, str]]:
    parsed = runtime.get("parsed_options", {})
    assert not any(v.get("custom") for v in parsed.values())  # argparse's own actions only
    return {k: (v["dest"], v["value"]) for k, v in parsed.items()}


def test_each_option_with_its_dest_and_parsed_value(traced, tmp_path: Path) -> None:
    argv = ["m", "--rank", "0", "--lr", "1e-3", "--layers", "3", "4"]
    record, runtime, out = traced(PROGRAM, name="serve.py",
                                  argv=[sys.executable, str(tmp_path / "serve.py"), *argv])
    bare, _rt, out_bare = traced(PROGRAM, name="serve.py", trace=False,
                                 argv=[sys.executable, str(tmp_path / "serve.py"), *argv])
    assert record.exit_status == bare.exit_status == 0
    assert out == out_bare  # the program sees what it would see untraced
    parsed = _parsed(runtime)
    assert parsed["--node-rank"] == parsed["--rank"] == ("node_rank", "0")  # every spelling
    given = {k for k, v in runtime["parsed_options"].items() if v.get("given")}
    assert given == {"--rank", "--lr", "--layers"}  # the strings the parse read
    assert parsed["--pipeline-parallel-size"] == ("pipeline_parallel_size", "1")
    assert parsed["--lr"] == ("lr", "0.001")
    assert parsed["--fast"] == ("fast", "True")
    assert parsed["--layers"] == ("layers", "[3, 4]")
    assert parsed["--out-dir"] == ("out_dir", "<PosixPath>")  # not a literal: its type's name
    assert parsed["--note"][1] == "'" + "n" * 199 + "..."  # cut at 200 characters
    assert parsed["--ids"] == ("ids", "<list>") and parsed["--big"] == ("big", "<int>")
    # --help (dest SUPPRESS), --quiet (left unset), the positional: not options with a value
    assert set(parsed) == {"--node-rank", "--rank", "--pipeline-parallel-size", "--lr", "--fast",
                           "--layers", "--out-dir", "--note", "--ids", "--big"}


@pytest.mark.parametrize("argv", [["--help"], ["--node-rank", "x"], ["--nope"]])
def test_help_and_errors_pass_through_untouched(traced, tmp_path: Path, argv) -> None:
    script = [sys.executable, str(tmp_path / "serve.py"), *argv]
    record, runtime, out = traced(PROGRAM, name="serve.py", argv=script)
    bare, _rt, out_bare = traced(PROGRAM, name="serve.py", argv=script, trace=False)
    assert (record.exit_status, out) == (bare.exit_status, out_bare)
    assert record.exit_status == (0 if argv == ["--help"] else 2)
    assert ("usage: serve" in out) == (argv == ["--help"])
    # --help and a bad value: the parse raised, nothing recorded; an unknown option: the
    # parse returned it as left over (then parse_args refused it), and what it parsed is kept
    assert runtime["traced"]
    assert ("parsed_options" in runtime) == (argv == ["--nope"])


def test_a_program_that_never_imports_argparse_gets_nothing(traced) -> None:
    _record, runtime, out = traced('''
        import sys
        print("argparse" in sys.modules)
    ''')
    assert out.strip() == "False"  # the hook imported nothing on the program's behalf
    assert runtime["traced"] and "parsed_options" not in runtime
    assert "argparse" not in runtime["stdlib_modules"]


def test_subclasses_subcommands_and_several_parses(traced, tmp_path: Path) -> None:
    """A subclass (as transformers' HfArgumentParser) goes through the same method; a
    subcommand's parser records its own options; the parse of the program's own argv wins
    over an earlier parse of a list the program built."""
    source = '''
        import argparse
        class HfLike(argparse.ArgumentParser):
            def parse_into(self, args=None):
                return self.parse_known_args(args=args)[0]
        p = HfLike(prog="train")
        p.add_argument("--seed", type=int, default=1)
        sub = p.add_subparsers(dest="cmd")
        run = sub.add_parser("run")
        run.add_argument("--steps", type=int, default=10)
        defaults = p.parse_into(["run"])  # the defaults, parsed first from a list
        got = p.parse_into()
        print(defaults.seed, got.seed, got.steps)
    '''
    script = [sys.executable, str(tmp_path / "train.py"), "--seed", "7", "run", "--steps", "3"]
    record, runtime, out = traced(source, name="train.py", argv=script)
    assert record.exit_status == 0 and out.split() == ["1", "7", "3"]
    parsed = _parsed(runtime)
    assert parsed["--seed"] == ("seed", "7")  # sys.argv's parse, not the defaults'
    assert parsed["--steps"] == ("steps", "3")


def test_the_launched_process_before_its_children(traced, tmp_path: Path) -> None:
    """A launcher with its own options (torchrun-like) and the program it starts, which parses
    its own: both are kept, and where both declare an option the launched process's wins."""
    child = tmp_path / "worker.py"
    child.write_text("import argparse\np = argparse.ArgumentParser()\n"
                     "p.add_argument('--port', default='1')\np.add_argument('--lr', default='0.1')\n"
                     "print(p.parse_args())\n")
    source = f'''
        import argparse, subprocess, sys
        p = argparse.ArgumentParser()
        p.add_argument("--nproc", type=int, default=1)
        p.add_argument("--port", default="29500")
        a, rest = p.parse_known_args()
        subprocess.run([sys.executable, {str(child)!r}, *rest], check=True)
    '''
    script = [sys.executable, str(tmp_path / "launch.py"), "--nproc", "2", "--lr", "0.5"]
    record, runtime, _out = traced(source, name="launch.py", argv=script)
    assert record.exit_status == 0
    parsed = _parsed(runtime)
    assert parsed["--nproc"] == ("nproc", "2")
    assert parsed["--lr"] == ("lr", "'0.5'")
    assert parsed["--port"] == ("port", "'29500'")


def test_a_failure_of_the_hook_changes_nothing(traced) -> None:
    """The parser's ``prog`` cannot be turned into text: the record is given up, the parse's
    result is the program's own."""
    _record, runtime, out = traced('''
        import argparse
        class Bad:
            def __str__(self):
                raise RuntimeError("no")
        p = argparse.ArgumentParser()
        p.add_argument("--x", default=3)
        p.prog = Bad()
        print(p.parse_args([]).x)
    ''')
    assert out.strip() == "3"
    assert "parsed_options" not in runtime


def test_jsonargparse_records_nothing(traced, tmp_path: Path) -> None:
    """jsonargparse's parser replaces ``parse_known_args`` (it raises there) and parses through
    argparse's private method before merging its defaults and config files: nothing is
    recorded, and the program runs as it would."""
    pytest.importorskip("jsonargparse")
    source = '''
        from jsonargparse import ArgumentParser
        p = ArgumentParser()
        p.add_argument("--lr", type=float, default=0.1)
        print(p.parse_args().lr)
    '''
    argv = [sys.executable, str(tmp_path / "j.py"), "--lr", "0.5"]
    env = child_env(PYTHONPATH=":".join(sys.path[1:]))
    record, runtime, out = traced(source, name="j.py", argv=argv, env=env)
    bare, _rt, out_bare = traced(source, name="j.py", argv=argv, env=env, trace=False)
    assert record.exit_status == bare.exit_status == 0 and out == out_bare == "0.5\n"
    assert "parsed_options" not in runtime


def test_a_token_given_as_an_option_or_an_env_default_never_reaches_the_file(
        traced, tmp_path: Path) -> None:
    """Parsed values are redacted as ``[command.options]``' and ``[env]``'s are: by the option's
    name and dest, by shape, and wherever a secret found elsewhere reappears."""
    on_line = "hf_" + "Q7vLx2Rm9KpT4wZs8NbY3cJd6FgH1aEu0i"
    in_env = "hf_" + "Zc3Vb8Nm1Qw6Er4Ty7Ui2Op5As9Df0GhJk"
    plain = "tr0ub4dor-and-" + "3-horses"  # a secret only by the option's name
    source = '''
        import argparse, os
        p = argparse.ArgumentParser()
        p.add_argument("--token")
        p.add_argument("--hub", default=os.environ["HF_TOKEN"])  # a name that says nothing
        p.add_argument("--api-key", dest="api_key", default=[os.environ["HF_TOKEN"]])
        p.add_argument("--db-password", default=os.environ["APP_SETTING"])  # no token format
        p.add_argument("--steps", type=int, default=3)
        a = p.parse_args()
        print(len(a.token), len(a.hub))
    '''
    argv = [sys.executable, str(tmp_path / "tok.py"), "--token", on_line]
    record, runtime, out = traced(source, name="tok.py", argv=argv,
                                  env=child_env(HF_TOKEN=in_env, APP_SETTING=plain))
    assert record.exit_status == 0 and out.split() == ["37", "37"]
    parsed = runtime["parsed_options"]
    assert parsed["--steps"]["value"] == "3"
    for option in ("--token", "--hub", "--api-key", "--db-password"):
        assert "<redacted:" in parsed[option]["value"], parsed[option]
    [snapshot] = tmp_path.glob("*.toml")  # the file the capture wrote
    text = snapshot.read_text()
    assert on_line not in text and in_env not in text and plain not in text
    assert on_line[3:20] not in text and in_env[3:20] not in text


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                    reason="the real transformers is not installed here")
def test_the_real_hf_argument_parser(traced, tmp_path: Path) -> None:
    source = '''
        from dataclasses import dataclass, field
        from transformers import HfArgumentParser
        @dataclass
        class Args:
            lr: float = 1e-3
            node_rank: int = 0
            fast: bool = True
            name: str = field(default="x", metadata={"aliases": ["--nm"]})
        (a,) = HfArgumentParser(Args).parse_args_into_dataclasses()
        print(a.lr, a.name)
    '''
    argv = [sys.executable, str(tmp_path / "hf.py"), "--lr", "0.5", "--nm", "y"]
    env = child_env(HF_HUB_OFFLINE="1", PYTHONPATH=":".join(sys.path[1:]))
    record, runtime, out = traced(source, name="hf.py", argv=argv, env=env)
    assert record.exit_status == 0 and out.split() == ["0.5", "y"]
    parsed = _parsed(runtime)
    assert parsed["--lr"] == ("lr", "0.5")
    assert parsed["--node_rank"] == parsed["--node-rank"] == ("node_rank", "0")
    assert parsed["--no_fast"] == ("fast", "True")
    assert parsed["--name"] == parsed["--nm"] == ("name", "'y'")
