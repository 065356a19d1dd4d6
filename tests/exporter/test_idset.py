"""The exporter's compact id set answers as a `set` of the same ids would."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from emulator.exporter.idset import IdSet

ids = st.lists(st.integers(min_value=-(2**40), max_value=2**40) | st.integers(0, 300))


@given(ids, ids)
def test_an_idset_answers_as_a_set(added: list[int], asked: list[int]) -> None:
    compact, plain = IdSet(added), set(added)
    assert len(compact) == len(plain)
    assert list(compact) == sorted(plain)
    assert all((i in compact) == (i in plain) for i in asked + added)
    compact.update(asked)
    assert list(compact) == sorted(plain | set(asked))


def test_dense_ids_cost_bits_not_objects() -> None:
    dense = IdSet(range(1, 100_001))
    assert len(dense) == 100_000 and 100_000 in dense and 0 not in dense and None not in dense
    assert len(dense._words) == 100_000 // 64 + 1
