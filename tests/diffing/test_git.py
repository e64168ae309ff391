"""[git]: another commit (with the commits between), branch, dirty vs clean, a diff of the two
uncommitted diffs file by file, untracked files. Real repositories in tmp_path."""

from __future__ import annotations

from runsnap.diffing import compare

from .conftest import counted, git


def test_other_commit_lists_commits_between(cap, repo):
    a = cap(cwd=repo)
    sha_a = git(repo, "rev-parse", "HEAD")
    (repo / "app.py").write_text("print('hello')\nLIMIT = 2\n")
    git(repo, "commit", "-q", "-am", "raise the limit")
    (repo / "conf.yaml").write_text("a: 2\n")
    git(repo, "commit", "-q", "-am", "tune conf")
    sha_b = git(repo, "rev-parse", "HEAD")
    b = cap(cwd=repo)
    report = compare(a, b)
    assert counted(report) == [("git", "work.commit", "changed")]
    d = report.counted[0]
    assert (d.a, d.b) == (sha_a, sha_b)
    log = [e for e in d.evidence if not e.startswith(("describe", "files changed"))]
    assert [e.split(" ", 2)[2] for e in log] == ["tune conf", "raise the limit"]
    assert "files changed: app.py, conf.yaml" in d.evidence  # git diff --name-only A B
    assert all(e.startswith("+ ") for e in log)
    assert d.score == 82
    # Back the other way: the same commits, now missing from B.
    back = compare(b, a)
    assert [e[:2] for e in back.counted[0].evidence
            if not e.startswith(("describe", "files changed"))] == ["- ", "- "]
    # Without the lookup (or without the repository here) no commits are listed.
    assert not [e for e in compare(a, b, git_log=False).counted[0].evidence
                if e.startswith(("+", "-"))]


def test_dirty_vs_clean_with_changed_and_untracked_files(cap, repo):
    a = cap(cwd=repo)
    (repo / "app.py").write_text("print('hello')\nLIMIT = 99\n")
    (repo / "notes.txt").write_text("scratch\n")
    (repo / "patch_model.py").write_text("X = 1\n")
    b = cap(cwd=repo)
    report = compare(a, b)
    assert counted(report) == [
        ("git", "work: app.py", "added"),
        ("git", "work: patch_model.py", "added"),
        ("git", "work: notes.txt", "added"),
        ("git", "work.dirty", "changed"),
    ]
    by_key = {d.key: d for d in report.counted}
    assert by_key["work: app.py"].b == "uncommitted +1 -1"
    assert by_key["work: patch_model.py"].b.startswith("untracked, 6 bytes, sha256 ")
    assert (by_key["work.dirty"].a, by_key["work.dirty"].b) == ("clean", "uncommitted changes")
    assert [d.score for d in report.counted] == [80, 65, 55, 50]


def test_diff_of_the_two_diffs_file_by_file(cap, repo):
    (repo / "app.py").write_text("print('hello')\nLIMIT = 5\n")
    (repo / "conf.yaml").write_text("a: 7\n")
    (repo / "scratch.py").write_text("A = 1\n")
    a = cap(cwd=repo)
    (repo / "app.py").write_text("print('hello')\nLIMIT = 6\n")  # another change, same file
    (repo / "scratch.py").write_text("A = 22\n")  # untracked, other content
    b = cap(cwd=repo)
    report = compare(a, b)
    # conf.yaml carries the same uncommitted change in both: not a difference.
    assert counted(report) == [("git", "work: app.py", "changed"),
                               ("git", "work: scratch.py", "changed")]
    d = report.counted[0]
    assert d.evidence == ("@@ -6,2 +6,2 @@", " -LIMIT = 1", "-+LIMIT = 5", "++LIMIT = 6")
    assert "uncommitted changes to this file differ" in d.reason


def test_branch_and_repository_presence(cap, repo, tmp_path):
    a = cap(cwd=repo)
    git(repo, "checkout", "-q", "-b", "feature")
    b = cap(cwd=repo)
    assert counted(compare(a, b)) == [("git", "work.branch", "changed")]
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    c = cap(cwd=elsewhere)
    report = compare(a, c)
    assert ("git", "work", "removed") in counted(report)
    assert next(d for d in report.counted if d.key == "work").score == 70


def test_truncated_diffs_fall_back_to_the_hash(cap, repo):
    (repo / "app.py").write_text("x = 1\n" * 50)
    a = cap(cwd=repo, max_diff_bytes=10)
    (repo / "app.py").write_text("x = 1\n" * 49 + "x = 2\n")
    b = cap(cwd=repo, max_diff_bytes=10)
    # The stored heads are equal (the change is past the cut), only the hashes differ.
    ra, rb = a["git"]["repos"]["work"], b["git"]["repos"]["work"]
    assert ra["diff_truncated"] and ra["diff"] == rb["diff"]
    report = compare(a, b)
    assert counted(report) == [("git", "work.diff", "changed")]


def test_submodule_and_remote_changes(cap, repo):
    a = cap(cwd=repo)
    git(repo, "remote", "add", "origin", "https://example.com/org/work.git")
    b = cap(cwd=repo)
    assert counted(compare(a, b)) == [("git", "work.remotes.origin", "added")]
    ra = a["git"]["repos"]["work"]
    sub_a = {**ra, "submodules": [{"path": "third_party/x", "commit": "a" * 40}]}
    sub_b = {**ra, "submodules": [{"path": "third_party/x", "commit": "b" * 40}]}
    sa = a.replace(sections={**a.sections, "git": {"repos": {"work": sub_a}}})
    sb = a.replace(sections={**a.sections, "git": {"repos": {"work": sub_b}}})
    report = compare(sa, sb)
    assert counted(report) == [("git", "work.submodules.third_party/x", "changed")]
    assert report.counted[0].score == 78  # a submodule at another commit
