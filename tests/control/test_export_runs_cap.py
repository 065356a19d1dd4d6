"""Export runs kept in memory are capped: the oldest finished ones go, running ones stay."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from emulator.control import exports


def run(status: str) -> Any:
    return SimpleNamespace(report=SimpleNamespace(status=status))


def test_the_oldest_finished_runs_go_beyond_the_cap() -> None:
    runs: dict[str, Any] = {"old-running": run("running")}
    runs |= {f"r{i}": run("pass") for i in range(exports.MAX_RUNS + 5)}
    exports._keep_recent(runs)
    assert len(runs) == exports.MAX_RUNS
    assert "old-running" in runs and "r0" not in runs and f"r{exports.MAX_RUNS + 4}" in runs
