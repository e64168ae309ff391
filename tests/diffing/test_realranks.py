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


def _variant(path: Path, out: Path, old: str, new: str) -> Path:
    text = path.read_text()
    assert old in text, old
    out.write_text(text.replace(old, new, 1))
    return out


def test_pieces_that_differ_in_a_few_lines_are_read_as_the_plain_loader_reads_them(
        tmp_path: Path) -> None:
    """The second rank's pieces are the first's with other numbers: parsed from the first's
    (``SectionCache._from_base``), they must be what tomllib makes of them, whatever was
    changed: a value, an array item, a line moved, two lines that trade places, a line
    written twice, an escape."""
    first, second = write_job(tmp_path / "job", 2, log=None)
    text = second.read_text()
    env_line = next(ln for ln in text.splitlines() if ln.startswith("SLURM_PROCID = "))
    pid_line = text.split("[[runtime.processes]]\n", 1)[1].split("\n", 1)[0]
    tail = next(ln for ln in text.splitlines() if ln.startswith('    "rank=1 step=0'))
    odd = [
        _variant(second, tmp_path / "escape.toml", env_line, 'SLURM_PROCID = "1\\u007e"'),
        _variant(second, tmp_path / "item.toml", tail, '    "rank=1 step=0 \\"quoted\\"",'),
        _variant(second, tmp_path / "moved.toml", f"{env_line}\n", ""),
        _variant(second, tmp_path / "twice.toml", env_line, f"{env_line}\n{env_line}"),
        _variant(second, tmp_path / "number.toml", env_line, "SLURM_PROCID = 1"),
        _variant(second, tmp_path / "pid.toml", f"[[runtime.processes]]\n{pid_line}\n",
                 '[[runtime.processes]]\npid = "x"\n'),
    ]
    # lines that trade places: two items of an array (read in place, as new values) and two
    # variables (another key at each place: parsed whole)
    lines = text.splitlines()
    at = lines.index(tail)
    assert lines[at + 1].startswith('    "rank=1 step=')
    env_at = lines.index(env_line)
    odd[3:3] = [
        _variant(second, tmp_path / "items-swapped.toml", f"{tail}\n{lines[at + 1]}\n",
                 f"{lines[at + 1]}\n{tail}\n"),
        _variant(second, tmp_path / "keys-swapped.toml", f"{env_line}\n{lines[env_at + 1]}\n",
                 f"{lines[env_at + 1]}\n{env_line}\n"),
    ]
    for path in odd[:5]:
        cache = SectionCache()
        got = load_many([first, path], cache=cache)
        assert got == [load(first), load(path)], path.name
    for path in odd[5:]:  # not snapshots: the plain loader's error, word for word
        import pytest

        from runsnap.errors import SnapshotError

        with pytest.raises(SnapshotError) as plain:
            load(path)
        with pytest.raises(SnapshotError) as bulk:
            load_many([first, path])
        assert str(bulk.value) == str(plain.value), path.name


def test_pieces_read_from_a_base_share_what_did_not_change(tmp_path: Path) -> None:
    paths = write_job(tmp_path / "job", 8, log=None)  # rank 5 failed, rank 1 the odd one
    cache = SectionCache()
    _, _, a, b = load_many(paths[:4], cache=cache)
    assert a == load(paths[2]) and b == load(paths[3])
    assert b["env"]["vars"] is not a["env"]["vars"]  # RANK differs
    assert b["env"]["vars"]["RANK"] == "3" and a["env"]["vars"]["RANK"] == "2"
    # the tables whose lines are all the base's are the base's own objects
    assert b["outcome"]["stderr"] is a["outcome"]["stderr"]
    # arrays of tables too: another pid, the same argv
    pa, pb = a["runtime"]["processes"][0], b["runtime"]["processes"][0]
    assert pa["pid"] != pb["pid"] and pb["argv"] is pa["argv"]


def test_a_key_with_one_value_per_rank_is_still_found_and_hidden_beyond_the_sample(
        tmp_path: Path) -> None:
    """Differences of a per-rank key are ranked on a sample of the ranks
    (``many.PER_RANK_SAMPLE``); the key's values, its kind and the odd ones out come from
    every rank."""
    from runsnap.diffing import many

    paths = write_job(tmp_path / "job", 48, log=None)
    report = runsnap.diff(tmp_path / "job")
    old = many.PER_RANK_SAMPLE
    try:
        many.PER_RANK_SAMPLE = 10**9
        full = runsnap.diff(tmp_path / "job")
    finally:
        many.PER_RANK_SAMPLE = old
    assert report.rows == full.rows
    rank = next(r for r in report.rows if r.section == "env" and r.key == "RANK")
    assert rank.kind == "per-rank" and rank.hidden
    assert rank.values == tuple(str(i) for i in range(48))
    assert len(paths) == 48


def test_array_items_at_the_start_of_a_line_are_not_headers(tmp_path: Path, monkeypatch) -> None:
    """runsnap wrote a list of lists one item a line, at the start of the line (``[0, 2268,
    "aot_inductor"],``; indented by one space since): a line that only looks like a header.
    Cutting there sent every rank through the plain loader (30x slower); it is an item, and
    the pieces are read as usual."""
    from runsnap.diffing import bulkload

    paths = write_job(tmp_path / "job", 4, log=None)
    for path in paths:  # as the writer of 2026-12-01 19:00 wrote them: items not indented
        path.write_text(path.read_text().replace("\n [", "\n["))
    assert any(ln.startswith("[") and ln.endswith(",")
               for ln in paths[0].read_text().splitlines())
    plain: list[str] = []
    real = bulkload.load
    monkeypatch.setattr(bulkload, "load", lambda p: plain.append(p) or real(p))
    got = load_many(paths)
    assert plain == []
    assert got == [load(p) for p in paths]


def test_the_n_way_report_is_the_same_whatever_the_loader_shares(tmp_path: Path) -> None:
    """The shortcuts of the bulk loader (pieces seen before taken whole, pieces read from a
    base) and of the N-way compare (shared sections compared once, per-rank keys ranked on a
    sample) change nothing in what is reported: the JSON of ``--all`` is byte for byte the
    report of the same files each read by the plain loader (no object shared, every snapshot
    compared by itself). 48 ranks on 6 nodes: past ``many.PER_RANK_SAMPLE``; the odd node is
    node 1 (7 % 6), the odd rank 41 (137 % 48), rank 45 failed."""
    from runsnap.diffing import compare_many
    from runsnap.render import render

    paths = write_job(tmp_path / "job", 48, log=None)
    fast = runsnap.diff(tmp_path / "job", show_all=True)
    plain = compare_many([load(p) for p in paths], show_all=True)
    assert render(fast, "json") == render(plain, "json")
    assert render(fast, "text") == render(plain, "text")
    odd = {r.key: r.odd_members for r in fast.rows if r.kind == "odd" and not r.hidden}
    assert odd["numpy"] == (41,) and odd["exit_status"] == (45,)
    assert odd["NCCL_IB_HCA"] == tuple(range(8, 16))


def test_a_piece_seen_before_is_taken_whole_only_where_its_run_of_headers_ends(
        tmp_path: Path, monkeypatch) -> None:
    """A rank whose first ``[[runtime.processes]]`` table is the first rank's, byte for byte,
    but with a second one after it: the piece seen before is not the whole run of headers
    there: the run is read as one piece (taken whole, the second table would come as a piece
    of its own, and the file would go to the plain loader)."""
    from runsnap.diffing import bulkload

    first, second = write_job(tmp_path / "job", 2, log=None)
    text = first.read_text()
    block = text.split("[[runtime.processes]]\n", 1)[1].split("\n[", 1)[0]
    more = tmp_path / "more.toml"
    more.write_text(text.replace(f"[[runtime.processes]]\n{block}\n",
                                 f"[[runtime.processes]]\n{block}\n[[runtime.processes]]\n"
                                 f"{block.replace('pid = ', 'pid = 9', 1)}\n", 1))
    plain: list[str] = []
    real = bulkload.load
    monkeypatch.setattr(bulkload, "load", lambda p: plain.append(p) or real(p))
    got = load_many([first, second, more])
    assert plain == []
    assert got == [load(first), load(second), load(more)]
    assert len(got[2]["runtime"]["processes"]) == 2


def test_arrays_and_inline_tables_are_read_as_tomllib_reads_them(tmp_path: Path) -> None:
    """Flat arrays and inline tables of plain values are read without tomllib (a traced rank
    has a thousand of them); every other form, and anything TOML rejects, is tomllib's."""
    import pytest

    from runsnap.errors import SnapshotError

    (path,) = write_job(tmp_path / "job", 1, log=None)
    text = path.read_text()
    lines = ['a1 = [5, 104, "Strobe, x", -0, 1.5, true, false]', "a2 = []", "a3 = [1,2]",
             "a4 = [1, ]", 'a5 = ["a\\"b", "~null"]', "a6 = [1e5, 1.5e-3]",
             "a7 = [123456789012345678901234567890]", 't1 = { via = "getenv", sites = [184] }',
             "t2 = { set = true }", "t3 = {a = 1}", 't4 = { a = [1, 2], b = "x, y = z" }',
             "t5 = { a = [{ b = 1 }] }", "t6 = { }", "a8 = [-1.25, 0.0, -0.5]",
             'a9 = ["]", 1]', 't7 = { a = "}", b = [] }', "a10 = [1_000, 1.5e3]",
             "t8 = { a = [1, 2] , b = 1 }"]
    odd = tmp_path / "odd.toml"
    odd.write_text(text.replace("[outcome]\n", "[outcome]\n" + "\n".join(lines) + "\n", 1))
    (got,) = load_many([odd])
    assert got == load(odd)
    assert got["outcome"]["a1"] == [5, 104, "Strobe, x", 0, 1.5, True, False]
    assert got["outcome"]["t4"] == {"a": [1, 2], "b": "x, y = z"}
    for bad in ("b1 = [01]", "b2 = [1.]", "b3 = { a = 1, a = 2 }", "b4 = [1.5.5]", "b5 = [1]]",
                "b6 = [truex]", "b7 = { a = 1 } }"):
        wrong = tmp_path / "wrong.toml"
        wrong.write_text(text.replace("[outcome]\n", f"[outcome]\n{bad}\n", 1))
        with pytest.raises(SnapshotError) as plain:
            load(wrong)
        with pytest.raises(SnapshotError) as bulk:
            load_many([wrong])
        assert str(bulk.value) == str(plain.value), bad


def test_ranks_whose_records_differ_in_values_alone_compare_as_their_records_do(
        tmp_path: Path) -> None:
    """Two ranks' ``[runtime]`` store the same records but for the values seen (``RANK``):
    B's records are not built, A's stand for them. The differences are those of the whole
    records (the same sections in schema 1's form, every record written out)."""
    from runsnap.diffing.sections import runtime as compare_runtime

    paths = write_job(tmp_path / "job", 8, log=None)  # rank 1 read one more variable
    a, b = (load(p)["runtime"] for p in paths[2:4])

    def written_out(s):
        return {"traced": s["traced"], "native": s.get("native", ""),
                "env": {n: dict(r) for n, r in variables(s).items()},
                "modules": s.get("modules") or {}, "processes": s.get("processes") or []}

    got = compare_runtime.compare(a, b)
    assert [(d.key, d.a, d.b) for d in got] == [("env RANK", "2", "3")]
    assert got == compare_runtime.compare(written_out(a), written_out(b))
    odd = load(paths[1])["runtime"]  # its records differ: compared record by record
    assert compare_runtime.compare(a, odd) == compare_runtime.compare(written_out(a),
                                                                      written_out(odd))
