"""A trigram index of the text GET /v1/contacts?search= looks in, so a search reads only
the contacts that match instead of every contact.

The index (an FTS5 table with SQLite's trigram tokenizer, case-sensitive: it folds nothing
itself) holds, per contact, "first last" and the e-mail, each casefolded in Python, on two
lines. A phrase query of the casefolded term matches exactly the documents that hold it as
a substring, which is the search's rule (first name, last name, "first last" or e-mail
contains the term, ignoring case the Unicode way), for any term the API passes on: trimmed,
so it neither starts nor ends with the space between a missing first or last name and the
other; without a line break, so it never spans the two lines; without NUL or U+FFFF (NUL,
where FTS5 stops reading a document, is stored as U+FFFF, which no such term matches); and
of 3 characters at least (a trigram). Other terms read every contact as before
(public_api/record_filter.py's clause); a Hypothesis test holds the two to the same answers.

The table and the TEMP triggers that keep it are on the store's own connection, in `temp`
(never in the schema): nothing is paid at seed time or before the first request. `warm()`
builds it in the background, CHUNK contacts per database hop so other requests go between
(`emulator serve` starts it once it listens; otherwise the first search does); the triggers
come first, so a contact written during the build is noted however far the build got, and
once the index is whole, a search reads the noted contacts themselves until `keep` has taken
them in (see PENDING). Until
it is whole, and again after a restore of the whole database (which replaces `main` under
it: the next search builds it again), a search reads every contact as before.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import weakref
from functools import partial

import msgspec

from emulator.store.db import Store
from emulator.store.pages import FirstAsk

log = logging.getLogger(__name__)

MIN_TERM = 3  # characters: a trigram
NUL_STANDIN = "\uffff"


def _doc(row: str) -> str:
    """SQL: the document of a contact row (`row` is NEW or the table's alias)."""
    return f"contact_search_doc({row}.firstName, {row}.lastName, {row}.professionalEmail)"


CHUNK = 1_000  # contacts indexed per hop (~10 ms): other requests wait at most that long

# Contacts written since the index last took them in. FTS5 pays ~100 us for each transaction
# that changes it (a segment written at the commit) and ~40 us a trigram document, and the
# document is a Python function (casefold): a trigger calling it makes every create wait for
# Python's lock. So the triggers only note the id, and the index takes the noted contacts in
# in the background (`keep`, FLUSH_ROWS a hop); a search reads the noted contacts themselves
# instead of what the index holds of them, so its answer is the same at every moment.
PENDING = "temp.contact_search_pending"
FLUSH_ROWS = 100  # contacts taken in per step (~2.5 ms at 100,000 contacts)
FLUSH_EVERY = 0.05  # seconds between looks at whether anything was written

START_SQL = [
    "DROP TRIGGER IF EXISTS temp.contact_search_insert",
    "DROP TRIGGER IF EXISTS temp.contact_search_update",
    "DROP TRIGGER IF EXISTS temp.contact_search_delete",
    "DROP TABLE IF EXISTS temp.contact_search",
    f"DROP TABLE IF EXISTS {PENDING}",
    "CREATE VIRTUAL TABLE temp.contact_search"
    " USING fts5(doc, tokenize = 'trigram case_sensitive 1')",
    f"CREATE TABLE {PENDING}(id INTEGER PRIMARY KEY)",
    "CREATE TEMP TRIGGER contact_search_insert AFTER INSERT ON main.contacts BEGIN"
    " INSERT OR IGNORE INTO contact_search_pending(id) VALUES (NEW.id); END",
    "CREATE TEMP TRIGGER contact_search_update"
    " AFTER UPDATE OF id, firstName, lastName, professionalEmail ON main.contacts BEGIN"
    " INSERT OR IGNORE INTO contact_search_pending(id) VALUES (OLD.id);"
    " INSERT OR IGNORE INTO contact_search_pending(id) VALUES (NEW.id); END",
    "CREATE TEMP TRIGGER contact_search_delete AFTER DELETE ON main.contacts BEGIN"
    " INSERT OR IGNORE INTO contact_search_pending(id) VALUES (OLD.id); END",
]
# A step of the build: the next CHUNK contacts as one JSON text (one statement step: the
# document computed by SQLite through a Python function waited for Python's lock once a
# contact while the event loop was busy), then their documents written from a JSON array.
FILL_TAKE = (
    "SELECT max(id), json_group_array(json_array(id, firstName, lastName, professionalEmail))"
    " FROM (SELECT id, firstName, lastName, professionalEmail FROM main.contacts"
    " WHERE id > ? ORDER BY id LIMIT ?)"
)
FILL_SQL = (
    "INSERT OR REPLACE INTO temp.contact_search(rowid, doc)"
    " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
)


def search_doc(first: object, last: object, email: object) -> str:
    """What the index holds of a contact: "first last" and the e-mail, casefolded, on two
    lines; NUL, where FTS5 stops reading, becomes U+FFFF (never in an indexed term)."""
    parts = ("" if v is None else str(v).casefold() for v in (first, last, email))
    return "{} {}\n{}".format(*parts).replace("\x00", NUL_STANDIN)


def start(conn: sqlite3.Connection) -> None:
    """An empty index and the triggers that keep it, from now on (any earlier one dropped)."""
    conn.create_function("contact_search_doc", 3, search_doc, deterministic=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql in START_SQL:
            conn.execute(sql)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def fill(conn: sqlite3.Connection, after: int) -> int | None:
    """Index the next CHUNK contacts above id `after`; answers the last id indexed (None:
    none was left). Nothing else runs on the connection between its two statements (a step
    runs on the database thread, where brief writes do not run meanwhile)."""
    upto, taken = conn.execute(FILL_TAKE, (after, CHUNK)).fetchone()
    if upto is None:
        return None
    conn.execute(FILL_SQL, (_documents(msgspec.json.decode(taken)),))
    return int(upto)


def _documents(rows: list[list[object]]) -> str:
    """[[id, search_doc], ...] as a JSON text, of rows [id, first, last, e-mail] (a row of no
    contact, its id null, left out)."""
    docs = [(row[0], search_doc(*row[1:])) for row in rows if row[0] is not None]
    return msgspec.json.encode(docs).decode()


def optimize(conn: sqlite3.Connection) -> None:
    """Merge the index into one b-tree once it is filled. FTS5 merges its segments a little
    after every write: left as the fill made them, creates went on merging the fill's
    segments (serial creates at 1,000,000 contacts: p99 33 ms; 5 ms once merged). The merge
    itself is one statement, once (0.36 s for 200,000 documents)."""
    # No rollback journal for this one statement. Kept in memory (store/db.py) it held ~100
    # MB at 1,000,000 contacts; in a file, the file stayed open for good (the TEMP database
    # is in exclusive mode) and every later write of a TEMP table, a create's notes
    # included, wrote its pages there (~14 system calls a create, ~6% of the mixed load).
    # Should the merge fail half way, the index is never called whole (`_build`): searches
    # read every contact, and the next build starts from an empty index (`start`).
    conn.execute("PRAGMA temp.journal_mode=OFF")
    try:
        conn.execute("INSERT INTO temp.contact_search(contact_search) VALUES ('optimize')")
    finally:
        conn.execute("PRAGMA temp.journal_mode=MEMORY")


# The noted contacts a flush takes, as one JSON text read in one step (a row per step would
# be a wait for Python's lock per contact while the event loop is busy), and the writes of
# the flush, each one statement over the ids or documents passed as a JSON array.
FLUSH_TAKE = (
    "SELECT count(*), json_group_array(json_array(p.id, c.id, c.firstName, c.lastName,"
    f" c.professionalEmail)) FROM (SELECT id FROM {PENDING} ORDER BY id LIMIT ?) p"
    " LEFT JOIN main.contacts c ON c.id = p.id"
)
FLUSH_UNINDEX = "DELETE FROM temp.contact_search WHERE rowid IN (SELECT value FROM json_each(?))"
FLUSH_INDEX = (
    "INSERT INTO temp.contact_search(rowid, doc)"
    " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
)
FLUSH_UNNOTE = (
    "DELETE FROM temp.contact_search_pending WHERE id IN (SELECT value FROM json_each(?))"
)


def flush(conn: sqlite3.Connection) -> bool:
    """Take up to FLUSH_ROWS noted contacts into the index as they are now, in one
    transaction of five statements whatever their number; answers whether some are left."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        count, taken = conn.execute(FLUSH_TAKE, (FLUSH_ROWS + 1,)).fetchone()
        rows = msgspec.json.decode(taken)[:FLUSH_ROWS]
        ids = msgspec.json.encode([row[0] for row in rows]).decode()
        conn.execute(FLUSH_UNINDEX, (ids,))
        conn.execute(FLUSH_INDEX, (_documents([row[1:] for row in rows]),))
        conn.execute(FLUSH_UNNOTE, (ids,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return int(count) > FLUSH_ROWS


def usable(folded_term: str) -> bool:
    """Whether the index answers a search for `folded_term` (the trimmed term, casefolded)."""
    return (
        len(folded_term) >= MIN_TERM
        and folded_term == folded_term.strip()
        and not any(c in folded_term for c in ("\n", "\x00", NUL_STANDIN))
    )


# The contacts whose document holds the term (parameters: the phrase, the folded term): as
# the index says, or for a contact written since the index last took them in, as its
# document now says (the index's phrase match is exactly this substring test). Until a
# contact is noted, `NOT EXISTS` (computed once a statement) spares each match the look-up
# in the noted ones (at 1,000,000 contacts: a count of 92,640 matches 5.3 -> 3.5 ms).
_INDEXED = (
    "SELECT rowid FROM temp.contact_search WHERE contact_search MATCH ?"
    " AND (NOT EXISTS (SELECT 1 FROM temp.contact_search_pending)"
    " OR rowid NOT IN (SELECT id FROM temp.contact_search_pending))"
)
_NOTED = (
    "SELECT c.id FROM main.contacts c WHERE c.id IN (SELECT id FROM temp.contact_search_pending)"
    f" AND instr({_doc('c')}, ?) > 0"
)


def matches_clause(folded_term: str) -> tuple[str, tuple[str, str]]:
    """(clause on a contacts row, its parameters): the contact's document holds the term."""
    return f"id IN ({_INDEXED} UNION ALL {_NOTED})", search_params(folded_term)


def search_params(folded_term: str) -> tuple[str, str]:
    """The parameters of `matches_clause` and of the queries of `alone_queries`."""
    phrase = '"' + folded_term.replace('"', '""') + '"'  # a phrase: the term as one substring
    return phrase, folded_term


# A search alone, read from the index: its rowids are the contacts' ids (the triggers keep
# one row per contact), returned in rowid order without a sort, counted without a lookup
# of each match in `contacts` (ten times faster for a term thousands of contacts hold).
ALONE_IDS = f"{_INDEXED} UNION ALL {_NOTED} ORDER BY 1"
# Its count: every match in the index, less the noted contacts the index matches (their
# document as the index holds it, read by rowid), plus the noted contacts that match now.
# `_INDEXED`'s test of each match against the noted ones cost a quarter of the count
# (1,000,000 contacts, 100 terms: 2.7-3.8 ms of CPU a count, 1.9-2.6 without it, with or
# without noted contacts); this reads only the noted ones. CROSS JOIN keeps SQLite from
# scanning the whole index to find them.
ALONE_COUNT = (
    "SELECT (SELECT count(*) FROM temp.contact_search WHERE contact_search MATCH ?1)"
    f" - (SELECT count(*) FROM {PENDING} p CROSS JOIN temp.contact_search s"
    " ON s.rowid = p.id WHERE instr(s.doc, ?2) > 0)"
    " + (SELECT count(*) FROM main.contacts c"
    f" WHERE c.id IN (SELECT id FROM {PENDING}) AND instr({_doc('c')}, ?2) > 0)"
)


# The contacts above an id whose document holds the term (the rule the index's phrase match
# follows), read along the primary key: the creates since a search's total was counted.
GROWN_COUNT = f"SELECT count(*) FROM main.contacts c WHERE c.id > ? AND instr({_doc('c')}, ?) > 0"


def grown_count(conn: sqlite3.Connection, after: int, folded_term: str) -> int:
    """How many contacts above id `after` match `folded_term` (FirstAsk.grown)."""
    (count,) = conn.execute(GROWN_COUNT, (after, folded_term)).fetchone()
    return int(count)


def alone_queries(folded_term: str) -> tuple[str, FirstAsk]:
    """(ordered id query, first ask) of a search that is a listing's only filter."""
    grown = partial(grown_count, folded_term=folded_term)
    return ALONE_IDS, FirstAsk(ALONE_COUNT, grown=grown)


# The restore version each store's index is whole at (absent: never built), and the
# build under way per store with the restore version it started at.
_built: weakref.WeakKeyDictionary[Store, int] = weakref.WeakKeyDictionary()
_building: weakref.WeakKeyDictionary[Store, tuple[int, asyncio.Task[None]]] = (
    weakref.WeakKeyDictionary()
)
_keeping: weakref.WeakKeyDictionary[Store, asyncio.Future[None]] = weakref.WeakKeyDictionary()


def ready(store: Store) -> bool:
    """Whether the store's index is whole and no restore came since it was built."""
    return _built.get(store) == store.restored


def warm(store: Store) -> None:
    """Start building the store's index in the background unless it is ready or on its way."""
    if ready(store):
        return
    running = _building.get(store)
    if running is not None and running[0] == store.restored and not running[1].done():
        return
    _building[store] = (store.restored, asyncio.ensure_future(_build(store)))


# How long the last search that read every contact took, per store (the index not whole).
_read_all: weakref.WeakKeyDictionary[Store, float] = weakref.WeakKeyDictionary()
# A search asked while the index is built waits for it this many times that long at most:
# read every contact at once, searches asked one after the other (a client polling, or
# typing) held the database thread and the build got it only between them (at 1,000,000
# contacts: not whole after 300 s of a search every 50 ms, ~26 s without them). Waiting
# gives the build two thirds of the time at least, and the wait ends once it is whole.
PATIENCE = 2.0


async def settle(store: Store) -> None:
    """Before a search while the index is not ready: start its build, and wait for it
    PATIENCE times as long as the last search without it took (not at all before one)."""
    warm(store)
    took = _read_all.get(store)
    running = _building.get(store)
    if took is None or running is None or ready(store):
        return
    await asyncio.wait({running[1]}, timeout=PATIENCE * took)  # ends early once whole


def read_all(store: Store, seconds: float) -> None:
    """A search read every contact (the index not ready) in `seconds`: the next one waits
    for the index in proportion (`settle`)."""
    _read_all[store] = seconds


async def ensure(store: Store) -> None:
    """Wait until the store's index is ready (building it if need be)."""
    while not ready(store):
        warm(store)
        await asyncio.shield(_building[store][1])


async def _build(store: Store) -> None:
    restored = store.restored
    try:
        await store.read(start)
        after: int | None = 0
        while after is not None:
            if store.restored != restored:  # replaced under it: the next search starts again
                return
            after = await store.read_in_background(partial(fill, after=after))
        if store.restored != restored:
            return
        await store.read_in_background(optimize)
        if store.restored == restored:
            _built[store] = restored
            _keeping[store] = asyncio.ensure_future(_keep(store, restored))
    except sqlite3.Error:
        if store.closed:  # a server stopping: nothing went wrong
            _built.pop(store, None)
            return
        log.exception("the contact search index could not be built: searches read every contact")
        _built.pop(store, None)
    except Exception:  # the store closed under it (a server stopping)
        _built.pop(store, None)


async def _keep(store: Store, restored: int) -> None:
    """Take written contacts into the index, a little after each write, for as long as the
    index lasts (until the store closes or a restore replaces the database under it)."""
    seen = -1
    try:
        while not store.closed and store.restored == restored:
            if store.version != seen:
                seen = store.version
                # The first step here, between requests (~25 contacts a step under a mixed
                # load); a backlog (the creates of an index build) on the database thread:
                # taken in at once here, it would hold requests back for its whole length.
                more = await store.read_in_background(flush, brief=True)
                while more:
                    if store.closed or store.restored != restored:
                        return
                    more = await store.read_in_background(flush)
            await asyncio.sleep(FLUSH_EVERY)
    except sqlite3.Error:
        if not store.closed:  # searches stay right: they read what is noted themselves
            log.exception("written contacts could not be taken into the search index")
    except Exception:  # the store closed under it (a server stopping)
        pass
