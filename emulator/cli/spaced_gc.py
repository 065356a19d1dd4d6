"""Fewer cyclic garbage collections while an `emulator export` process sends its records.

A batch's records are dicts alive until its answer is stored (up to `in_flight` batches at
once): at Python's default threshold (700 new containers) a collection runs every few
records and finds them all alive, promotes them and scans them again a generation up. The
state loaded before (imports, fixtures) is frozen out of every collection: it stays alive
to the end. Both are put back afterwards. The CLI's own process only: a server running an
export keeps its settings.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# New containers between two youngest-generation collections: about the records of every
# batch in flight (some ten containers a record), so most are freed by then. Not more: the
# cycles a call leaves wait for the next collection (20,000 raised the exporter's peak RSS
# at 100,000 contacts from 54 to 70 MB; 5,000, to 56).
YOUNG_THRESHOLD = 5_000


@contextlib.contextmanager
def spaced_collections() -> Iterator[None]:
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
