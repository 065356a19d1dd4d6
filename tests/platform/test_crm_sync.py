"""crm_sync.write_batch: what an export stores of the CRM ids it learns. A batch that sets the
CRM id alone runs one statement for the batch (write_one_column); what it stores is what one
UPDATE per record stores: the id, and updatedAt moved only where the id changes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from emulator.platform import crm_sync
from emulator.platform.crm_sync import RecordUpdate
from emulator.platform.seed import seed
from emulator.settings import Settings
from emulator.state import Emulator
from emulator.store.db import Store

pytestmark = pytest.mark.anyio
NOW = "2031-01-02T03:04:05.000Z"
TABLES = {"contacts": "contactCRMId", "companies": "companyCRMId"}


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    emulator = Emulator(Settings(), seeders=[seed])
    await emulator.start()
    try:
        yield emulator.db
    finally:
        await emulator.close()


async def rows(store: Store, kind: str) -> dict[int, tuple[str | None, str]]:
    found = await store.fetchall(f"SELECT id, {TABLES[kind]}, updatedAt FROM {kind} ORDER BY id")
    return {r[0]: (r[1], r[2]) for r in found}


@pytest.mark.parametrize("kind", ["contacts", "companies"])
async def test_crm_ids_are_set_and_only_a_change_moves_updated_at(
    store: Store, kind: crm_sync.Kind
) -> None:
    before = await rows(store, kind)
    same, changed, fresh = list(before)[:3]
    await store.write(
        lambda conn: conn.execute(
            f"UPDATE {kind} SET {TABLES[kind]} = ? WHERE id IN (?, ?)", ("crm-a", same, changed)
        )
    )
    before = await rows(store, kind)
    updates = [
        RecordUpdate(id=same, crm_id="crm-a"),  # as stored: neither column moves
        RecordUpdate(id=changed, crm_id="crm-b"),
        RecordUpdate(id=fresh, crm_id="crm-c"),
    ]
    await store.write(lambda conn: crm_sync.write_batch(conn, kind, updates, NOW))
    after = await rows(store, kind)
    assert after[same] == before[same]
    assert after[changed] == ("crm-b", NOW)
    assert after[fresh] == ("crm-c", NOW)
    others = set(before) - {same, changed, fresh}
    assert {i: after[i] for i in others} == {i: before[i] for i in others}


async def test_crm_ids_beside_sync_back_columns_each_group_stored(store: Store) -> None:
    first, second = list(await rows(store, "contacts"))[:2]
    updates = [
        RecordUpdate(id=first, crm_id="crm-1"),
        RecordUpdate(id=second, crm_id="crm-2", columns={"jobTitle": "CTO"}),
    ]
    await store.write(lambda conn: crm_sync.write_batch(conn, "contacts", updates, NOW))
    found = await store.fetchall(
        "SELECT id, contactCRMId, jobTitle, updatedAt FROM contacts WHERE id IN (?, ?) ORDER BY id",
        (first, second),
    )
    assert [(r[0], r[1], r[3]) for r in found] == [(first, "crm-1", NOW), (second, "crm-2", NOW)]
    assert found[1][2] == "CTO"


@pytest.mark.parametrize(("kind", "column"), [("contacts", "jobTitle"), ("companies", "industry")])
async def test_sync_back_columns_of_many_records_each_stored_and_only_a_change_moves_updated_at(
    store: Store, kind: crm_sync.Kind, column: str
) -> None:
    # more records than one statement of many rows holds, so the rows span statements
    ids = list(await rows(store, kind))[:45]
    await store.write(
        lambda conn: conn.executemany(
            f"UPDATE {kind} SET {TABLES[kind]} = ?, {column} = ? WHERE id = ?",
            [(f"crm-{i}", f"v{i}", i) for i in ids],
        )
    )
    before = await rows(store, kind)
    kept = set(ids[::3])  # these get back the values they hold
    value = {i: f"v{i}" if i in kept else f"new-{i}" for i in ids}
    updates = [RecordUpdate(id=i, crm_id=f"crm-{i}", columns={column: value[i]}) for i in ids]
    await store.write(lambda conn: crm_sync.write_batch(conn, kind, updates, NOW))
    after = await rows(store, kind)
    stored = dict(
        await store.fetchall(
            f"SELECT id, {column} FROM {kind} WHERE id IN ({', '.join('?' * len(ids))})", ids
        )
    )
    assert stored == value
    assert {i: after[i] for i in kept} == {i: before[i] for i in kept}
    assert {i: after[i] for i in ids if i not in kept} == {
        i: (f"crm-{i}", NOW) for i in ids if i not in kept
    }
