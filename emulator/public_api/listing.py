"""Shared pieces of the simple /v1 listings: filters, Unicode-aware search and paged rows."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from emulator.public_api.context import ApiContext
from emulator.store.db import Store
from emulator.store.pages import FirstAsk

T = TypeVar("T")

# Stores whose connection knows casefold(); SQLite's own LIKE folds ASCII only.
_folding: weakref.WeakSet[Store] = weakref.WeakSet()


def _casefold(value: object) -> str | None:
    return None if value is None else str(value).casefold()


async def ensure_casefold(store: Store) -> None:
    """Register the SQL function casefold(text) on the store's connection, once."""
    if store in _folding:
        return
    await store.read(
        lambda conn: conn.create_function("casefold", 1, _casefold, deterministic=True)
    )
    _folding.add(store)


class Where:
    """AND-ed conditions of a listing, built from validated parameters."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []
        self.folds = False
        # A clause SQLite answers through an index not in id order (a range of updatedAt):
        # a first page of few rows is then read through it and sorted (PageIndex.page).
        self.ranged = False

    def copy(self) -> Where:
        other = Where()
        other.clauses, other.params, other.folds = [*self.clauses], [*self.params], self.folds
        other.ranged = self.ranged
        return other

    def add(self, clause: str, *params: Any) -> Where:
        self.clauses.append(clause)
        self.params.extend(params)
        return self

    def search(self, term: str | None, *columns: str) -> Where:
        """Any of `columns` contains `term`, ignoring case (Unicode casefold, no wildcards)."""
        if term:
            folded = term.casefold()
            self.add(
                "(" + " OR ".join(f"instr(casefold({c}), ?) > 0" for c in columns) + ")",
                *[folded] * len(columns),
            )
            self.folds = True
        return self

    def ids_sql(self, table: str, order: str = "id") -> str:
        return f"SELECT id FROM {table}{self._where()} ORDER BY {order}"

    def first_ask(self, table: str, order: str = "id") -> FirstAsk:
        """How PageIndex answers this listing's first ask: its count, and the ids ordered
        so SQLite may use the WHERE's index (`+id`: not the table's own id order)."""
        count = f"SELECT count(*) FROM {table}{self._where()}"
        if not self.ranged or order != "id":
            return FirstAsk(count)
        return FirstAsk(count, self.ids_sql(table, "+id"))

    def _where(self) -> str:
        return f" WHERE {' AND '.join(self.clauses)}" if self.clauses else ""


async def page_ids(
    ctx: ApiContext, table: str, where: Where, page: int, page_size: int, order: str = "id"
) -> tuple[int, list[int]]:
    """(total, ids of the page) from the cached index; casefold() registered when needed."""
    if where.folds:
        await ensure_casefold(ctx.store)
    if not where.clauses and order == "id":
        return await ctx.pages.table_page(table, page, page_size)
    sql, first = where.ids_sql(table, order), where.first_ask(table, order)
    return await ctx.pages.page(sql, where.params, page, page_size, first)


async def page_of(
    ctx: ApiContext,
    table: str,
    where: Where,
    page: int,
    page_size: int,
    select: str,
    from_row: Callable[[tuple[Any, ...]], T],
    order: str = "id",
) -> tuple[int, list[T]]:
    """(total, records of the page): ids from the cached index, then one row lookup.

    `select` selects the record columns with the table's id first and ends before WHERE;
    its table is aliased `t`.
    """
    total, ids = await page_ids(ctx, table, where, page, page_size, order)
    return total, await rows_by_ids(ctx.store, ids, select, from_row)


async def rows_by_ids(
    store: Store, ids: Sequence[int], select: str, from_row: Callable[[tuple[Any, ...]], T]
) -> list[T]:
    """The records of `ids`, in the order of `ids`."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = await store.fetchall(f"{select} WHERE t.id IN ({marks})", list(ids))
    by_id = {row[0]: row for row in rows}
    return [from_row(by_id[i]) for i in ids if i in by_id]
