"""Verify runs started through the control API: run in the background, kept in a small capped registry.

The registry owns the runs; the control routes only start, read and render them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

from emulator.verify.deep_report import DeepOptions
from emulator.verify.probes import new_run_id
from emulator.verify.report import Report
from emulator.verify.runner import Prober, Verifier
from emulator.wire import now_iso

log = logging.getLogger(__name__)
RunStatus = Literal["running", "pass", "fail", "error", "cancelled"]
CANCEL_WAIT = 5.0  # seconds a cancel waits for the run to stop (it stops at its next await)


class TooManyRuns(Exception):
    """As many runs as allowed are running already."""


@dataclass
class Run:
    id: str
    crm_url: str
    status: RunStatus = "running"
    report: Report | None = None
    message: str | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    started_at: str = field(default_factory=now_iso)
    # a scratch copy of the reference CRM was verified (emulator/control/verify_scratch.py)
    scratch: bool = False


class VerifyRuns:
    """The last `keep` runs (oldest finished ones dropped first); at most `running` at once."""

    def __init__(self, keep: int = 20, running: int = 4) -> None:
        self.keep, self.running = keep, running
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def get(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def recent(self) -> list[Run]:
        """The runs kept, newest first."""
        return list(reversed(self._runs.values()))

    def start(self, prober: Prober, deep: DeepOptions | None = None) -> Run:
        """Start verifying the prober's CRM in the background; the run's id is its marker id."""
        if sum(r.status == "running" for r in self._runs.values()) >= self.running:
            raise TooManyRuns(f"{self.running} verify runs are running already")
        run = Run(id=new_run_id(), crm_url=prober.base_url)
        self._runs[run.id] = run
        self._trim()
        run.task = asyncio.create_task(self._run(run, prober, deep))
        self._tasks.add(run.task)
        run.task.add_done_callback(self._tasks.discard)
        return run

    async def _run(self, run: Run, prober: Prober, deep: DeepOptions | None) -> None:
        started_at, t0 = now_iso(), time.perf_counter()
        verifier: Verifier | None = None
        try:
            verifier = Verifier(prober, run_id=run.id, deep=deep)
            run.report = await verifier.run()
            run.status, run.message = run.report.status, run.report.message
        except asyncio.CancelledError:  # DELETE, a reset or the server stopping
            if verifier is not None:
                run.report = verifier.report(started_at, t0, cancelled=True)
            run.status = "cancelled"
            run.message = run.report.message if run.report else "the run was cancelled"
            raise
        except Exception as exc:  # the run must say so, not a silent dead task
            log.exception("verify run %s crashed", run.id)
            message = f"verify crashed: {exc}"
            run.status = "error"
            run.message = message if verifier is None else verifier.redactor.text(message)
        finally:
            try:
                await asyncio.shield(prober.aclose())
            except Exception:
                log.exception("verify run %s: closing its client failed", run.id)

    async def cancel(self, run: Run) -> bool:
        """Stop a running run and wait (briefly) until its report says so; False when it had
        finished already."""
        if run.status != "running" or run.task is None:
            return False
        run.task.cancel()
        await asyncio.wait([run.task], timeout=CANCEL_WAIT)
        return True

    async def cancel_all(self) -> list[str]:
        """Stop every running run (a reset); answers their ids."""
        running = [r for r in self._runs.values() if r.status == "running"]
        for run in running:
            if run.task is not None:
                run.task.cancel()
        # and the runs that ended but are still closing their clients (a scratch CRM's server)
        tasks = {r.task for r in running if r.task is not None} | set(self._tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_WAIT)
        return [r.id for r in running]

    def _trim(self) -> None:
        finished = [k for k, r in self._runs.items() if r.status != "running"]
        while len(self._runs) > self.keep and finished:
            del self._runs[finished.pop(0)]
