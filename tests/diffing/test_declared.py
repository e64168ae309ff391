"""Fields compared from their declaration (``Compare(score, reason)`` in
runsnap/snapshot/shapes.py) and fields declared ``NotCompared``: real captures of a real
repository, and the same captures with one field edited, as a snapshot from another run holds it."""

from __future__ import annotations

import copy
import sys
from typing import Any

from runsnap.diffing import compare
from runsnap.snapshot import Snapshot
from runsnap.snapshot.compared import BY_DECLARATION

from .conftest import counted, git


def _edited(snap: Snapshot, section: str, edit: Any) -> Snapshot:
    sections = copy.deepcopy(dict(snap.sections))
    edit(sections[section])
    return snap.replace(sections=sections)


def _repo(sections: dict[str, Any]) -> dict[str, Any]:
    return sections["repos"]["work"]


def test_a_remote_added_is_compared_and_scored_by_its_declaration(cap, repo):
    a = cap(cwd=repo)
    git(repo, "remote", "add", "origin", "https://example.com/work.git")
    report = compare(a, cap(cwd=repo))
    assert counted(report) == [("git", "work.remotes.origin", "added")]
    d = report.counted[0]
    assert (d.score, d.reason) == BY_DECLARATION["git.repos"]["remotes"]
    assert d.path == ("git", "work", "remotes", "origin")


def test_a_flag_only_the_declaration_compares_is_a_difference(cap, repo):
    a = cap(cwd=repo)
    assert _repo(a.sections["git"])["shallow"] is False
    b = _edited(a, "git", lambda s: _repo(s).update(shallow=True))
    report = compare(a, b)
    assert counted(report) == [("git", "work.shallow", "changed")]
    assert report.counted[0].score == BY_DECLARATION["git.repos"]["shallow"][0]
    # An older snapshot without the flag: absent and false are the same.
    older = _edited(a, "git", lambda s: _repo(s).pop("shallow"))
    assert counted(compare(older, a)) == []


def test_fields_declared_not_compared_make_no_difference(cap, repo):
    a = cap(cwd=repo)
    b = _edited(a, "git", lambda s: _repo(s).update(diff_bytes=123, ahead=4, describe="v2"))
    b = _edited(b, "env", lambda s: s.update(count=s["count"] + 7))
    assert counted(compare(a, b)) == []


def test_a_top_level_field_compared_by_its_declaration(launched):
    a = launched({}, [sys.executable, "-c", "pass"])
    assert a.sections["outcome"].get("timed_out") in (None, False)
    b = _edited(a, "outcome", lambda s: s.update(timed_out=True))
    found = [d for d in compare(a, b).differences if d.path == ("outcome", "timed_out")]
    assert [(d.b, d.score, d.reason) for d in found] == [
        (True, *BY_DECLARATION["outcome"]["timed_out"])]
