"""Reads of the simulation's event log (the control API and the dashboard list it)."""

from __future__ import annotations

from typing import Any

import msgspec

from emulator.simulation.campaigns.injection import InjectedOut
from emulator.store.db import Store


class EventOut(InjectedOut):
    """One row of the event log (`data`: the event's payload fields)."""

    data: dict[str, Any]


async def read_events(
    store: Store,
    after: int,
    limit: int,
    campaign_id: int | None = None,
    contact_id: int | None = None,
    event_type: str | None = None,
) -> list[EventOut]:
    """Up to `limit` events with an id above `after`, oldest first, matching every filter given."""
    where: list[str] = ["id > ?"]
    params: list[Any] = [after]
    for column, value in (
        ("campaignId", campaign_id),
        ("contactId", contact_id),
        ("type", event_type),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    rows = await store.fetchall(
        "SELECT id, type, contactId, campaignId, messageId, occurredAt, data FROM events"
        f" WHERE {' AND '.join(where)} ORDER BY id LIMIT ?",
        (*params, limit),
    )
    return [
        EventOut(
            id=r[0],
            type=r[1],
            contactId=r[2],
            campaignId=r[3],
            messageId=r[4],
            occurredAt=r[5],
            data=msgspec.json.decode(r[6]),
        )
        for r in rows
    ]


async def event_types(store: Store) -> list[str]:
    """The event types the log holds, for a filter's choices."""
    return [r[0] for r in await store.fetchall("SELECT DISTINCT type FROM events ORDER BY type")]


async def count_events(store: Store) -> int:
    row = await store.fetchone("SELECT count(*) FROM events")
    return int(row[0]) if row else 0
