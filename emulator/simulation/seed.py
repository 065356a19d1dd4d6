"""Seeder: members with a fixture conversation start from the state it shows (history.py);
members of the fixtures' ACTIVE campaigns without one start their sequences at the clock start."""

from __future__ import annotations

import sqlite3

from emulator.clock import wall_now
from emulator.fixtures.models import FixtureSet, Message
from emulator.simulation.engine import load_plans, schedule
from emulator.simulation.history import member_state
from emulator.simulation.timeline import parse_ms, to_ms


def seed(conn: sqlite3.Connection, fx: FixtureSet) -> None:
    """Runs after the platform seeder (it reads the campaigns and members it wrote)."""
    steps = {c.id: [s.type for s in c.sequence] for c in fx.campaigns}
    completed = {c.id for c in fx.campaigns if c.status == "COMPLETED"}
    histories: dict[tuple[int, int], list[Message]] = {}
    for conv in fx.conversations:
        histories.setdefault((conv.campaignId, conv.contactId), []).extend(conv.messages)
    conn.executemany(
        "UPDATE campaign_members SET stepIndex = ?, sequenceStatus = ?, engagementStatus = ?,"
        " opens = ?, clicks = ?, replies = ? WHERE campaignId = ? AND contactId = ?",
        [(*member_state(steps.get(campaign, []), messages, campaign in completed),
          campaign, contact)
         for (campaign, contact), messages in histories.items()],
    )
    anchor = parse_ms(fx.clockStart) if fx.clockStart else to_ms(wall_now())
    for plan in load_plans(conn, "WHERE status = 'ACTIVE'").values():
        schedule(conn, plan, anchor)
