"""Lists and saved views of the platform as /v1 shows them; creating lists."""

from __future__ import annotations

import sqlite3
from typing import Any

from emulator.platform import lists
from emulator.public_api.context import ApiContext
from emulator.public_api.listing import Where, page_of, rows_by_ids
from emulator.public_api.schemas import ContactList, ListIn, Ref, SavedView
from emulator.wire import decode

LIST_TYPES = ("CONTACTS", "COMPANIES")
SAVED_VIEW_TYPES = ("LEAD", "COMPANY")

# Lists made through the API belong to the account's first user (keys carry no user);
# with no user at all, to user 0 shown as "API".
API_USER_ID = 0

_LIST_SELECT = (
    "SELECT t.id, t.name, t.description, t.type,"
    " (SELECT COUNT(*) FROM list_members m WHERE m.listId = t.id),"
    " t.createdBy, COALESCE(u.name, 'API'), t.createdAt"
    " FROM lists t LEFT JOIN users u ON u.id = t.createdBy"
)

_VIEW_SELECT = (
    "SELECT t.id, t.name, t.type, t.view, t.createdBy, COALESCE(u.name, ''),"
    " t.createdAt, t.updatedAt FROM saved_views t LEFT JOIN users u ON u.id = t.createdBy"
)


def _list(row: tuple[Any, ...]) -> ContactList:
    return ContactList(
        id=row[0],
        name=row[1],
        description=row[2],
        type=row[3],
        entitiesCount=row[4],
        createdBy=Ref(id=row[5], name=row[6]),
        createdAt=row[7],
    )


def _view(row: tuple[Any, ...]) -> SavedView:
    return SavedView(
        id=row[0],
        name=row[1],
        type=row[2],
        view=decode(row[3], list[str]),
        createdBy=Ref(id=row[4], name=row[5]),
        createdAt=row[6],
        updatedAt=row[7],
    )


async def list_lists(
    ctx: ApiContext, page: int, page_size: int, search: str | None = None, type: str | None = None
) -> tuple[int, list[ContactList]]:
    where = Where().search(search, "name", "description")
    if type is not None:
        where.add("type = ?", type)
    return await page_of(ctx, "lists", where, page, page_size, _LIST_SELECT, _list)


async def create_list(ctx: ApiContext, body: ListIn) -> ContactList:
    now = ctx.now()

    def insert(conn: sqlite3.Connection) -> int:
        user = conn.execute("SELECT MIN(id) FROM users").fetchone()[0]
        return lists.create_list(
            conn,
            body.name,
            body.description,
            body.type,
            body.folderId,
            API_USER_ID if user is None else user,
            now,
        )

    list_id = await ctx.store.write(insert)
    return (await rows_by_ids(ctx.store, [list_id], _LIST_SELECT, _list))[0]


async def list_saved_views(
    ctx: ApiContext, page: int, page_size: int, type: str | None = None
) -> tuple[int, list[SavedView]]:
    where = Where()
    if type is not None:
        where.add("type = ?", type)
    return await page_of(ctx, "saved_views", where, page, page_size, _VIEW_SELECT, _view)
