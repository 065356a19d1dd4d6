"""Subset matching: a value always contains itself; a changed leaf is found and named."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.scenarios.match import subset

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=5).filter(lambda k: not k.startswith("$")), inner, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(max_examples=80, deadline=None)
@given(json_values)
def test_a_value_contains_itself(value: Any) -> None:
    assert subset(value, value) is None


@settings(max_examples=80, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5).filter(lambda k: not k.startswith("$")),  # $: operators
        st.integers(),
        min_size=1,
        max_size=5,
    ),
    st.data(),
)
def test_a_changed_field_is_named(record: dict[str, int], data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(record)))
    expected = {key: record[key] + 1}
    found = subset({"outer": [expected]}, {"outer": [record]})
    assert found is not None and found.path == f"outer[0].{key}"
    assert (found.expected, found.actual) == (record[key] + 1, record[key])


def test_operators_and_lists() -> None:
    assert subset({"a": {"$absent": True}}, {"b": 1}) is None
    assert subset({"a": {"$absent": True}}, {"a": None}) is not None
    assert subset({"a": None}, {}) is not None  # null is a value, not absence
    assert subset({"a": {"$any": True}}, {"a": None}) is None
    assert subset({"a": {"$len": 2}}, {"a": [1, 2]}) is None
    assert subset({"a": {"$len": 2}}, {"a": [1]}) is not None
    assert subset({"m": {"$contains": "rejected"}}, {"m": "key rejected (401)"}) is None
    assert subset([3, 1], [1, 2, 3]) is None  # any order, extras fine
    assert subset([1, 1], [1, 2]) is not None  # each expected item needs its own actual item
    assert subset(True, 1) is not None and subset(1, 1.0) is None
