"""Changes to one contact or company row the caller already read (the actions runs' effects)."""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from emulator.platform import companies, contacts
from emulator.platform.keys import company_keys, contact_keys

Table = Literal["contacts", "companies"]
_COMPANY_KEY_SOURCES = frozenset({"name", "domain", "website", "companyNetworkUrl"})


def apply(
    conn: sqlite3.Connection, table: Table, row: dict[str, Any], changes: dict[str, Any], at: str
) -> None:
    """Write what differs, with the match keys it moves and updatedAt moved to `at` (never
    backwards); keep `row` current."""
    changed = {k: v for k, v in changes.items() if row.get(k) != v}
    if not changed:
        return
    if table == "contacts":
        changed |= contact_keys(changed)
    elif _COMPANY_KEY_SOURCES & changed.keys():
        changed |= company_keys(row | changed)
    changed["updatedAt"] = max(at, row["updatedAt"])
    owner = contacts if table == "contacts" else companies
    owner.set_columns(conn, row["id"], changed)
    row.update(changed)
