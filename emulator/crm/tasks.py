"""Tasks of the reference CRM and their one state: `completed`, with `completedAt` set iff true.

Completing a completed task keeps its first `completedAt`; `completed: false` reopens a task
and clears `completedAt` (the spec does not show that transition; this is the CRM's choice).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from emulator.crm.records import Record, dumps, loads, next_ids
from emulator.crm.service import chunks, marks
from emulator.store.db import Store

TASK_FIELDS = ("subject", "description", "type", "ownerId", "dueDate", "contactId", "companyId")
STATE_FIELDS = ("id", "completed", "completedAt")
_COLUMNS = "id, record, completed, completedAt"
# A call on at most this many tasks is brief for the store (`Store.read`/`write`): it runs on
# the event loop's thread when the database thread is idle, without the hop there and back
# (~75 us of CPU a hop, more than such a statement; the exporter sends one POST /tasks per task).
BRIEF_TASKS = 100


def task_view(row: tuple[Any, ...]) -> dict[str, Any]:
    """The full task: id, the documented fields (null when not sent), extra fields, state."""
    record = loads(row[1])
    task: dict[str, Any] = {"id": row[0], **{f: record.get(f) for f in TASK_FIELDS}}
    task.update(record)
    task["completed"] = bool(row[2])
    task["completedAt"] = row[3]
    return task


def next_state(completed_at: str | None, completed: bool, now: str) -> str | None:
    """`completedAt` after setting `completed` (None means not completed)."""
    if not completed:
        return None
    return completed_at or now


def _fields(body: Record) -> Record:
    return {k: v for k, v in body.items() if k not in STATE_FIELDS}


def insert_tasks(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Rows of (id, record, completed, completedAt, createdAt, updatedAt); the one writer of
    crm_tasks' new rows (the seed calls it too)."""
    conn.executemany("INSERT INTO crm_tasks VALUES (?, ?, ?, ?, ?, ?)", rows)


async def create_task(db: Store, body: Record, now: str) -> dict[str, Any]:
    """A new task, open whatever the body says (the spec: created with `completed` false)."""
    record = _fields(body)

    def write(conn: sqlite3.Connection) -> tuple[Any, ...]:
        (task_id,) = next_ids(conn, "crm-task-", 1)
        row = (task_id, dumps(record), 0, None)
        insert_tasks(conn, [(*row, now, now)])
        return row

    return task_view(await db.write(write, brief=True))


def _select(conn: sqlite3.Connection, ids: list[str]) -> dict[str, tuple[Any, ...]]:
    rows: dict[str, tuple[Any, ...]] = {}
    for part in chunks(list(dict.fromkeys(ids))):
        sql = f"SELECT {_COLUMNS} FROM crm_tasks WHERE id IN ({marks(len(part))})"
        rows.update((row[0], tuple(row)) for row in conn.execute(sql, part))
    return rows


async def get_tasks(db: Store, ids: list[str]) -> list[dict[str, Any]]:
    """The tasks of `ids` in the order asked, each once; unknown ids are left out."""
    rows = await db.read(lambda conn: _select(conn, ids), brief=len(ids) <= BRIEF_TASKS)
    return [task_view(rows[i]) for i in dict.fromkeys(ids) if i in rows]


async def set_completed(
    db: Store, ids: list[str], completed: bool, now: str, changes: Record | None = None
) -> list[dict[str, Any]]:
    """Complete (or reopen) the known tasks of `ids`, merging `changes` into each; answer them."""

    def write(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
        rows = _select(conn, ids)
        updated = []
        for task_id in dict.fromkeys(ids):
            row = rows.get(task_id)
            if row is None:
                continue
            record = row[1] if not changes else dumps({**loads(row[1]), **_fields(changes)})
            updated.append((task_id, record, int(completed), next_state(row[3], completed, now)))
        conn.executemany(
            "UPDATE crm_tasks SET record = ?, completed = ?, completedAt = ?, updatedAt = ?"
            " WHERE id = ?",
            [(r[1], r[2], r[3], now, r[0]) for r in updated],
        )
        return updated

    return [task_view(row) for row in await db.write(write, brief=len(ids) <= BRIEF_TASKS)]


async def delete_task(db: Store, task_id: str) -> dict[str, Any] | None:
    """Forget a task (what a CRM user deleting it does); answers it, None when there was none."""

    def delete(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
        row = _select(conn, [task_id]).get(task_id)
        conn.execute("DELETE FROM crm_tasks WHERE id = ?", (task_id,))
        return row

    row = await db.write(delete)
    return None if row is None else task_view(row)
