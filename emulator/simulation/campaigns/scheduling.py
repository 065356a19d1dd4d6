"""Where members stand on their timelines: campaigns' plans, scheduling members from an anchor,
the next due item, and campaigns whose members are all done."""

from __future__ import annotations

import sqlite3
from typing import Any

from emulator.platform import campaign_tables, engagement
from emulator.simulation.campaigns.timeline import Plan, iso, parse_ms


class SimulationError(Exception):
    """A start, stop or injection that cannot happen: `status` says which HTTP answer fits."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


def load_plans(
    conn: sqlite3.Connection, where: str = "", params: tuple[Any, ...] = ()
) -> dict[int, Plan]:
    return {
        row[0]: Plan.from_row(*row)
        for row in conn.execute(
            "SELECT id, name, status, senderIdentityId, seed, sequence, outcomeRates"
            f" FROM campaigns {where}",
            params,
        )
    }


def schedule(conn: sqlite3.Connection, plan: Plan, anchor_ms: int) -> int:
    """Give every not-yet-scheduled member of `plan` without a conversation in it a timeline
    from `anchor_ms` (fixture histories are left as they are); answers how many.

    Runs at seeding time too, with the indexes dropped: hence sets, not NOT EXISTS."""
    taken = {
        c
        for (c,) in conn.execute(
            "SELECT contactId FROM simulation_members WHERE campaignId = ?", (plan.id,)
        )
    }
    first = not taken  # no member of it scheduled before
    taken.update(
        c
        for (c,) in conn.execute(
            "SELECT contactId FROM conversations WHERE campaignId = ?", (plan.id,)
        )
    )
    ids = [
        c
        for (c,) in conn.execute(
            "SELECT contactId FROM campaign_members WHERE campaignId = ?"
            " AND sequenceStatus = 'Not Started' ORDER BY contactId",
            (plan.id,),
        )
        if c not in taken
    ]
    anchor = iso(anchor_ms)
    # A fresh member's first item is step 0 (or, for an empty sequence, finishing at once).
    due = iso(anchor_ms + (plan.steps[0].delaySeconds * 1000 if plan.steps else 0))
    campaign_tables.insert_simulation_members(conn, plan.id, anchor, ids)
    engagement.schedule_campaign_members(conn, plan.id, due, ids, first=first)
    return len(ids)


def complete_finished(conn: sqlite3.Connection, campaign_ids: set[int]) -> list[int]:
    """ACTIVE campaigns among these with no member left to move become COMPLETED."""
    done = []
    ids = sorted(campaign_ids)
    moving = engagement.moving(conn, ids)
    for cid in ids:
        if moving[cid] == 0 and campaign_tables.set_campaign_status(
            conn, cid, "COMPLETED", only_from="ACTIVE"
        ):
            done.append(cid)
    return done


def first_due(conn: sqlite3.Connection) -> int | None:
    """The time of the first item due in an ACTIVE campaign: the first entry of the
    nextActionAt index that is one (`+`: SQLite walks that index in order and stops there,
    where a join on campaigns would weigh every scheduled member)."""
    row = conn.execute(
        "SELECT nextActionAt FROM campaign_members WHERE nextActionAt IS NOT NULL"
        " AND +campaignId IN (SELECT id FROM campaigns WHERE status = 'ACTIVE')"
        " ORDER BY nextActionAt LIMIT 1"
    ).fetchone()
    return parse_ms(row[0]) if row and row[0] else None
