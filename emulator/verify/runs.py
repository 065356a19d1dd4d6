"""Verify runs started through the control API: run in the background, kept in a small capped registry.

The registry owns the runs; the control routes only start, read and render them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from emulator.verify.deep_report import DeepOptions
from emulator.verify.probes import new_run_id
from emulator.verify.report import Report
from emulator.verify.runner import Prober, verify

log = logging.getLogger(__name__)
RunStatus = Literal["running", "pass", "fail", "error"]


class TooManyRuns(Exception):
    """As many runs as allowed are running already."""


@dataclass
class Run:
    id: str
    crm_url: str
    status: RunStatus = "running"
    report: Report | None = None
    message: str | None = None


class VerifyRuns:
    """The last `keep` runs (oldest finished ones dropped first); at most `running` at once."""

    def __init__(self, keep: int = 20, running: int = 4) -> None:
        self.keep, self.running = keep, running
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def get(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def start(self, prober: Prober, deep: DeepOptions | None = None) -> Run:
        """Start verifying the prober's CRM in the background; the run's id is its marker id."""
        if sum(r.status == "running" for r in self._runs.values()) >= self.running:
            raise TooManyRuns(f"{self.running} verify runs are running already")
        run = Run(id=new_run_id(), crm_url=prober.base_url)
        self._runs[run.id] = run
        self._trim()
        task = asyncio.create_task(self._run(run, prober, deep))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run

    async def _run(self, run: Run, prober: Prober, deep: DeepOptions | None) -> None:
        try:
            run.report = await verify(prober, run_id=run.id, deep=deep)
            run.status, run.message = run.report.status, run.report.message
        except Exception as exc:  # the run must say so, not a silent dead task
            log.exception("verify run %s crashed", run.id)
            run.status, run.message = "error", f"verify crashed: {exc}"

    def _trim(self) -> None:
        finished = [k for k, r in self._runs.items() if r.status != "running"]
        while len(self._runs) > self.keep and finished:
            del self._runs[finished.pop(0)]
