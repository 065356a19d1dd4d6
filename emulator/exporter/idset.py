"""A compact set of platform ids: one bit per id in 64-id words, so a run's bookkeeping of
100,000 records costs kilobytes, not the ~60 bytes an id takes in a `set`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class IdSet:
    """Integer ids: add, `in`, len, and iteration in ascending order."""

    __slots__ = ("_len", "_words")

    def __init__(self, ids: Iterable[int] = ()) -> None:
        self._words: dict[int, int] = {}  # id >> 6 -> bits of the ids in that word
        self._len = 0
        self.update(ids)

    def add(self, record_id: int) -> None:
        key, bit = record_id >> 6, 1 << (record_id & 63)
        word = self._words.get(key, 0)
        if not word & bit:
            self._words[key] = word | bit
            self._len += 1

    def update(self, ids: Iterable[int]) -> None:
        for record_id in ids:
            self.add(record_id)

    def __contains__(self, record_id: object) -> bool:
        if not isinstance(record_id, int):
            return False
        return bool(self._words.get(record_id >> 6, 0) >> (record_id & 63) & 1)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:
        for key in sorted(self._words):
            word, base = self._words[key], key << 6
            while word:
                low = word & -word
                yield base + low.bit_length() - 1
                word ^= low
