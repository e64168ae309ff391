"""User rules (--ignore, [tool.runsnap.diff], .runsnap.toml) and the knowledge behind ranking."""

from __future__ import annotations

import pytest

from runsnap.diffing import compare
from runsnap.diffing.rules import RankContext, load_user_rules
from runsnap.errors import UsageError
from runsnap.knowledge import rule_lines
from runsnap.knowledge.env import known_names, likely_misspelling

from .conftest import counted


def test_ignore_and_priority_rules(cap):
    a = cap({"WANDB_MODE": "online", "MY_APP_CACHE": "/a", "NCCL_ALGO": "Ring"})
    b = cap({"WANDB_MODE": "offline", "MY_APP_CACHE": "/b", "NCCL_ALGO": "Tree"})
    report = compare(a, b, rules=RankContext(ignore=("env.WANDB_*",), priority=("MY_APP_*",)))
    assert counted(report) == [("env", "MY_APP_CACHE", "changed"), ("env", "NCCL_ALGO", "changed")]
    assert report.counted[0].score == 90
    assert report.counted[0].reason.startswith("matches your priority rule 'MY_APP_*'")
    assert [d.key for d in report.hidden] == ["WANDB_MODE"]
    assert report.hidden[0].reason.startswith("ignored by your rule 'env.WANDB_*'")


def test_config_files(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.runsnap.diff]\nignore = ["WANDB_*"]\npriority = ["X_*"]\n')
    sub = tmp_path / "sub" / "deeper"
    sub.mkdir(parents=True)
    assert load_user_rules(sub) == RankContext(ignore=("WANDB_*",), priority=("X_*",))
    (tmp_path / "sub" / ".runsnap.toml").write_text('[diff]\nignore = ["system.*"]\n')
    assert load_user_rules(sub) == RankContext(ignore=("system.*",))
    (tmp_path / "sub" / ".runsnap.toml").write_text('[diff]\nignore = "system.*"\n')
    with pytest.raises(UsageError, match="'ignore' must be a list of strings"):
        load_user_rules(sub)
    (tmp_path / "sub" / ".runsnap.toml").write_text('[diff]\nignor = ["x"]\n')
    with pytest.raises(UsageError, match="unknown runsnap diff setting 'ignor'"):
        load_user_rules(sub)
    (tmp_path / "sub" / ".runsnap.toml").write_text('[diff\n')
    with pytest.raises(UsageError, match="not valid TOML"):
        load_user_rules(sub)


def test_no_config_means_no_rules(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_user_rules(tmp_path) == RankContext()


@pytest.mark.parametrize(("name", "meant"), [
    ("NCCL_P2P_DISABEL", "NCCL_P2P_DISABLE"),
    ("NCCL_IB_DISABEL", "NCCL_IB_DISABLE"),
    ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEX_LEN", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),
    ("PYTORCH_CUDA_ALOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"),
    ("CUDA_VISIBLE_DEVICE", "CUDA_VISIBLE_DEVICES"),
    ("NCCL_P2P_DISABLE", None),
    ("MY_PRIVATE_FLAG", None),
    ("HOME", None),
])
def test_misspellings(name, meant):
    assert likely_misspelling(name) == meant


def test_every_knowledge_rule_has_a_reason():
    for row in rule_lines("env-families.tsv"):  # "-": another program's names, no family
        assert len(row) in (3, 4) and row[2].strip(), row
        assert row[1] == "-" or 0 <= int(row[1]) <= 100, row
    for row in rule_lines("env-noise.tsv"):
        assert len(row) == 2 and row[1].strip()
    assert "NCCL_P2P_DISABLE" in known_names()


def _osa_reference(a: str, b: str) -> int:
    """Optimal string alignment distance, the whole table, as in the textbook."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


@pytest.mark.slow
def test_the_trimmed_distance_is_the_textbook_distance() -> None:
    """osa_distance trims the common prefix and suffix before its table; on names that share
    most of their letters (the case that matters) it gives the full table's answer."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from runsnap.knowledge.env import osa_distance

    word = st.text(alphabet="NCL_AB2", max_size=10)

    @settings(max_examples=3000, deadline=None)
    @given(word, word, word, st.integers(1, 4))
    def check(common: str, x: str, y: str, limit: int) -> None:
        for a, b in ((common + x, common + y), (x + common, y + common), (x, y)):
            assert osa_distance(a, b, limit) == min(_osa_reference(a, b), limit)

    check()


def test_a_pyproject_without_a_runsnap_table_is_not_read_for_rules(tmp_path):
    """Not even when it is broken: it is the project's, and holds nothing of runsnap's."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["runsnap"\n')
    assert load_user_rules(tmp_path) == RankContext()
    (tmp_path / "pyproject.toml").write_text('[tool.runsnap.diff]\nignore = ["X_*"\n')
    with pytest.raises(UsageError, match="not valid TOML"):
        load_user_rules(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool]\nrunsnap = { diff = { ignore = ["X_*"] } }\n')
    assert load_user_rules(tmp_path) == RankContext(ignore=("X_*",))
