"""Which contacts each write may have shown differently on /v1: the lowest such id, per version.

A contact as /v1 lists it is its `contacts` row, the `ref` of its company and the link
template of `crm_connection`; which contacts a listing holds also depends on `list_members`
and `lists`. TEMP triggers on the store's own connection (never in the schema, so seeds on
other connections do not pay for them) note, inside every transaction, the lowest contact id
any write to these tables touched: they catch every writer, whatever module it is in. The
store collects that id as the transaction commits and logs it under the version it bumps to,
so a cached page can ask "did any write since version v touch a contact at or below id n?".
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_right

# Every contact may look different (a new link template, a restored database, a lost log).
ALL = -(2**63)


def _note(name: str, event: str, table: str, contact_id: str, when: str = "") -> str:
    """A trigger that lowers the noted id to `contact_id` (skipped when it is not lower, so a
    bulk write notes its lowest row once and its other rows cost one comparison)."""
    lower = f"coalesce({contact_id} < (SELECT low FROM temp.contact_watch), 1)"  # none yet: 1
    return (
        f"CREATE TEMP TRIGGER IF NOT EXISTS {name} AFTER {event} ON main.{table}"
        f" WHEN {lower}{f' AND ({when})' if when else ''}"
        f" BEGIN {_lower(contact_id, 0)} END;"
    )


def _lower(contact_id: str, added: int) -> str:
    """SQL: note `contact_id` (the noted id becomes the lower of the two) and `added` more
    contacts (a create: +1, a delete: -1) in one statement."""
    return (
        f"INSERT INTO contact_watch VALUES (0, {contact_id}, {added}) ON CONFLICT(k) DO UPDATE"
        f" SET low = min(low, excluded.low), added = added + excluded.added;"
    )


def _counted(name: str, event: str, contact_id: str, added: int) -> str:
    """A trigger of a contact's insert or delete: its id and the count in one statement
    (a create used to run two triggers, and its collect one statement more to reset the
    count: ~5 us of its ~60 in the transaction)."""
    return (
        f"CREATE TEMP TRIGGER IF NOT EXISTS {name} AFTER {event} ON main.contacts"
        f" BEGIN {_lower(contact_id, added)} END;"
    )


def _company(name: str, event: str, *ids: str, when: str = "") -> str:
    """A company's contacts are looked up when the write is collected: a bulk load drops the
    contacts_company index, and a lookup per company row would then scan the table."""
    notes = " ".join(f"INSERT OR IGNORE INTO company_watch VALUES ({i});" for i in ids)
    return (
        f"CREATE TEMP TRIGGER IF NOT EXISTS {name} AFTER {event} ON main.companies"
        f"{f' WHEN {when}' if when else ''} BEGIN {notes} END;"
    )


WATCH_SQL = "\n".join(
    [
        # The lowest contact id noted, and the contacts added less those deleted: a cached
        # page of the whole table whose contacts no write touched gets its new `total` from
        # this, without reading anything.
        "CREATE TEMP TABLE IF NOT EXISTS contact_watch (k INTEGER PRIMARY KEY CHECK (k = 0),"
        " low INTEGER NOT NULL, added INTEGER NOT NULL);",
        "CREATE TEMP TABLE IF NOT EXISTS company_watch (id INTEGER PRIMARY KEY);",
        _counted("watch_contact_insert", "INSERT", "NEW.id", 1),
        _note("watch_contact_update", "UPDATE", "contacts", "min(OLD.id, NEW.id)"),
        _counted("watch_contact_delete", "DELETE", "OLD.id", -1),
        # `ref` (a STORED generated column) is what a contact embeds of its company.
        _company("watch_company_insert", "INSERT", "NEW.id"),
        _company(
            "watch_company_update", "UPDATE", "OLD.id", "NEW.id", when="OLD.ref IS NOT NEW.ref"
        ),
        _company("watch_company_delete", "DELETE", "OLD.id"),
        # The contact link template (health checks, written often, change no link).
        _note("watch_connection_insert", "INSERT", "crm_connection", str(ALL)),
        _note(
            "watch_connection_update",
            "UPDATE",
            "crm_connection",
            str(ALL),
            when="OLD.settings IS NOT NEW.settings OR OLD.id IS NOT NEW.id",
        ),
        _note("watch_connection_delete", "DELETE", "crm_connection", str(ALL)),
        # Members decide a listId listing (a company list's entity ids are noted too: that
        # only drops more); a list's existence and type decide whether it answers at all.
        _note("watch_member_insert", "INSERT", "list_members", "NEW.entityId"),
        _note("watch_member_update", "UPDATE", "list_members", "min(OLD.entityId, NEW.entityId)"),
        _note("watch_member_delete", "DELETE", "list_members", "OLD.entityId"),
        _note("watch_list_insert", "INSERT", "lists", str(ALL)),
        _note("watch_list_update", "UPDATE", "lists", str(ALL)),
        _note("watch_list_delete", "DELETE", "lists", str(ALL)),
    ]
)


def install(conn: sqlite3.Connection) -> None:
    """Create the watch on this connection (its TEMP triggers outlive a restore of `main`)."""
    conn.executescript(WATCH_SQL)


# What a write noted, in one statement: (lowest contact id, contacts added less deleted,
# whether contact_watch and company_watch hold a row). Each statement on the database
# thread waits to get the GIL back from a busy event loop: a create used to take seven.
NOTED_SQL = (
    "SELECT (SELECT min(low) FROM (SELECT low FROM temp.contact_watch UNION ALL"
    " SELECT (SELECT min(id) FROM main.contacts WHERE companyId = w.id)"  # one index probe
    " FROM temp.company_watch w)),"
    " coalesce((SELECT added FROM temp.contact_watch), 0),"
    " EXISTS (SELECT 1 FROM temp.contact_watch), EXISTS (SELECT 1 FROM temp.company_watch)"
)


def collect(
    conn: sqlite3.Connection, noted: tuple[int | None, int, int, int] | None = None
) -> tuple[int | None, int]:
    """(The lowest contact id noted since the last collect (None: no contact touched),
    contacts added less deleted), and start over; inside the writing transaction, so a
    rolled-back write notes nothing. `noted`: the row of NOTED_SQL, if already read."""
    low, added, contacts, companies = noted or conn.execute(NOTED_SQL).fetchone()
    if contacts:
        conn.execute("DELETE FROM temp.contact_watch")
    if companies:
        conn.execute("DELETE FROM temp.company_watch")
    return (None if low is None else int(low)), int(added)


class ChangeLog:
    """(version, lowest contact id, contacts added less deleted) of the last `size` writes
    that touched contacts.

    A write that touched none is not logged; a version older than the oldest one dropped
    answers ALL (its writes are no longer known). Both questions take a binary search, not a
    walk of every write since (a page kept 100 writes ago is asked about on every read).
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._forgotten = -1  # writes up to this version may be missing from the log
        # Every logged write from `_start` on: its version and the running sum of `added`
        # through it (`_base`: the sum before index 0).
        self._versions: list[int] = []
        self._sums: list[int] = []
        self._start = 0
        self._base = 0
        # The lowest id of the writes after any version: writes whose id is not below a later
        # write's drop out, so ids rise and the first entry after a version is the lowest.
        self._low_versions: list[int] = []
        self._lows: list[int] = []
        self._last_all = -1  # the version of the last write of unknown extent

    def note(self, version: int, low: int | None, added: int = 0) -> None:
        if low is None:  # a write that adds or deletes a contact notes its id
            return
        self._versions.append(version)
        self._sums.append((self._sums[-1] if self._sums else self._base) + added)
        while self._lows and self._lows[-1] >= low:
            self._lows.pop()
            self._low_versions.pop()
        self._lows.append(low)
        self._low_versions.append(version)
        if low == ALL:
            self._last_all = version
        if len(self._versions) - self._start > self._size:
            self._forgotten = self._versions[self._start]
            self._start += 1
            if self._start >= self._size:  # drop what no question reaches any more
                self._base = self._sums[self._start - 1]
                del self._versions[: self._start], self._sums[: self._start]
                self._start = 0
                cut = bisect_right(self._low_versions, self._forgotten)
                del self._low_versions[:cut], self._lows[:cut]

    def lowest_since(self, version: int) -> int | None:
        """The lowest contact id any write after `version` touched; None if none did."""
        if version < self._forgotten:
            return ALL
        i = bisect_right(self._low_versions, version)
        return self._lows[i] if i < len(self._lows) else None

    def added_since(self, version: int) -> int | None:
        """Contacts added less deleted by the writes after `version`; None if not known."""
        if version < self._forgotten or version < self._last_all:
            return None
        if not self._sums:
            return 0
        i = bisect_right(self._versions, version, self._start)
        before = self._sums[i - 1] if i > 0 else self._base
        return self._sums[-1] - before
