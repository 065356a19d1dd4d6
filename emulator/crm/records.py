"""Pure rules of the CRM's contacts and companies: match keys, ids, owned values, sync-back.

No I/O here: the service and the seeder share these, and Hypothesis tests them directly.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET, UnsetType

from emulator.fixtures.models import SyncBackMode
from emulator.normalise import domain_key, email_key, name_key, phone_key, url_key
from emulator.part_a import SYNC_PROPERTIES
from emulator.store.many_rows import many_rows
from emulator.wire import decode, encode

Record = dict[str, Any]
# Candidate keys of a record, per match column in priority order.
Candidates = tuple[tuple[str | None, ...], ...]

TIERS = ("Tier 1", "Tier 2", "Tier 3")
STAGES = ("Lead", "MQL", "SQL", "Opportunity", "Customer")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def company_candidates(item: Record) -> Candidates:
    domain = domain_key(_text(item.get("domain"))) or domain_key(_text(item.get("website")))
    return (
        (domain,),
        (url_key(_text(item.get("companyNetworkUrl"))),),
        (name_key(_text(item.get("name"))),),
    )


def contact_candidates(item: Record) -> Candidates:
    return (
        (email_key(_text(item.get("email"))),),
        (url_key(_text(item.get("networkUrl"))),),
        (phone_key(_text(item.get("phone"))), phone_key(_text(item.get("mobilePhone")))),
    )


def _company_owned(h: int, owner: str | None) -> Record:
    return {
        "accountTier": TIERS[h % len(TIERS)],
        "totalDeals": (h >> 4) % 13,
        "lifetimeValue": (h >> 8) % 500 * 100,
        "accountOwner": owner,
    }


def _contact_owned(h: int, owner: str | None) -> Record:
    return {
        "leadScore": h % 101,
        "lifecycleStage": STAGES[(h >> 8) % len(STAGES)],
        "owner": owner,
        "dealValue": (h >> 12) % 400 * 250,
    }


@dataclass(frozen=True)
class Kind:
    """One record kind of the CRM: its table, id prefix, match columns and owned fields."""

    name: str
    table: str
    prefix: str
    key_columns: tuple[str, str, str]
    candidates: Callable[[Record], Candidates]
    owned: tuple[str, ...]
    owner_field: str
    owned_values: Callable[[int, str | None], Record]

    def keys(self, record: Record) -> tuple[str | None, ...]:
        """The stored key of each match column: its first non-empty candidate."""
        keys: list[str | None] = []
        for cands in self.candidates(record):  # plain loops: this runs for every record sent
            keys.append(
                cands[0] if cands[0] or len(cands) == 1 else next(filter(None, cands), None)
            )
        return tuple(keys)

    def fill_owned(self, crm_id: str, record: Record, user_ids: list[str]) -> None:
        """Give the fields this CRM owns deterministic values from `crm_id` where none was sent."""
        h = zlib.crc32(crm_id.encode())
        owner = _text(record.get("ownerId"))
        if owner is None and user_ids:
            owner = user_ids[h % len(user_ids)]
        for field, value in self.owned_values(h, owner).items():
            if field not in record and value is not None:
                record[field] = value


COMPANIES = Kind(
    name="companies",
    table="crm_companies",
    prefix="crm-co-",
    key_columns=("domainKey", "networkUrlKey", "nameKey"),
    candidates=company_candidates,
    owned=("accountTier", "totalDeals", "lifetimeValue", "accountOwner"),
    owner_field="accountOwner",
    owned_values=_company_owned,
)
CONTACTS = Kind(
    name="contacts",
    table="crm_contacts",
    prefix="crm-ct-",
    key_columns=("emailKey", "networkUrlKey", "phoneKey"),
    candidates=contact_candidates,
    owned=("leadScore", "lifecycleStage", "owner", "dealValue"),
    owner_field="owner",
    owned_values=_contact_owned,
)
KINDS = {k.name: k for k in (COMPANIES, CONTACTS)}


def sync_properties(
    mode: SyncBackMode, kind: Kind, record: Record, item: Record | None = None
) -> Record | UnsetType:
    """The `properties` of a sync result under the CRM's sync-back mode (UNSET: no key).

    `record` is what the CRM stores for the match, `item` the sync request's item (the
    platform's values now). Under the platform's null rule every syncable name absent from
    `properties` is cleared, so "complete" answers all of them: the CRM's own fields from
    `record`, every other one as the platform just sent it; "owned" answers its own fields
    only, which clears the rest.
    """
    if mode == "none":
        return UNSET
    if mode == "all":
        return dict(record)
    if mode == "nulls":
        # Every other owned field comes back null: the platform must clear those.
        return {f: None if i % 2 else record.get(f) for i, f in enumerate(kind.owned)}
    owned = {f: record[f] for f in kind.owned if record.get(f) is not None}
    if mode == "complete":
        return platform_values(kind, item or {}) | owned
    return owned or UNSET


def platform_values(kind: Kind, item: Record) -> Record:
    """The syncable names the CRM does not own, with the values a sync item carries for them
    (at its top level, else in its `customFields`, where the platform keeps the others)."""
    custom = item.get("customFields")
    custom = custom if isinstance(custom, dict) else {}
    values: Record = {}
    for name in SYNC_PROPERTIES[kind.name]:
        if name in kind.owned:
            continue
        value = item.get(name)
        if value is None:
            value = custom.get(name)
        if value is not None:
            values[name] = value
    return values


def dumps(value: Any) -> str:
    return encode(value).decode()


def loads(text: str) -> Any:
    return decode(text)


def next_ids(conn: sqlite3.Connection, prefix: str, n: int) -> list[str]:
    """Reserve `n` ids "<prefix>000001"... from the stored counter (inside the caller's write)."""
    row = conn.execute("SELECT next FROM crm_counters WHERE kind = ?", (prefix,)).fetchone()
    start = 1 if row is None else int(row[0])
    conn.execute(
        "INSERT INTO crm_counters(kind, next) VALUES (?, ?) "
        "ON CONFLICT(kind) DO UPDATE SET next = excluded.next",
        (prefix, start + n),
    )
    return [f"{prefix}{i:06d}" for i in range(start, start + n)]


def user_ids(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT id FROM crm_users ORDER BY rowid")]


def record_row(
    kind: Kind, crm_id: str, record: Record, created: str, updated: str
) -> tuple[Any, ...]:
    """The table row of a record, in the column order of crm.sql."""
    return (
        crm_id,
        _text(record.get("externalId")),
        dumps(record),
        *kind.keys(record),
        created,
        updated,
    )


# This module is the one writer of the record tables and of crm_counters: every statement
# names its table (tests/platform/test_sole_writer.py reads them).
_INSERT = {
    "crm_companies": "INSERT INTO crm_companies VALUES ",
    "crm_contacts": "INSERT INTO crm_contacts VALUES ",
}
_UPDATE = {"crm_companies": "UPDATE crm_companies SET", "crm_contacts": "UPDATE crm_contacts SET"}


def insert_records(conn: sqlite3.Connection, kind: Kind, rows: Iterable[tuple[Any, ...]]) -> None:
    """Insert `record_row`s of `kind`, many rows a statement (`many_rows`).

    Not `executemany`: it steps each row on its own, and the sqlite3 module lets go of the
    GIL for every step and takes it back after; on the database thread beside a busy event
    loop each of those is a wait and two thread switches.
    """
    many_rows(conn, _INSERT[kind.table], list(rows))


def update_records(
    conn: sqlite3.Connection, kind: Kind, sets: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> None:
    """Rewrite each record and the columns named in `sets` (of externalId and the match keys):
    rows of (record, *those columns' values, updatedAt, crmId). Leaving out the keys that did
    not change spares their index entries."""
    columns = "".join(f", {c} = ?" for c in sets)
    conn.executemany(
        f"{_UPDATE[kind.table]} record = ?{columns}, updatedAt = ? WHERE crmId = ?", rows
    )


def reserve_ids_below(conn: sqlite3.Connection, prefix: str, number: int) -> None:
    """Generated ids of `prefix` start at `number` (seeded ids below it stay unique)."""
    conn.execute("INSERT OR REPLACE INTO crm_counters(kind, next) VALUES (?, ?)", (prefix, number))
