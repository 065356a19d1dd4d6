"""emulator/file_keys.py: JSON paths, the keys a place accepts, the suggestion."""

from __future__ import annotations

import msgspec
import pytest

from emulator.file_keys import accepted_keys, explain, steps, unknown_key_message
from emulator.wire import FileWire


class Leaf(FileWire):
    alpha: int = 0
    beta: str = ""


class One(FileWire, tag_field="kind", tag="one"):
    first: int = 0


class Two(FileWire, tag_field="kind", tag="two"):
    second: int = 0


class Root(FileWire):
    leaf: Leaf | None = None
    leaves: list[Leaf] = []
    by_name: dict[str, Leaf] = {}
    items: list[One | Two] = []
    free: dict[str, object] = {}


@pytest.mark.parametrize(
    "path,expected",
    [
        ("", []),
        ("a", ["a"]),
        ("a.b", ["a", "b"]),
        ("a[3].b", ["a", 3, "b"]),
        ("[2].id", [2, "id"]),
        ("[0][1]", [0, 1]),
        ("a[...].b", ["a", "[...]", "b"]),
    ],
)
def test_steps_of_a_path(path: str, expected: list[str | int]) -> None:
    assert steps(path) == expected


def test_accepted_keys_follow_optional_lists_dicts_and_tagged_unions() -> None:
    data = {
        "leaf": {},
        "leaves": [{}],
        "by_name": {"x": {}},
        "items": [{"kind": "one"}, {"kind": "two"}],
    }
    assert accepted_keys(Root, [], data) == ["leaf", "leaves", "by_name", "items", "free"]
    assert accepted_keys(Root, ["leaf"], data) == ["alpha", "beta"]
    assert accepted_keys(Root, ["leaves", 0], data) == ["alpha", "beta"]
    assert accepted_keys(Root, ["by_name", "x"], data) == ["alpha", "beta"]
    assert accepted_keys(Root, ["items", 0], data) == ["kind", "first"]
    assert accepted_keys(Root, ["items", 1], data) == ["kind", "second"]
    assert accepted_keys(Root, ["free", "x"], {"free": {"x": {}}}) == []
    assert accepted_keys(Root, ["nowhere"], data) == []


def test_the_message_suggests_the_closest_key_or_lists_them() -> None:
    assert unknown_key_message("alpah", ["alpha", "beta"]) == (
        "unknown key `alpah` (did you mean `alpha`?)"
    )
    assert unknown_key_message("zzz", ["beta", "alpha"]) == (
        "unknown key `zzz` (accepted: `alpha`, `beta`)"
    )
    assert unknown_key_message("zzz", []) == "unknown key `zzz`"


@pytest.mark.parametrize(
    "text,where,message",
    [
        (b'{"items": [{"kind": "two", "secnd": 1}]}', "items[0].secnd", "did you mean `second`?"),
        (b'{"by_name": {"k": {"bta": ""}}}', "by_name[...].bta", "did you mean `beta`?"),
        (b'{"lef": {}}', "lef", "did you mean `leaf`?"),
        (b'{"leaves": [{"alpha": "x"}]}', "leaves[0].alpha", "Expected int, got str"),
    ],
)
def test_explain_names_the_path_and_the_fix(text: bytes, where: str, message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.json.decode(text, type=Root)
    path, said = explain(info.value, Root, text)
    assert path == where and message in said
