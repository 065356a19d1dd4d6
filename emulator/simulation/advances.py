"""Clock advances run in the background (POST /_emulator/clock/advances): followed while they
run, kept in a small capped list once they end.

The registry owns the runs and their tasks; the control routes only start, read and stop
them. The engine serialises advances (one holds the emulator's operation guard at a time);
this registry also keeps to one background advance at a time, so "the running one" is one.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from emulator.operations import Busy
from emulator.simulation.campaigns.engine import AdvanceResult, Simulation
from emulator.simulation.progress import AdvanceProgress, AdvanceStopped
from emulator.wire import now_iso, parse_iso

log = logging.getLogger(__name__)
AdvanceStatus = Literal["running", "done", "failed", "cancelled"]
KEEP = 20  # finished advances kept; the oldest goes first
STOP_WAIT = 10.0  # seconds a stop waits for the advance to end (it ends after its next chunk)


@dataclass
class AdvanceRun:
    """One background advance: where it started, where it is going, how far it got."""

    id: str
    previous: str  # ISO: the clock when it started
    target: str  # ISO
    reached: str  # ISO: the simulated time done so far
    events: int = 0  # events written so far
    status: AdvanceStatus = "running"
    message: str | None = None  # why it failed or stopped
    result: AdvanceResult | None = None  # what it did, once ended (done or cancelled)
    started_at: str = field(default_factory=now_iso)  # wall clock
    finished_at: str | None = None
    stop_reason: str | None = None  # set by a stop: the next chunk's progress ends it
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    # set at its next change (progress or end), then replaced: what a stream of it awaits
    changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def _tell(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    @property
    def percent(self) -> float:
        """How much of the simulated span from `previous` to `target` is done (0..100)."""
        start, end = parse_iso(self.previous), parse_iso(self.target)
        span = (end - start).total_seconds()
        if span <= 0:
            return 100.0 if self.status != "running" else 0.0
        done = (parse_iso(self.reached) - start).total_seconds()
        return round(max(0.0, min(100.0, 100 * done / span)), 1)

    def progressed(self, progress: AdvanceProgress) -> None:
        """The engine's progress callback: note how far it got; stop there if asked."""
        self.previous, self.target = progress.previous, progress.target
        self.reached, self.events = progress.reached, progress.events
        self._tell()
        if self.stop_reason is not None:
            raise AdvanceStopped(self.stop_reason)


class AdvanceRunning(Exception):
    """A background advance runs already (one at a time)."""

    def __init__(self, run: AdvanceRun) -> None:
        self.run = run
        super().__init__(
            f"busy: clock advance {run.id} is running (to {run.target}, reached {run.reached});"
            f" follow it at /_emulator/clock/advances/{run.id}, or stop it with DELETE there"
        )


class AdvanceRuns:
    """The running background advance (at most one) and the last `keep` finished ones."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._runs: OrderedDict[str, AdvanceRun] = OrderedDict()

    def get(self, run_id: str) -> AdvanceRun | None:
        return self._runs.get(run_id)

    def recent(self) -> list[AdvanceRun]:
        """The runs kept, newest first."""
        return list(reversed(self._runs.values()))

    def running(self) -> AdvanceRun | None:
        return next((r for r in self._runs.values() if r.status == "running"), None)

    def start(self, simulation: Simulation, previous: datetime, target: datetime) -> AdvanceRun:
        """Start advancing `simulation`'s clock to `target` in the background (AdvanceRunning
        while another background advance runs)."""
        if (current := self.running()) is not None:
            raise AdvanceRunning(current)
        run = AdvanceRun(
            id=secrets.token_hex(4),
            previous=now_iso(previous),
            target=now_iso(max(previous, target)),
            reached=now_iso(previous),
        )
        self._runs[run.id] = run
        self._trim()
        run.task = asyncio.create_task(self._run(run, simulation, target))
        return run

    async def _run(self, run: AdvanceRun, simulation: Simulation, target: datetime) -> None:
        try:
            result = await simulation.advance_to(target, progress=run.progressed)
            run.result, run.previous, run.reached = result, result.previous, result.now
            run.events = result.events
            if run.stop_reason is not None and result.now < run.target:
                run.status, run.message = "cancelled", f"stopped at {result.now}: {run.stop_reason}"
            else:
                run.status = "done"
        except Busy as exc:  # another operation took the state between the check and the start
            run.status, run.message = "failed", str(exc)
        except asyncio.CancelledError:  # the server or its workspace stopping
            run.status, run.message = "cancelled", f"stopped at {run.reached}: the server stopped"
            raise
        except Exception as exc:  # the run must say so, not a silent dead task
            log.exception("clock advance %s crashed", run.id)
            run.status, run.message = "failed", f"advance crashed: {exc}"
        finally:
            run.finished_at = now_iso()
            run._tell()

    async def stop(self, run: AdvanceRun, reason: str) -> bool:
        """Ask a running advance to stop after its current chunk and wait (up to STOP_WAIT s)
        until it has; False when it had ended already."""
        if run.status != "running" or run.task is None:
            return False
        if run.stop_reason is None:
            run.stop_reason = reason
        await asyncio.wait([run.task], timeout=STOP_WAIT)
        return True

    async def stop_all(self, reason: str) -> list[str]:
        """Stop the running advance (a reset); answers the ids of the runs it stopped."""
        run = self.running()
        if run is None:
            return []
        await self.stop(run, reason)
        return [run.id]

    def tasks(self) -> list[asyncio.Task[None]]:
        return [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]

    def _trim(self) -> None:
        finished = [k for k, r in self._runs.items() if r.status != "running"]
        while len(self._runs) > self.keep and finished:
            del self._runs[finished.pop(0)]
