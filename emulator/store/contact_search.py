"""A trigram index of the text GET /v1/contacts?search= looks in, so a search reads the few
contacts that can match instead of every contact.

The index (an FTS5 table with SQLite's trigram tokenizer) holds, per contact, the Unicode
casefold of "first last" and its e-mail. It only narrows: the listing keeps its exact clause
(public_api/record_filter.py) and checks it on the candidates, so the answers are the same
as without the index. Any contact the exact clause accepts is a candidate: its first name,
last name, "first last" or e-mail, casefolded, contains the casefolded term, so the casefolded
document does too, and the tokenizer folds the document and the term alike, character by
character. Terms shorter than a trigram (3 characters) cannot use it.

The table and the TEMP triggers that keep it are on the store's own connection, in `temp`
(never in the schema): nothing is paid at seed time or on a start-up. It is built by the first
search (one pass over the contacts), kept by the triggers on every write from then on
(whatever module writes), and built again by the next search after a restore of the whole
database, which replaces `main` under it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import weakref

from emulator.store.db import Store

MIN_TERM = 3  # characters: a trigram


def _doc(row: str) -> str:
    """SQL: the document of a contact row (`row` is NEW or the table's alias)."""
    return f"contact_search_doc({row}.firstName, {row}.lastName, {row}.professionalEmail)"


BUILD_SQL = [
    "DROP TRIGGER IF EXISTS temp.contact_search_insert",
    "DROP TRIGGER IF EXISTS temp.contact_search_update",
    "DROP TRIGGER IF EXISTS temp.contact_search_delete",
    "DROP TABLE IF EXISTS temp.contact_search",
    "CREATE VIRTUAL TABLE temp.contact_search USING fts5(doc, tokenize = 'trigram')",
    f"INSERT INTO temp.contact_search(rowid, doc) SELECT c.id, {_doc('c')} FROM main.contacts c",
    "CREATE TEMP TRIGGER contact_search_insert AFTER INSERT ON main.contacts BEGIN"
    f" INSERT OR REPLACE INTO contact_search(rowid, doc) VALUES (NEW.id, {_doc('NEW')}); END",
    "CREATE TEMP TRIGGER contact_search_update"
    " AFTER UPDATE OF id, firstName, lastName, professionalEmail ON main.contacts BEGIN"
    " DELETE FROM contact_search WHERE rowid = OLD.id;"
    f" INSERT OR REPLACE INTO contact_search(rowid, doc) VALUES (NEW.id, {_doc('NEW')}); END",
    "CREATE TEMP TRIGGER contact_search_delete AFTER DELETE ON main.contacts BEGIN"
    " DELETE FROM contact_search WHERE rowid = OLD.id; END",
]


def search_doc(first: object, last: object, email: object) -> str:
    """What the index holds of a contact: "first last" and the e-mail, casefolded. NUL, where
    SQLite's text functions may stop, becomes a space (a term with NUL never uses the index)."""
    parts = ("" if v is None else str(v) for v in (first, last, email))
    text = "{} {}\n{}".format(*parts)
    return text.replace("\x00", " ").casefold()


def build(conn: sqlite3.Connection) -> None:
    """(Re)build the index and its triggers from the contacts, in one transaction."""
    conn.create_function("contact_search_doc", 3, search_doc, deterministic=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql in BUILD_SQL:
            conn.execute(sql)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def usable(folded_term: str) -> bool:
    """Whether the index can narrow a search for `folded_term` (the casefolded term)."""
    return len(folded_term) >= MIN_TERM and "\x00" not in folded_term


def candidates_clause(folded_term: str) -> tuple[str, str]:
    """(clause on a contacts row, its parameter): the row is one the index names for the term."""
    phrase = '"' + folded_term.replace('"', '""') + '"'  # a phrase: the term as one substring
    return "id IN (SELECT rowid FROM temp.contact_search WHERE contact_search MATCH ?)", phrase


# The restore version each store's index was built at (absent: never built).
_built: weakref.WeakKeyDictionary[Store, int] = weakref.WeakKeyDictionary()
_building: weakref.WeakKeyDictionary[Store, asyncio.Future[None]] = weakref.WeakKeyDictionary()


async def ensure(store: Store) -> None:
    """Build the store's index unless it is built and no restore came since (one build at a
    time: concurrent first searches wait for the same one)."""
    while _built.get(store) != store.restored:
        running = _building.get(store)
        if running is None:
            restored = store.restored
            running = _building[store] = asyncio.ensure_future(store.read(build))
            try:
                await asyncio.shield(running)
                _built[store] = restored
            finally:
                if _building.get(store) is running:
                    del _building[store]
        else:
            await asyncio.shield(running)
