"""The export's spaced collections: set inside the block, put back after it, whatever happens."""

from __future__ import annotations

import gc

import pytest

from emulator.cli.spaced_gc import YOUNG_THRESHOLD, spaced_collections


def test_inside_the_block_young_collections_are_spaced_and_the_state_is_frozen() -> None:
    before = gc.get_threshold()
    with spaced_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_an_error_in_the_block_puts_the_collector_back() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), spaced_collections():
        raise RuntimeError("stop")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
