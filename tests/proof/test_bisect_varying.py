"""``runsnap bisect`` where the answer, run again, goes bad and then good: a change that makes
the result vary from launch to launch (BAD leaves unpinned what GOOD pins) is the cause when
GOOD's own launch gives one value every time and each launch with the change its own; any
other flaky launch stays "not reproducible"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.proof.conftest import bisect, capture, child, keys

#: A draw without a seed, made repeatable for the test: launch n (counted in ``draws``) falls
#: on BAD's side but for the third launch, each value its own; with SEED set, GOOD's value.
DRAW = ("knobs = [os.environ.get(f'KNOB_{i}') for i in range(6)]\n"
        "n = int(open('draws').read()) if os.path.exists('draws') else 0\n"
        "open('draws', 'w').write(str(n + 1))\n"
        "if os.environ.get('SEED'):\n"
        "    value = 1.0 + n * JITTER\n"
        "else:\n"
        "    value = (1.0 if n == 2 else 2.0) + (n + 1) * 1e-4\n"
        "print(f'step 100 score={value:.6f}')\n")


def _pair(tmp_path: Path, jitter: float) -> tuple[Path, Path]:
    prog = child(tmp_path / "draw.py", f"JITTER = {jitter!r}\n" + DRAW)
    knobs = {f"KNOB_{i}": "a" for i in range(6)}
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], {"SEED": "1234", **knobs})
    (tmp_path / "draws").unlink()
    knobs = {f"KNOB_{i}": "b" for i in range(6)}  # read, never used: none makes it vary
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)], {"SEED": None, **knobs})
    assert "score = 2.0001" in bad.read_text() and "score = 1.0" in good.read_text()
    return good, bad


@pytest.mark.slow
def test_a_change_that_makes_the_result_vary_is_the_cause(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path, 0.0)
    proc, answer = bisect(good, bad)
    assert proc.returncode == 0, proc.stderr
    assert answer["status"] == "found" and keys(answer["cause"]) == ["env SEED"], answer
    # Every change applied, launched twice: 2.0002 (bad), then 1.0003 (good): the result
    # varies. GOOD's own launch gives 1 three times; the search by "varies" needs no verdict;
    # the answer launched four times gives four values.
    runs = answer["runs"]
    assert [r["why"].split(",")[0] for r in runs[:2]] == ["score 2.0002", "score 1.0003"]
    assert [r["applied"] for r in runs[2:5]] == [[], [], []]
    assert all(r["snapshot"] for r in runs)
    last = [r["why"].split(",")[0] for r in runs[-4:]]
    assert len(set(last)) == 4 and all(r["applied"] == [["env", "SEED"]] for r in runs[-4:])
    assert answer["message"].startswith(f"cause found: 1 change in {len(runs)} trials: score "
                                        "differs in each of 4 launches with it ("), answer
    assert answer["message"].endswith("); GOOD's own launch gives 1 all 3 times: the result "
                                      "varies from launch to launch")


@pytest.mark.slow
def test_a_good_launch_that_varies_too_leaves_it_not_reproducible(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path, 1e-6)  # GOOD's own values differ in the last digits
    proc, answer = bisect(good, bad)
    assert proc.returncode == 1, proc.stderr
    assert answer["status"] == "not-reproducible" and answer["cause"] == []
    assert answer["message"].startswith("not reproducible: the same trial went both ways (a "
                                        "flaky launch), and GOOD's own launch gives score "
                                        "1.000003, 1.000004, 1.000005"), answer["message"]
    assert answer["message"].endswith(": it varies too; no cause is claimed")

