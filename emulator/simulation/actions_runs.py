"""Actions runs on the clock: their stored status follows the timeline, and each contact whose
actions ended gets one completion delivery to the run's `webhookUrl` (retried like webhooks).

Completion payload: {"eventType": "ACTIONS_CONTACT_COMPLETED", "timestamp": <end time>,
"data": {"actionsId", "entity", "contactId", "status": COMPLETED|PARTIAL|FAILED,
"actions": [{"type", "status": COMPLETED|FAILED}]}}.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from emulator.simulation.actions_timeline import Timeline
from emulator.simulation.deliveries import ACTIONS, QUEUE_INSERT
from emulator.store.db import Store
from emulator.wire import decode, encode, now_iso, parse_iso

COMPLETION_EVENT = "ACTIONS_CONTACT_COMPLETED"


def schedule(conn: sqlite3.Connection, run_id: int, start: str) -> None:
    """Make a new run progress on the clock from `start` (POST /v1/actions calls this)."""
    conn.execute("INSERT INTO actions_schedule(runId, startAt) VALUES (?, ?)", (run_id, start))


def timeline_of(run_id: int, start: str, actions: str, contact_ids: str) -> Timeline:
    entries: list[dict[str, Any]] = decode(actions, list[dict[str, Any]])
    types = [str(entry.get("type", "")) for entry in entries]
    return Timeline(run_id, parse_iso(start), decode(contact_ids, list[int]), types)


def _completion(timeline: Timeline, index: int, at: str) -> dict[str, Any]:
    results = timeline.contact_results(index)
    status = "COMPLETED" if all(results) else "FAILED" if not any(results) else "PARTIAL"
    return {
        "eventType": COMPLETION_EVENT,
        "timestamp": at,
        "data": {
            "actionsId": timeline.run_id, "entity": "CONTACT",
            "contactId": timeline.contact_ids[index], "status": status,
            "actions": [
                {"type": kind, "status": "COMPLETED" if ok else "FAILED"}
                for kind, ok in zip(timeline.action_types, results, strict=True)
            ],
        },
    }


def _step(conn: sqlite3.Connection, target: datetime) -> None:
    rows = conn.execute(
        "SELECT s.runId, s.startAt, s.contactsDone, r.actions, r.contactIds, r.webhookUrl"
        " FROM actions_schedule s JOIN actions_runs r ON r.id = s.runId"
        " WHERE s.contactsDone < json_array_length(r.contactIds) ORDER BY s.runId"
    ).fetchall()
    for run_id, start, done, actions, contact_ids, url in rows:
        timeline = timeline_of(run_id, start, actions, contact_ids)
        state = timeline.state(target)
        conn.execute(
            "UPDATE actions_runs SET overallStatus = ?, statusCounts = ? WHERE id = ?",
            (state.overallStatus, encode(state.counts).decode(), run_id),
        )
        ended = timeline.ended(target)
        if url:
            queued = []
            for index in range(done, ended):
                at = now_iso(timeline.ends_at(index))
                payload = encode(_completion(timeline, index, at)).decode()
                queued.append((at, ACTIONS, run_id, index, 1, COMPLETION_EVENT, url, payload))
            conn.executemany(QUEUE_INSERT, queued)
        if ended != done:
            conn.execute(
                "UPDATE actions_schedule SET contactsDone = ? WHERE runId = ?", (ended, run_id)
            )


async def step_runs(store: Store, target: datetime) -> None:
    """Bring every unfinished run to `target`: stored status and completion deliveries."""
    await store.write(lambda conn: _step(conn, target))
