"""contacts.json turned into SQLite rows by another process, while the server seeds the rest.

`emulator serve` spawns the worker (`python -m emulator.platform.contacts_worker DIR FILE`)
before importing the server, so the worker holds its own small working set (the interpreter,
msgspec and the fixture models, a block of the file, a chunk of contacts), not a copy of the
server's pages. It starts at once (the server stops it if it finds an image of these files),
decodes and checks contacts.json chunk by chunk (`ContactStream`: same messages as the whole
loader), writes the contacts into FILE (a scratch SQLite database of the same schema) and
their campaign memberships into a second one (`members_file`, renamed into place once
whole), then builds the contacts' indexes, and answers one short MessagePack value on
stdout: `["ok", None]` (the ids are read from FILE), or `[error class name, message]`. The
server meanwhile seeds every table that does not read the memberships, copies them in
(`copy_members_into`) as soon as they are there, seeds the rest, and at last copies the
contacts in with one `INSERT ... SELECT`, which copies their indexes as they are
(`copy_into`). contacts.json is decoded once, in the worker.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from emulator.fixtures.loader import ContactStream, FixtureError, record_ids
from emulator.platform import contacts as contact_table
from emulator.platform.bulk import contact_rows
from emulator.platform.engagement import ADD_MEMBERS, copy_members_from
from emulator.start_trace import name_process, stamp
from emulator.store.ddl import schema_sql

if TYPE_CHECKING:
    import apsw

# Below this size of contacts.json (~6,000 contacts) the server writes them sooner itself.
_WORTH_IT = 4 << 20


def members_file(out: Path) -> Path:
    """Where the worker writing contacts into `out` puts their campaign memberships: a
    database of the same schema, there (renamed into place) once every one is written."""
    return out.with_name(f"{out.stem}-members.sqlite")


# Pages of the scratch files: a quarter of the default's pwrite and pread calls (written as
# the cache spills, read back for the index builds and the server's copies: ~0.5 s less system
# CPU at 1,000,000 contacts). The server's transfer (`INSERT ... SELECT`) copies records and
# index entries as they are into the image's default-sized pages all the same.
SCRATCH_PAGE_SIZE = 16384


# The contacts' indexes are sorted in runs of 1 MiB (SQLite's sorter: at least 250 pages, 4 MiB
# with these pages, and the page cache's size): ~25% less CPU for the four at 1,000,000
# contacts than with 4 MiB runs (docs/performance.md), small runs sorting in the CPU's caches.
SORT_RUN_PAGES = 64
SORT_CACHE_KIB = SORT_RUN_PAGES * SCRATCH_PAGE_SIZE // 1024


def _small_sort_runs() -> None:
    """SQLite's least run of a sort (`SQLITE_CONFIG_PMASZ`), set for apsw's SQLite in this
    process before it opens any connection."""
    import apsw

    apsw.shutdown()
    apsw.config(apsw.SQLITE_CONFIG_PMASZ, SORT_RUN_PAGES)
    apsw.initialize()


def _scratch(path: Path, table: str) -> tuple[apsw.Connection, list[tuple[str, str]]]:
    """A new scratch database of the schema at `path`, `table`'s indexes dropped (answered:
    built after the rows, 2x faster). Written through apsw (its own SQLite), not the sqlite3
    module: the same rows inserted for half the CPU (docs/performance.md); the server reads
    the files with the sqlite3 module all the same (one file format)."""
    import apsw  # the worker process alone: the server imports this module too

    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA page_size={SCRATCH_PAGE_SIZE}")  # before the first table
    conn.execute("PRAGMA journal_mode=OFF").fetchall()  # a scratch file: thrown away on failure
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute(schema_sql())
    indexes = [
        (str(name), str(sql))
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
            " AND sql IS NOT NULL",
            (table,),
        )
    ]
    for name, _ in indexes:
        conn.execute(f'DROP INDEX "{name}"')
    conn.execute("BEGIN")
    return conn, indexes


def _write(directory: Path, out: Path) -> None:
    """Contacts of `directory` into the database file `out`, their memberships into
    `members_file(out)` (once they are all there, before the contacts' indexes are built)."""
    # the server decodes and checks those files whole: should one fail, its own message
    # stops the start before this process is asked anything
    stream = ContactStream(
        directory, record_ids(directory, "companies.json"), record_ids(directory, "campaigns.json")
    )
    members_path = members_file(out)
    writing = members_path.with_name(f"{members_path.stem}-part.sqlite")
    conn, indexes = _scratch(out, "contacts")
    try:
        # no index of the memberships at all: the server copies them into a table whose
        # indexes are built after its seeders ran (SQLite's transfer wants the same ones)
        members, _ = _scratch(writing, "campaign_members")
        try:
            for chunk in stream.chunks():
                rows, member_rows = contact_rows(chunk)
                conn.executemany(contact_table.INSERT_ROWS, rows)
                members.executemany(ADD_MEMBERS, member_rows)
            stamp("contacts and memberships written")
            members.execute("COMMIT")
        finally:
            members.close()
        os.replace(writing, members_path)  # the server's seeders go on meanwhile
        stamp("memberships handed over")
        conn.execute(f"PRAGMA cache_size=-{SORT_CACHE_KIB}")  # the size of a sort's runs
        for _, sql in indexes:
            conn.execute(sql)
        conn.execute("COMMIT")
        stamp("contacts' indexes built")
    finally:
        conn.close()
        writing.unlink(missing_ok=True)


def exit_with_the_server() -> None:
    """The server holds this process's stdin open for its whole life: end of file is the
    server gone (killed before it could stop this process), and so is this work."""
    # the descriptor itself: a daemon thread blocked in the buffered reader's lock would stop
    # the interpreter's shutdown with a fatal error
    while os.read(0, 4096):
        pass
    os._exit(3)


def main(argv: list[str]) -> int:
    directory, out = Path(argv[0]), Path(argv[1])
    name_process("contacts worker")
    stamp("started")
    threading.Thread(target=exit_with_the_server, daemon=True).start()
    # No cyclic garbage collection: decoded contacts hold no cycles, and each collection
    # would walk the chunk's hundreds of thousands of objects again (~7% of the work).
    gc.disable()
    _small_sort_runs()
    return answer_with(lambda: _write(directory, out))


def answer_with(work: Callable[[], Any]) -> int:
    """Run a child's `work` and write its one answer, read by `child_answer`: ("ok", value),
    or the failure's kind and message (every failure is answered: the server decides)."""
    try:
        reply: list[Any] = ["ok", work()]
    except FixtureError as exc:
        reply = [FixtureError.__name__, str(exc)]
    except Exception as exc:
        reply = [type(exc).__name__, str(exc)]
    answer(reply)
    return 0


_ANSWERED = threading.Event()


def answer(reply: list[Any]) -> None:
    """Write a child's one answer (`answer_with`'s), then let go of the pipe: the parent
    reads it at once, while this process may still clean up (its memory freed, scratch
    files removed) before it ends. Any later answer is dropped."""
    if _ANSWERED.is_set():
        return
    _ANSWERED.set()
    sys.stdout.flush()
    data = memoryview(msgspec.msgpack.encode(reply))
    while data:
        data = data[os.write(1, data) :]
    # /dev/null in its place, not the descriptor closed: a file opened later could take
    # descriptor 1, and a stray print would then write into it
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    stamp("answered")


def package_path() -> str:
    """The worker imports this very package, wherever it comes from (`-P`: not from the
    current directory)."""
    here = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)


def child_answer(proc: subprocess.Popen[bytes], name: str) -> Any:
    """The value of a child's one ("ok", value) msgpack answer on its stdout, once given (the
    child may still be ending: `close` reaps it); raises its FixtureError, or OSError when it
    failed otherwise or ended without one."""
    assert proc.stdout is not None
    data = proc.stdout.read()
    try:
        kind, value = msgspec.msgpack.decode(data, type=tuple[str, Any])
    except msgspec.DecodeError:
        raise OSError(f"{name} ended without an answer (exit {proc.wait()})") from None
    if kind == FixtureError.__name__:
        raise FixtureError(value)
    if kind != "ok":
        raise OSError(f"{name} failed: {kind}: {value}")
    return value


class ContactsWorker:
    """The server's handle on one worker: `wait` for it, `knows_all` of some contact ids,
    `result` (every contact id), `copy_into` a connection; `close` ends it (killed if still
    running) and removes its file."""

    def __init__(self, proc: subprocess.Popen[bytes], path: Path) -> None:
        self._proc, self.path = proc, path
        self._ids: set[int] | None = None
        self._answered = False
        self._failure: FixtureError | OSError | None = None

    @classmethod
    def spawn(
        cls, directory: str | Path, scratch: str | Path, min_bytes: int = _WORTH_IT
    ) -> ContactsWorker | None:
        """A worker for `directory`'s contacts writing into a file in `scratch` (the seed
        cache's directory); None where contacts.json is absent or smaller than `min_bytes`,
        or the worker cannot start."""
        try:
            if (Path(directory) / ContactStream.name).stat().st_size < min_bytes:
                return None
            Path(scratch).mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=".seeding-contacts-", suffix=".sqlite", dir=scratch)
            os.close(fd)
        except OSError:
            return None
        path = Path(name)
        path.unlink()  # the worker creates it (an empty file would do as well)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__, str(directory), str(path)],
                stdin=subprocess.PIPE,  # never written: closed when this process ends
                stdout=subprocess.PIPE,
                # glibc's own mmap threshold: a fixed 128 KiB one had every block of the file
                # mapped and unmapped afresh, ~900,000 page faults at 1,000,000 contacts (~4 s
                # of CPU) for the same peak RSS (~105 MB)
                env={**os.environ, "PYTHONPATH": package_path()},
            )
        except (OSError, ValueError, TypeError):  # no interpreter to run (embedded)
            return None
        return cls(proc, path)

    def wait(self) -> None:
        """Until the rows are written; raises the worker's FixtureError, or OSError when it
        failed otherwise or ended without an answer."""
        if self._failure is not None:
            raise self._failure  # its one answer was read already
        if not self._answered:
            try:
                child_answer(self._proc, "contacts worker")
            except (FixtureError, OSError) as exc:
                self._failure = exc
                raise
            self._answered = True

    def result(self) -> set[int]:
        """The contacts' ids once the rows are written; raises as `wait`."""
        if self._ids is None:
            self.wait()
            # From the file, not the pipe: an answer beyond the pipe's 64 KiB came cut short
            # when the process was traced (py-spy), and the ids are there anyway.
            source = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                self._ids = {row[0] for row in source.execute("SELECT id FROM contacts")}
            finally:
                source.close()
        return self._ids

    def knows_all(self, ids: Iterable[int]) -> bool:
        """Whether every one of `ids` is a contact the worker wrote (once it ended; raises as
        `result`): one query of its file, no set of every contact id built here."""
        if self._ids is not None:
            return self._ids.issuperset(ids)
        self.wait()
        wanted = sorted(set(ids))
        source = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            (found,) = source.execute(
                "SELECT count(*) FROM contacts WHERE id IN (SELECT value FROM json_each(?))",
                (msgspec.json.encode(wanted).decode(),),
            ).fetchone()
        finally:
            source.close()
        return int(found) == len(wanted)  # ids are unique in the table

    def members_ready(self) -> bool:
        """Whether the memberships are written (`copy_members_into` would not wait)."""
        return members_file(self.path).exists()

    def copy_members_into(self, conn: sqlite3.Connection) -> None:
        """Copy the contacts' campaign memberships into `conn`'s empty campaign_members, in
        file order, once the worker wrote them all (before it builds the contacts' indexes),
        whose indexes must be none but its key's, like the worker's (SQLite's transfer);
        inside the caller's transaction. Raises as `wait` when the worker failed first."""
        members = members_file(self.path)
        while not members.exists():
            if self._proc.poll() is not None and not members.exists():
                self.wait()
                raise OSError("contacts worker ended without the memberships")
            time.sleep(0.005)
        conn.execute("ATTACH DATABASE ? AS contacts_members", (str(members),))
        copy_members_from(conn, "contacts_members")

    def copy_into(self, conn: sqlite3.Connection) -> None:
        """Copy the worker's contacts into `conn`'s empty contacts table, whose indexes must
        be the schema's (SQLite's transfer: records and index entries as they are, no
        values decoded, no index sorted); inside the caller's transaction."""
        self.wait()
        conn.execute("ATTACH DATABASE ? AS contacts_worker", (str(self.path),))
        contact_table.copy_from(conn, "contacts_worker")

    def stop(self) -> None:
        """Kill it, unless it ended (from any thread; `close` reaps it)."""
        with contextlib.suppress(OSError):
            if self._proc.poll() is None:
                self._proc.kill()

    def close(self) -> None:
        self.stop()
        self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.path.unlink(missing_ok=True)
        members_file(self.path).unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
