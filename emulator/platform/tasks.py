"""Platform tasks (`platform_tasks`): one per campaign member and TASK step, keyed by
(contactId, campaignId, stepIndex); created, completed, and marked as the CRM learns them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from emulator.platform.errors import InvalidField
from emulator.platform.sequence_text import task_subject
from emulator.platform.sql import only, steps
from emulator.store.many_rows import many_rows

# A sequence task buffered by the simulation: (id, contactId, campaignId, stepIndex, subject,
# type, dueDate).
TaskRow = tuple[int, int, int, int, str, str | None, str | None]


def insert_fixture_tasks(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Seeded tasks: (id, contactId, campaignId, stepIndex, subject, type, dueDate, completed,
    completedAt, crmTaskId)."""
    conn.executemany(
        "INSERT INTO platform_tasks(id, contactId, campaignId, stepIndex, subject, type,"
        " dueDate, completed, completedAt, crmTaskId) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def ensure_for_members(conn: sqlite3.Connection, contacts: Sequence[int] | None = None) -> int:
    """A platform task for every TASK step a campaign member (of `contacts` when given) has
    passed; answers rows added."""
    extra, params = only("m.contactId", contacts)
    added = 0
    for cid, name, sequence in conn.execute("SELECT id, name, sequence FROM campaigns").fetchall():
        for index, step in enumerate(steps(sequence)):
            if step.get("type") != "TASK":
                continue
            members = conn.execute(
                "SELECT m.contactId, c.firstName, co.name FROM campaign_members m"
                " JOIN contacts c ON c.id = m.contactId LEFT JOIN companies co ON co.id = c.companyId"
                f" WHERE m.campaignId = ? AND m.stepIndex > ?{extra} AND NOT EXISTS ("
                "  SELECT 1 FROM platform_tasks t WHERE t.contactId = m.contactId"
                "  AND t.campaignId = m.campaignId AND t.stepIndex = ?)",
                (cid, index, *params, index),
            ).fetchall()
            conn.executemany(
                "INSERT INTO platform_tasks(contactId, campaignId, stepIndex, subject, type)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        contact,
                        cid,
                        index,
                        task_subject(
                            step.get("taskSubject"), step.get("taskType"), name, first, company
                        ),
                        step.get("taskType"),
                    )
                    for contact, first, company in members
                ],
            )
            added += len(members)
    return added


def find(conn: sqlite3.Connection, contact: int, campaign: int, step: int) -> int | None:
    """The id of a member's task of one TASK step, if it exists."""
    row = conn.execute(
        "SELECT id FROM platform_tasks WHERE contactId = ? AND campaignId = ? AND stepIndex = ?",
        (contact, campaign, step),
    ).fetchone()
    return None if row is None else int(row[0])


def insert_sequence_tasks(conn: sqlite3.Connection, rows: Sequence[TaskRow]) -> None:
    """Tasks the simulation's TASK steps made (ids handed out by the caller's batch)."""
    many_rows(
        conn,
        "INSERT INTO platform_tasks(id, contactId, campaignId, stepIndex, subject, type, dueDate)"
        " VALUES ",
        rows,
    )


def create(
    conn: sqlite3.Connection,
    contact: int,
    campaign: int,
    step_index: int | None,
    subject: str | None,
    due: str | None,
) -> int:
    """Add a member's task as a campaign's TASK step would (the campaign's first TASK step when
    `step_index` is None); raises InvalidField naming the offending field."""
    row = conn.execute("SELECT name, sequence FROM campaigns WHERE id = ?", (campaign,)).fetchone()
    if row is None:
        raise InvalidField("campaignId", f"unknown campaign {campaign}")
    member = conn.execute(
        "SELECT c.firstName, co.name FROM contacts c LEFT JOIN companies co ON co.id = c.companyId"
        " WHERE c.id = ?",
        (contact,),
    ).fetchone()
    if member is None:
        raise InvalidField("contactId", f"unknown contact {contact}")
    sequence = steps(row[1] or "[]")
    task_steps = [i for i, s in enumerate(sequence) if s.get("type") == "TASK"]
    index = step_index if step_index is not None else (task_steps[0] if task_steps else None)
    if index is None or index not in task_steps:
        raise InvalidField("stepIndex", "the campaign has no TASK step there")
    if find(conn, contact, campaign, index) is not None:
        raise InvalidField("stepIndex", "this member already has that task")
    step = sequence[index]
    text = task_subject(subject or step.get("taskSubject"), step.get("taskType"), row[0], *member)
    cur = conn.execute(
        "INSERT INTO platform_tasks(contactId, campaignId, stepIndex, subject, type, dueDate)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (contact, campaign, index, text, step.get("taskType"), due),
    )
    return int(cur.lastrowid or 0)


def complete(conn: sqlite3.Connection, ids: Sequence[int], now: str) -> None:
    """Complete open tasks on the platform (the next export completes them on the CRM)."""
    conn.executemany(
        "UPDATE platform_tasks SET completed = 1, completedAt = ? WHERE id = ? AND completed = 0",
        [(now, i) for i in ids],
    )


def set_crm_ids(conn: sqlite3.Connection, rows: Iterable[tuple[str, int]]) -> None:
    """(CRM task id, task id): the CRM created these tasks."""
    conn.executemany(
        "UPDATE platform_tasks SET crmTaskId = ? WHERE id = ? AND crmTaskId IS NULL", rows
    )


def mark_crm_completed(conn: sqlite3.Connection, ids: Iterable[int]) -> None:
    """The CRM completed these tasks at the platform's request."""
    conn.executemany("UPDATE platform_tasks SET crmCompleted = 1 WHERE id = ?", [(t,) for t in ids])


def complete_from_crm(
    conn: sqlite3.Connection, completed: Sequence[tuple[int, str | None]], now: str
) -> None:
    """Tasks completed on the CRM side become completed on the platform (keeping a platform
    completion time when there is one)."""
    conn.executemany(
        "UPDATE platform_tasks SET completed = 1, crmCompleted = 1,"
        " completedAt = coalesce(completedAt, ?) WHERE id = ?",
        [(at or now, task_id) for task_id, at in completed],
    )
