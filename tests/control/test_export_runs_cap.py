"""Export runs kept in memory are capped (the oldest finished ones go, running ones stay),
and a reset forgets them: their reports describe a state that is gone."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from emulator.exporter.runs import MAX_RUNS, ExportRuns
from tests.hostile.harness import served, wait_export


def run(export_id: str, status: str) -> Any:
    return SimpleNamespace(id=export_id, report=SimpleNamespace(status=status))


def test_the_oldest_finished_runs_go_beyond_the_cap() -> None:
    runs = ExportRuns()
    runs.add(run("old-running", "running"))
    for i in range(MAX_RUNS + 5):
        runs.add(run(f"r{i}", "pass"))
    assert len(runs.runs) == MAX_RUNS
    assert runs.get("old-running") is not None and runs.get("r0") is None
    assert runs.get(f"r{MAX_RUNS + 4}") is not None


def test_clear_forgets_finished_runs_and_keeps_a_running_one() -> None:
    runs = ExportRuns()
    runs.add(run("done", "pass"))
    runs.add(run("going", "running"))
    runs.clear()
    assert list(runs.runs) == ["going"]


def test_a_reset_clears_the_export_runs() -> None:
    with served("--rate-limit", "off") as client:
        started = client.post("/_emulator/exports")
        assert started.status_code == 202, started.text
        export_id = started.json()["id"]
        wait_export(client, export_id)
        assert client.get(f"/_emulator/exports/{export_id}").status_code == 200
        assert client.post("/_emulator/reset").status_code == 200
        gone = client.get(f"/_emulator/exports/{export_id}")
        assert gone.status_code == 404, gone.text
