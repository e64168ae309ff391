"""runsnap's records (runsnap.base.records) behave as the frozen dataclasses they replaced:
each case declares the same class both ways and holds the record to what dataclasses does."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from runsnap.base.jsonform import json_form
from runsnap.base.records import FrozenRecord, Record, field
from runsnap.base.terminal import neutralise_data


@dataclasses.dataclass(frozen=True)
class DPoint:
    section: str
    key: str
    score: int = 0
    evidence: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    notes: list[str] = dataclasses.field(default_factory=list)
    secret: str = dataclasses.field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.path:
            object.__setattr__(self, "path", (self.section, self.key))


class RPoint(FrozenRecord):
    section: str
    key: str
    score: int = 0
    evidence: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    secret: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.path:
            object.__setattr__(self, "path", (self.section, self.key))


CALLS = [
    (("env", "X"), {}),
    (("env", "X", 3), {"evidence": ("a",)}),
    (("env",), {"key": "Y", "path": ("env", "Y", "z")}),
    ((), {"section": "git", "key": "commit", "secret": "s3"}),
    (("a", "b", 1, ("e",), ("p",), ["n"], "hidden"), {}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_a_record_is_built_compared_and_shown_as_the_dataclass(args: tuple, kwargs: dict) -> None:
    d, r = DPoint(*args, **kwargs), RPoint(*args, **kwargs)
    names = [f.name for f in dataclasses.fields(d)]
    assert list(r.field_names()) == names
    assert [getattr(r, n) for n in names] == [getattr(d, n) for n in names]
    assert repr(r).replace("RPoint", "DPoint") == repr(d)
    hashable, d_hashable = r.replace(notes=()), dataclasses.replace(d, notes=())
    assert hash(hashable) == hash(d_hashable) == hash(hashable.replace(secret="other"))
    assert r == RPoint(*args, **kwargs) and r != DPoint(*args, **kwargs)
    changed = r.replace(score=9, key="K")
    expected = dataclasses.replace(d, score=9, key="K")
    assert [getattr(changed, n) for n in names] == [getattr(expected, n) for n in names]
    assert pickle.loads(pickle.dumps(r)) == r and copy.copy(r) == r


@pytest.mark.parametrize(("args", "kwargs", "error"), [
    ((), {}, "section"),
    (("a", "b"), {"section": "c"}, "twice|multiple values"),
    (("a", "b"), {"nope": 1}, "nope"),
    (tuple("abcdefgh"), {}, "takes 7 arguments|positional arguments"),
])
def test_a_wrong_call_is_a_type_error_as_with_the_dataclass(args: tuple, kwargs: dict,
                                                             error: str) -> None:
    with pytest.raises(TypeError):
        DPoint(*args, **kwargs)
    with pytest.raises(TypeError, match=error):
        RPoint(*args, **kwargs)


def test_a_frozen_record_refuses_changes_and_a_record_takes_them() -> None:
    r = RPoint("env", "X")
    with pytest.raises(AttributeError, match="frozen"):
        r.score = 1  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del r.score

    class Open(Record):
        n: int = 0

    o = Open()
    o.n = 2
    assert o == Open(2) and o.replace(n=3).n == 3
    assert RPoint("a", "b").notes is not RPoint("a", "b").notes  # a fresh default each


def test_records_have_a_json_form_and_are_neutralised_field_by_field() -> None:
    r = RPoint("env", "X\x1b[2J", evidence=("line\u202e",), notes=["n"])
    assert json_form(r, skip_empty=True) == {"section": "env", "key": "X\x1b[2J", "score": 0,
                                            "evidence": ["line\u202e"], "path": ["env", "X\x1b[2J"],
                                            "notes": ["n"]}
    clean = neutralise_data({"top": (r,)})["top"][0]
    assert isinstance(clean, RPoint) and "\x1b" not in clean.key
    assert "\u202e" not in clean.evidence[0] and clean.path == (clean.section, clean.key)


def test_each_class_gets_an_init_compiled_for_its_own_fields() -> None:
    """The first record of a class compiles its ``__init__``; a subclass with more fields (made
    before or after that) compiles its own, and a class whose field without a default follows
    one with a default keeps the generic one, which takes it."""

    class Base(FrozenRecord):
        a: int
        b: int = 2

    class Early(Base):
        c: tuple[int, ...] = ()

    assert Base(1) == Base(1, 2) and Base.__init__.__qualname__.endswith("Base.__init__")

    class Late(Base):
        c: list[int] = field(default_factory=list)

        def __post_init__(self) -> None:
            self.c.append(self.a)

    for cls in (Early, Late):
        r = cls(1, c=[5]) if cls is Late else cls(1, 3, (4,))
        assert r.field_names() == ("a", "b", "c") and r.a == 1
    assert Late(7).c == [7] and Late(7, 8, [1]).c == [1, 7] and Early(0).c == ()
    with pytest.raises(TypeError):
        Late(1, 2, [3], 4)

    class Odd(FrozenRecord):
        x: int = 0
        y: str  # type: ignore[misc]  # no default after one: the generic __init__ takes it

    assert Odd(y="s") == Odd(0, "s")
    with pytest.raises(TypeError, match="needs 'y'"):
        Odd(1)
