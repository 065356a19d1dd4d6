"""Where an actions run stands at any moment: a pure function of its start, the clock and the
outcomes of its exports.

A run over N records (contacts or companies) with A actions each (totalActions = N * A),
started at t0:

- QUEUED during [t0, t0 + 5 s): every action is queued;
- PENDING from t0 + 5 s: every action is pending;
- record i (0-based, in request order) is processed from t0 + 10 s + i s for 5 s, all its
  actions at once, then each of them ends COMPLETED or FAILED (about 1 in 10 fails, decided by
  a hash of (run id, record id, action position): the same run always ends the same way);
- except EXPORT_TO_CRM: its outcome is the export's (`exports`: record position -> exported),
  and it stays PROCESSING from the record's end until the export answered;
- the run ends when the last record does: COMPLETED (no failure), FAILED (no success) or
  PARTIAL, at t0 + 15 s + (N - 1) s at the earliest.

Counts always sum to totalActions, and progress = ended / totalActions * 100.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from emulator.fixtures.models import StatusCounts

QUEUED_MS = 5_000
FIRST_START_MS = 10_000
SPACING_MS = 1_000
PROCESSING_MS = 5_000
FAIL_PERCENT = 10
EXPORT = "EXPORT_TO_CRM"


def action_fails(run_id: int, contact_id: int, position: int) -> bool:
    digest = hashlib.blake2b(f"{run_id}:{contact_id}:{position}".encode(), digest_size=4)
    return int.from_bytes(digest.digest(), "big") % 100 < FAIL_PERCENT


@dataclass(frozen=True)
class RunState:
    overallStatus: str
    counts: StatusCounts


class Timeline:
    """One run's schedule; `state(at)` and the end time of each contact."""

    def __init__(
        self,
        run_id: int,
        start: datetime,
        contact_ids: list[int],
        action_types: list[str],
        exports: dict[int, bool] | None = None,
    ) -> None:
        self.run_id = run_id
        self.start = start
        self.contact_ids = contact_ids  # the run's record ids (contacts or companies)
        self.action_types = action_types
        self.export_at = action_types.index(EXPORT) if EXPORT in action_types else None
        self.exports = exports or {}
        self._fails: list[int] | None = None  # failed hashed actions of the first i records

    @property
    def total(self) -> int:
        return len(self.contact_ids) * len(self.action_types)

    def contact_results(self, index: int) -> list[bool]:
        """Per action of record `index`: True when it completed, False when it failed (an
        export not answered yet counts as failed: ask `settled` first)."""
        record = self.contact_ids[index]
        return [
            self.exports.get(index, False)
            if j == self.export_at
            else not action_fails(self.run_id, record, j)
            for j in range(len(self.action_types))
        ]

    def _hashed_fails(self, index: int) -> int:
        record = self.contact_ids[index]
        return sum(
            action_fails(self.run_id, record, j)
            for j in range(len(self.action_types))
            if j != self.export_at
        )

    def _failed_before(self, ended: int) -> int:
        if self._fails is None:
            fails = [0]
            for i in range(len(self.contact_ids)):
                fails.append(fails[-1] + self._hashed_fails(i))
            self._fails = fails
        return self._fails[ended]

    def ends_at(self, index: int) -> datetime:
        return self.start + timedelta(
            milliseconds=FIRST_START_MS + index * SPACING_MS + PROCESSING_MS
        )

    def _reached(self, elapsed_ms: int, first_ms: int) -> int:
        """How many contacts passed the mark `first_ms + i * SPACING_MS` by `elapsed_ms`."""
        if elapsed_ms < first_ms:
            return 0
        return min(len(self.contact_ids), (elapsed_ms - first_ms) // SPACING_MS + 1)

    def ended(self, at: datetime) -> int:
        """Records whose processing ended by `at` (always a prefix of the records); an export
        among their actions may still be waiting for its answer."""
        return self._reached(self._elapsed(at), FIRST_START_MS + PROCESSING_MS)

    def settled(self, ended: int) -> int:
        """Of the first `ended` records, how many in a row have every action's outcome."""
        if self.export_at is None:
            return ended
        done = 0
        while done < ended and done in self.exports:
            done += 1
        return done

    def _elapsed(self, at: datetime) -> int:
        return (at - self.start) // timedelta(milliseconds=1)

    def state(self, at: datetime) -> RunState:
        n, a = len(self.contact_ids), len(self.action_types)
        elapsed = self._elapsed(at)
        if elapsed < QUEUED_MS:
            return RunState("QUEUED", StatusCounts(queued=n * a))
        started = self._reached(elapsed, FIRST_START_MS)
        ended = self._reached(elapsed, FIRST_START_MS + PROCESSING_MS)
        hashed = a - (self.export_at is not None)
        failed = self._failed_before(ended)
        counts = StatusCounts(
            pending=(n - started) * a,
            processing=(started - ended) * a,
            completed=ended * hashed - failed,
            failed=failed,
        )
        if self.export_at is not None:  # the exports of ended records: answered or waiting
            answered = [ok for i, ok in self.exports.items() if i < ended]
            counts.completed += sum(answered)
            counts.failed += len(answered) - sum(answered)
            counts.processing += ended - len(answered)
            ended = self.settled(ended) if len(answered) < ended else ended
        if ended == n:
            status = (
                "FAILED" if counts.completed == 0 else "PARTIAL" if counts.failed else "COMPLETED"
            )
        else:
            status = "PENDING" if started == 0 else "PROCESSING"
        return RunState(status, counts)
