"""Export runs started through the control API, kept in a capped registry a reset clears."""

from __future__ import annotations

import asyncio

from emulator.exporter.run import Exporter

MAX_RUNS = 50  # export runs kept in memory; beyond it the oldest finished one goes


class ExportRuns:
    """The last `keep` export runs (a running one is never dropped) and their tasks."""

    def __init__(self, keep: int = MAX_RUNS) -> None:
        self.keep = keep
        self.runs: dict[str, Exporter] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def add(self, exporter: Exporter) -> None:
        self.runs[exporter.id] = exporter
        finished = [key for key, run in self.runs.items() if run.report.status != "running"]
        for key in finished[: max(0, len(self.runs) - self.keep)]:  # insertion order: oldest first
            del self.runs[key]

    def get(self, export_id: str) -> Exporter | None:
        return self.runs.get(export_id)

    def watch(self, task: asyncio.Task[None]) -> None:
        """Keep a run's task until it ends (the server cancels the ones left when it stops)."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def clear(self) -> None:
        """After a reset the reports describe a state that is gone: forget the finished runs
        (a running export holds the state, so no reset happens while one runs)."""
        for key in [k for k, run in self.runs.items() if run.report.status != "running"]:
            del self.runs[key]
