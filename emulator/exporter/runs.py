"""Export runs started through the control API, kept in a capped registry a reset clears."""

from __future__ import annotations

import asyncio

from emulator.exporter.run import Exporter

MAX_RUNS = 50  # export runs kept in memory; beyond it the oldest finished one goes
CANCEL_WAIT = 5.0  # seconds a cancel waits for the run to stop (it stops at its next await)


class ExportRuns:
    """The last `keep` export runs (a running one is never dropped) and their tasks."""

    def __init__(self, keep: int = MAX_RUNS) -> None:
        self.keep = keep
        self.runs: dict[str, Exporter] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._task_of: dict[str, asyncio.Task[None]] = {}  # running exports' tasks by id
        self._kept: set[str] = set()  # cancelled by `cancel_all`: kept by the next `clear`

    def add(self, exporter: Exporter) -> None:
        self.runs[exporter.id] = exporter
        finished = [key for key, run in self.runs.items() if run.report.status != "running"]
        for key in finished[: max(0, len(self.runs) - self.keep)]:  # insertion order: oldest first
            del self.runs[key]

    def get(self, export_id: str) -> Exporter | None:
        return self.runs.get(export_id)

    def watch(self, task: asyncio.Task[None], export_id: str | None = None) -> None:
        """Keep a run's task until it ends (the server cancels the ones left when it stops)."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        if export_id is not None:
            self._task_of[export_id] = task
            task.add_done_callback(lambda _: self._task_of.pop(export_id, None))

    async def cancel(self, export_id: str, reason: str) -> bool:
        """Stop a running export and wait (briefly) until its report says so; False when it
        was not running."""
        return bool(await self._cancel([export_id], reason))

    async def cancel_all(self, reason: str) -> list[str]:
        """Stop every running export (a reset); answers their ids. Their reports outlive the
        reset that follows: they tell what the reset interrupted."""
        cancelled = await self._cancel(list(self._task_of), reason)
        self._kept.update(cancelled)
        return cancelled

    async def _cancel(self, ids: list[str], reason: str) -> list[str]:
        tasks = {i: self._task_of[i] for i in ids if i in self._task_of}
        for export_id, task in tasks.items():
            exporter = self.runs.get(export_id)
            if exporter is not None and exporter.cancel_reason is None:
                exporter.cancel_reason = reason
            task.cancel()
        if tasks:
            await asyncio.wait(tasks.values(), timeout=CANCEL_WAIT)
        return list(tasks)

    def clear(self) -> None:
        """After a reset the reports describe a state that is gone: forget the finished runs
        (a running export holds the state, so no reset happens while one runs; a reset cancels
        it first, and its report stays)."""
        kept, self._kept = self._kept, set()
        for key in [k for k, run in self.runs.items() if run.report.status != "running"]:
            if key not in kept:
                del self.runs[key]
