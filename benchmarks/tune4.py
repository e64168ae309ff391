"""Incidents to tune on (issue 41, w5-41a): data files the program opened, built from the
outside with real loaders (OmegaConf, PyYAML, pandas, tomllib, json lines read line by line,
torch's DataLoader workers, ``torch.save``/``torch.load``), launched from two real shells.
The class: an input that is a file the program reads, not a variable or an option, edited
between the runs, inside a git tree or outside any; and the guards around it (an output the run
writes and reads back, a file only the run that went further opened).

- a YAML model config outside any git tree (OmegaConf), edited so that torch fails on a shape;
- a JSON-lines eval set outside any git tree, one label edited: both exit 0, the accuracy moves;
- a CSV read with pandas in DataLoader worker processes, one cell edited: the total is nan;
- a TOML config in a git tree (tomllib) edited, beside an edit of the README nobody opens and
  the compiled caches the runs left (``__pycache__``, untracked);
- a checkpoint the run saves and loads again (an output, other bytes each run), while
  ``--lr`` differs and the loss moves;
- a run that stops before it opens its eval set, because of a variable: the file only the
  other run opened is where it went, not a cause;
- an evaluation whose results table is tracked in git, whose log is left untracked and whose
  compiled cache was committed stale: B's snapshot shows what A's run wrote, none an input.

Every incident here is ``tune`` (benchmarks/corpus.py, source ``tune4``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _git, _write
from benchmarks.thirdparty import _incident, python_with, real_shell


def omegaconf_yaml_outside_git(d: Path) -> Incident:
    """A model config loaded with OmegaConf from a folder no git tree holds; B's copy says
    ``hidden: 48`` where the checkpoint's layer is 32 wide, and torch's load_state_dict fails
    on the shape."""
    py = python_with("omegaconf", "torch")
    conf = d / "configs" / "model.yaml"
    _write(conf, "model:\n  hidden: 32\n  layers: 2\ntrain:\n  batch: 8\n")
    app = _write(d / "serve.py", """
        import sys
        import torch
        from omegaconf import OmegaConf

        def build(cfg):
            return torch.nn.Sequential(*[torch.nn.Linear(cfg.model.hidden, cfg.model.hidden)
                                         for _ in range(cfg.model.layers)])

        def main():
            cfg = OmegaConf.load(sys.argv[1])
            torch.manual_seed(0)
            weights = torch.nn.Sequential(*[torch.nn.Linear(32, 32) for _ in range(2)])
            model = build(cfg)
            model.load_state_dict(weights.state_dict())
            print("served", sum(p.numel() for p in model.parameters()))

        main()
        """)

    def edit() -> None:
        _write(conf, "model:\n  hidden: 48\n  layers: 2\ntrain:\n  batch: 8\n")

    return _incident(omegaconf_yaml_outside_git,
                     Launch((py, str(app), str(conf)), real_shell(0, d), d),
                     Launch((py, str(app), str(conf)), real_shell(1, d), d),
                     ("runtime", f"file {conf}"), between=edit)


def jsonl_eval_set_metric(d: Path) -> Incident:
    """Both runs exit 0; the eval set (JSON lines, read line by line with json.loads) has one
    answer edited between them, outside any git tree, and the accuracy moves."""
    py = python_with("json")
    data = d / "data" / "eval.jsonl"
    rows = [f'{{"q": "{a} + {b}", "a": "{a + b}"}}' for a in range(4) for b in range(5)]
    _write(data, "\n".join(rows) + "\n")
    app = _write(d / "evaluate.py", """
        import json, sys

        def answer(q):
            a, _, b = q.split()
            return str(int(a) + int(b))

        def main():
            with open(sys.argv[1], encoding="utf-8") as fh:
                rows = [json.loads(line) for line in fh if line.strip()]
            right = sum(answer(r["q"]) == r["a"] for r in rows)
            print(f"accuracy={right / len(rows):.4f}")

        main()
        """)

    def edit() -> None:
        text = data.read_text().replace('"a": "5"}', '"a": "6"}', 2)
        data.write_text(text)

    return _incident(jsonl_eval_set_metric,
                     Launch((py, str(app), str(data)), real_shell(0, d), d),
                     Launch((py, str(app), str(data)), real_shell(1, d), d),
                     ("runtime", f"file {data}"), between=edit)


def pandas_csv_in_dataloader_worker(d: Path) -> Incident:
    """Both runs exit 0; a torch DataLoader with two worker processes, each of which reads the
    feature table with pandas when it starts (the main process never opens it). B's table has
    ``n/a`` in a numeric column: pandas reads it as NaN, and the total is ``nan``."""
    py = python_with("pandas", "torch")
    table = d / "features.csv"
    _write(table, "id,x,y\n" + "".join(f"{i},{i * 0.5},{i % 2}\n" for i in range(16)))
    app = _write(d / "train.py", """
        import sys
        import pandas as pd
        import torch
        from torch.utils.data import DataLoader, Dataset, get_worker_info

        class Table(Dataset):
            def __init__(self, path):
                self.path = path
                self.rows = None

            def __len__(self):
                return 16

            def __getitem__(self, i):
                if self.rows is None:
                    frame = pd.read_csv(self.path)
                    self.rows = torch.tensor(frame[["x", "y"]].astype("float32").values)
                return self.rows[i]

        def main():
            loader = DataLoader(Table(sys.argv[1]), batch_size=4, num_workers=2)
            total = sum(float(batch.sum()) for batch in loader)
            print(f"total={total:.2f}")

        if __name__ == "__main__":
            main()
        """)

    def edit() -> None:
        lines = table.read_text().splitlines()
        lines[5] = "4,n/a,0"
        table.write_text("\n".join(lines) + "\n")

    return _incident(pandas_csv_in_dataloader_worker,
                     Launch((py, str(app), str(table)), real_shell(0, d), d),
                     Launch((py, str(app), str(table)), real_shell(1, d), d),
                     ("runtime", f"file {table}"), between=edit)


def toml_config_in_git_with_readme(d: Path) -> Incident:
    """A training config read with tomllib inside a git tree: B's working tree has an
    uncommitted edit to its step count (the loss moves; both exit 0), an edit to the README
    nobody opens, and the compiled caches the runs left behind (untracked ``__pycache__``)."""
    py = python_with("tomllib", "torch")
    repo = d / "proj"
    _write(repo / "train.toml", "[optim]\nlr = 0.05\nsteps = 40\n")
    _write(repo / "README.md", "# proj\n\nTrain with `python run.py`.\n")
    _write(repo / "helpers.py", """
        def data(torch):
            torch.manual_seed(0)
            x = torch.randn(64, 4)
            return x, x.sum(-1)
        """)
    app = _write(repo / "run.py", """
        import tomllib
        import torch
        import helpers

        def main():
            with open("train.toml", "rb") as fh:
                cfg = tomllib.load(fh)
            x, y = helpers.data(torch)
            w = torch.zeros(4, requires_grad=True)
            opt = torch.optim.SGD([w], lr=cfg["optim"]["lr"])
            for _ in range(cfg["optim"]["steps"]):
                opt.zero_grad()
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                opt.step()
            print(f"loss={loss.item():.4f}")

        main()
        """)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")

    def edit() -> None:
        _write(repo / "train.toml", "[optim]\nlr = 0.05\nsteps = 8\n")
        _write(repo / "README.md", "# proj\n\nTrain with `python run.py` (CPU is fine).\n")

    return _incident(toml_config_in_git_with_readme,
                     Launch((py, str(app)), real_shell(0, d), repo),
                     Launch((py, str(app)), real_shell(1, d), repo),
                     ("git", "proj: train.toml"), between=edit)


def checkpoint_written_and_read_back(d: Path) -> Incident:
    """Both runs exit 0; --lr differs and the loss moves. Each run saves a checkpoint with
    torch.save and loads it back (other bytes every run: an output, not an input)."""
    py = python_with("torch")
    app = _write(d / "train.py", """
        import argparse
        import torch

        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--lr", type=float, default=0.01)
            p.add_argument("--ckpt", default="last.pt")
            a = p.parse_args()
            torch.manual_seed(0)
            x = torch.randn(64, 4)
            y = x.sum(-1)
            w = torch.zeros(4, requires_grad=True)
            opt = torch.optim.SGD([w], lr=a.lr)
            for _ in range(20):
                opt.zero_grad()
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                opt.step()
            torch.save({"w": w.detach(), "loss": loss.item()}, a.ckpt)
            back = torch.load(a.ckpt)
            print(f"loss={back['loss']:.4f}")

        main()
        """)
    return _incident(checkpoint_written_and_read_back,
                     Launch((py, str(app), "--lr", "0.01"), real_shell(0, d), d),
                     Launch((py, str(app), "--lr", "0.002"), real_shell(1, d), d),
                     ("command", "--lr"))


def stops_before_its_eval_set(d: Path) -> Incident:
    """B's shell exports EVAL_LIMIT=0, which the program checks before it opens its eval set
    (JSON lines): it exits with an error, and only A opened the file."""
    py = python_with("json")
    data = _write(d / "eval.jsonl", '{"q": "1 + 1", "a": "2"}\n{"q": "2 + 2", "a": "4"}\n')
    app = _write(d / "evaluate.py", """
        import json, os, sys

        def main():
            limit = int(os.environ.get("EVAL_LIMIT", "100"))
            if limit <= 0:
                sys.exit(f"EVAL_LIMIT={limit}: nothing to evaluate")
            with open(sys.argv[1]) as fh:
                rows = [json.loads(line) for line in fh][:limit]
            print(f"rows={len(rows)}")

        main()
        """)
    return _incident(stops_before_its_eval_set,
                     Launch((py, str(app), str(data)), real_shell(0, d), d),
                     Launch((py, str(app), str(data)), {**real_shell(1, d), "EVAL_LIMIT": "0"},
                            d),
                     ("env", "EVAL_LIMIT"))


def outputs_tracked_in_git(d: Path) -> Incident:
    """An evaluation in a git tree whose results (pandas ``to_json``) are tracked, whose
    log (``logging.FileHandler``) is left untracked, and whose compiled cache was committed
    stale (the checkout's mtime is newer than the one it was compiled for, so the first run
    rewrites it). B is launched with ``--fraction 0.5``: both exit 0, the rows and the
    accuracy move. git is read before each launch, so B's snapshot shows what A's run wrote:
    three files changed and a dirty tree, none of them an input, beside an option the runs
    show by its name only."""
    py = python_with("pandas")
    repo = d / "proj"
    _write(repo / "data.csv", "x,label\n" + "".join(
        f"{i},{(i * 7) % 3 == 0:d}\n" for i in range(40)))
    _write(repo / "scoring.py", """
        def accuracy(frame):
            return float((frame["pred"] == frame["label"]).mean())
        """)
    _write(repo / "results" / "metrics.json", "[]\n")
    app = _write(repo / "evaluate.py", """
        import argparse, logging
        import pandas as pd
        import scoring

        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--fraction", type=float, default=1.0)
            args = p.parse_args()
            logging.basicConfig(filename="eval.log", level=logging.INFO)
            frame = pd.read_csv("data.csv")
            frame = frame.head(int(len(frame) * args.fraction))
            frame["pred"] = (frame["x"] % 3 == 0).astype(int)
            acc = scoring.accuracy(frame)
            logging.info("evaluated %d rows", len(frame))
            pd.DataFrame({"split": ["eval"], "accuracy": [acc]}).to_json(
                "results/metrics.json", orient="records")
            print(f"accuracy={acc:.4f} rows={len(frame)}")

        main()
        """)
    subprocess.run([str(py), "-m", "py_compile", "scoring.py"], cwd=repo, check=True)
    st = os.stat(repo / "scoring.py")  # a later checkout: the committed cache is stale
    os.utime(repo / "scoring.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A", "-f")
    _git(repo, "commit", "-qm", "first")
    return _incident(outputs_tracked_in_git,
                     Launch((py, str(app), "--fraction", "1.0"), real_shell(0, d), repo),
                     Launch((py, str(app), "--fraction", "0.5"), real_shell(1, d), repo),
                     ("command", "--fraction"))


#: The incidents of this module, in the tune half.
TUNE4 = [omegaconf_yaml_outside_git, jsonl_eval_set_metric, pandas_csv_in_dataloader_worker,
         toml_config_in_git_with_readme, checkpoint_written_and_read_back,
         stops_before_its_eval_set, outputs_tracked_in_git]
