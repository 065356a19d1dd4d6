"""simulation/campaigns/batch.py: the rows a batch writes."""

from __future__ import annotations

from emulator.simulation.campaigns.batch import Batch, Member, read_names, take_names
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
        rowid,
        next_at=next_at,
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


def test_members_get_their_contacts_names_read_apart() -> None:
    """What a member's messages name (its contact's first name, its company's name, its
    network profile URL) is read for many contacts at once, apart from the due query: each
    member gets its own contact's; a contact without a company has no company name, and a
    member whose contact is gone keeps none, as the due query's LEFT JOINs gave."""
    conn = open_sync(None)
    try:
        conn.execute(
            "INSERT INTO companies (id, name, createdAt, updatedAt) VALUES (4, 'Acme', 't', 't')"
        )
        conn.executemany(
            "INSERT INTO contacts (id, firstName, companyId, networkProfileUrl, createdAt,"
            " updatedAt) VALUES (?, ?, ?, ?, 't', 't')",
            [(1, "Ada", 4, "https://network/ada"), (2, None, None, None), (3, "Cy", 99, None)],
        )
        members = [member(7, c, r, None) for c, r in ((3, 10), (1, 11), (2, 12), (5, 13), (1, 14))]
        members[-1].campaign_id = 8  # one contact in two campaigns
        take_names(members, read_names(conn, [1, 2, 3, 5]))
        assert [(m.contact_id, m.first_name, m.company, m.profile_url) for m in members] == [
            (3, "Cy", None, None),  # its company is not there
            (1, "Ada", "Acme", "https://network/ada"),
            (2, None, None, None),
            (5, None, None, None),  # not a contact (any more)
            (1, "Ada", "Acme", "https://network/ada"),
        ]
        assert read_names(conn, []) == "[]"
    finally:
        conn.close()
