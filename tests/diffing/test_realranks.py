"""The N-way loader on jobs made from a real capture (benchmarks/realranks.py): what it gives is
what the plain loader gives, the pieces ranks share are shared, the odd ones are named."""

from __future__ import annotations

from pathlib import Path

import runsnap
from benchmarks.realranks import write_job
from runsnap.diffing.bulkload import SectionCache, load_many
from runsnap.snapshot import load
from runsnap.snapshot.runtime import variables


def test_a_real_shaped_job_loads_as_the_plain_loader_does_and_shares_its_parts(tmp_path: Path
                                                                               ) -> None:
    paths = write_job(tmp_path / "job", 24, log=None)
    cache = SectionCache()
    many = load_many(paths, cache=cache)
    assert many == [load(p) for p in paths]
    assert all(s["runtime"]["vars"] is many[0]["runtime"]["vars"] for s in many[:17])
    assert all(s["packages"] is many[0]["packages"] for s in many[:17])
    assert variables(many[3]["runtime"])["RANK"]["value"] == "3"
    report = runsnap.diff(tmp_path / "job")
    text = "\n".join(str(r.key) for r in report.rows if not r.hidden)
    assert "NCCL_IB_HCA" in text and "numpy" in text and "exit_status" in text
    odd = {r.key: r.odd_members for r in report.rows if r.kind == "odd" and not r.hidden}
    assert odd["NCCL_IB_HCA"] == tuple(range(8, 16))
    assert odd["numpy"] == (17,) and odd["exit_status"] == (21,)


def test_a_line_the_fast_path_would_misread_goes_to_tomllib(tmp_path: Path) -> None:
    """Escapes can write a codec marker (``~null``) with no ``~`` in the text, and values
    outside the plain forms (exponents, leading zeros, escapes) are TOML's to read."""
    (path,) = write_job(tmp_path / "job", 1, log=None)
    text = path.read_text()
    text = text.replace("[env.vars]\n", '[env.vars]\nA_EXP = "1e5"\n'
                        'B_ESC = "tab\\tand \\"quote\\""\n', 1)
    text = text.replace("[outcome]\n", '[outcome]\nlater = { "\\u007enull" = true }\n'
                        "big = 1e5\nzeros = 0.50\n", 1)
    odd = tmp_path / "odd.toml"
    odd.write_text(text)
    (got,) = load_many([odd])
    assert got == load(odd)
    assert got["env"]["vars"]["B_ESC"] == 'tab\tand "quote"'
    assert got["outcome"]["later"] is None and got["outcome"]["big"] == 1e5
