"""Lists as contacts and companies see them: a `listId` must name a list of the right type."""

from __future__ import annotations

import sqlite3

from emulator.errors import BadRequest, NotFound
from emulator.platform import lists
from emulator.public_api.context import ApiContext


def require_list(conn: sqlite3.Connection, list_id: int, list_type: str) -> None:
    """404 for an unknown list, 400 for a list of the other type (synchronous: db thread)."""
    row = conn.execute("SELECT type FROM lists WHERE id = ?", (list_id,)).fetchone()
    if row is None:
        raise NotFound(f"List {list_id} not found")
    if row[0] != list_type:
        raise BadRequest.field("listId", f"list {list_id} is a {row[0]} list, not {list_type}")


async def check_list(ctx: ApiContext, list_id: int | None, list_type: str) -> None:
    if list_id is not None:
        await ctx.store.read(lambda conn: require_list(conn, list_id, list_type))


def add_member(conn: sqlite3.Connection, list_id: int, entity_id: int) -> None:
    lists.add_members(conn, [(list_id, entity_id)])
