"""simulation/campaigns/batch.py: the rows a batch writes."""

from __future__ import annotations

from emulator.simulation.campaigns.batch import Batch, Member
from emulator.store.db import open_sync


def member(campaign: int, contact: int, rowid: int, next_at: str | None) -> Member:
    return Member(
        campaign,
        contact,
        1,
        "Ongoing",
        "Not Started",
        0,
        0,
        0,
        None,
        None,
        None,
        None,
        None,
        None,
        rowid,
        next_at,
    )


def test_member_rows_are_one_a_member_in_rowid_order() -> None:
    conn = open_sync(None)
    try:
        batch = Batch(conn)
        for m in (member(2, 5, 30, "b"), member(1, 9, 10, None), member(1, 3, 20, "a")):
            batch.members[(m.campaign_id, m.contact_id)] = m
        assert batch.member_rows() == [
            (1, "Ongoing", "Not Started", 0, 0, 0, None, 10),
            (1, "Ongoing", "Not Started", 0, 0, 0, "a", 20),
            (1, "Ongoing", "Not Started", 0, 0, 0, "b", 30),
        ]
    finally:
        conn.close()
