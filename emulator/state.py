"""The emulator's whole resettable state: store, loaded fixtures and clock."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from emulator import heap
from emulator.clock import Clock, wall_now
from emulator.fixtures.image_cache import ImageCache, copy_image, empty_db_file, fixture_digest
from emulator.fixtures.loader import (
    AnyContact,
    ContactStream,
    FixtureError,
    check_fixtures,
    decode_fixture_dir,
    load_fixture_dir,
)
from emulator.fixtures.models import FixtureSet
from emulator.image_preload import ImagePreload
from emulator.operations import Operations
from emulator.platform.bulk import contact_rows, write_contact_rows
from emulator.platform.contacts_worker import ContactsWorker
from emulator.settings import Settings
from emulator.start_trace import stamp
from emulator.store.db import Indexes, Store, bulk_load, open_sync, write_meta
from emulator.wire import now_iso, parse_iso

log = logging.getLogger(__name__)

Seeder = Callable[[sqlite3.Connection, FixtureSet], None]


@dataclass(frozen=True)
class Seeding:
    """The seeders in two phases: `before` neither reads nor writes contacts or their
    campaign memberships, `after` runs once the memberships are in but reads no contact (a
    cold `emulator serve` runs both while another process writes the contacts); `after`
    also writes the fixtures' own contacts, if any (a list of seeders given alone is all
    `after`)."""

    before: list[Seeder]
    after: list[Seeder]


# Work done where a seeding would wait, until the predicate it is given is true.
Idle = Callable[[Callable[[], bool]], object]

# Fills a seed image with streamed contacts and runs the seeders (before, after) it is given.
ContactsPhase = Callable[
    [sqlite3.Connection, Indexes, Callable[[], None], Callable[[], None]], None
]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a seed image is built: the decoded records hold no
    cycles, and each collection would walk the hundreds of thousands of them alive again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class StateImage:
    """The whole state at one instant: the database bytes, the clock and in-memory parts."""

    image: bytes
    clock_start: datetime
    clock_now: datetime
    parts: dict[str, Any]


@dataclass(frozen=True)
class SnapshotPart:
    """In-memory state that a snapshot carries: `save` answers a copy, `load` puts it back."""

    save: Callable[[], Any]
    load: Callable[[Any], None]


class Emulator:
    """Owns the store; `reset` puts it back to the loaded fixtures in one backup copy."""

    def __init__(
        self,
        settings: Settings,
        seeders: list[Seeder] | Seeding,
        fixtures: FixtureSet | None = None,
    ) -> None:
        self.settings = settings
        self.seeding = seeders if isinstance(seeders, Seeding) else Seeding([], list(seeders))
        # One clock object for the app's life: reset rewinds it, never replaces it.
        self.clock = Clock(speed=settings.clockSpeed)
        self.fixtures_dir = str(Path(settings.fixtures).resolve())
        self.fixtures: FixtureSet | None = fixtures
        self.store: Store | None = None
        self.on_reset: list[Callable[[], None]] = []
        # Only after a reset or fixture load, not a snapshot restore: what describes the
        # session rather than the state (the journal of incoming calls, /v1 faults).
        self.on_fixtures_reset: list[Callable[[], None]] = []
        # In-memory state worth more than a cache (fault call counts), saved with snapshots;
        # by name, as owners may register after a snapshot was taken (lazily built contexts).
        self.snapshot_parts: dict[str, SnapshotPart] = {}
        # The database right after seeding, serialized: reset restores it in one copy.
        self._pristine: bytes | None = None
        # With a seed cache: the cached image of the fixtures instead of _pristine's bytes.
        self._images = None if settings.seedCache is None else ImageCache(settings.seedCache)
        self._image: Path | None = None
        # (digest, image) that build_image found just before start: not hashed twice.
        self._prepared: tuple[str, Path] | None = None
        # In memory: the seeded image read into a connection before start (`emulator serve`),
        # which start() adopts as its store.
        self.preload: ImagePreload | None = None
        # Reset, fixtures, restore, snapshot, advance and export runs never interleave.
        self.operations = Operations()
        # The store's version right after a start that seeded it: unchanged since, the
        # store is still the pristine image (a workspace copies it without seeding).
        self._seeded_version: int | None = None

    @property
    def db(self) -> Store:
        assert self.store is not None, "emulator not started"
        return self.store

    async def start(self) -> None:
        """Load the fixtures and open the store; a `--db` file that holds state is kept as is.
        Opening twice is a no-op (`emulator serve` opens it before the lifespan runs)."""
        if self.store is not None:
            return
        if self.preload is not None and self.settings.db is None:
            await self._adopt_preload(self.preload)
            await self.load_clock()
            return
        copied = await self._copy_seed_image()
        self.store = await Store.open(
            self.settings.db, self.settings.dbCacheKib, self.settings.dbCheckpointPages
        )
        if copied:
            await self.store.write(lambda conn: write_meta(conn, "fixtures", self.fixtures_dir))
            self._image = self._prepared = None
            self._seeded_version = self.store.version
        elif await self.store.get_meta("fixtures") is None:
            digest, self._image = self._prepared or (self._digest(), None)
            if digest is not None and (self._image is None or not self._image.is_file()):
                self._image = self._find_image(digest)
            if self._image is not None:
                await self._restore_seed_image(self._image)
            else:
                if self.fixtures is None:
                    self.fixtures = load_fixture_dir(self.fixtures_dir)
                await self.store.write(self._seed_into)
                if digest is not None:
                    await self.store.read(lambda conn: self._save_image(conn, digest))
            self._image = self._prepared = None  # the first reset hashes the directory again
            self._seeded_version = self.store.version
        else:
            log.info("kept the state stored in %s", self.settings.db)
        await self.load_clock()
        # The decoded records are in the store now; holding them would double the memory.
        self.fixtures = None

    async def _adopt_preload(self, preload: ImagePreload) -> None:
        """The store on the preloaded image's connection, named for this fixture directory
        (as `_restore_seed_image` leaves it)."""
        self.preload = None
        self.store = await Store.adopt(preload.connection())
        await self.store.write(lambda conn: write_meta(conn, "fixtures", self.fixtures_dir))
        self._image = self._prepared = None  # the first reset finds the image again
        self._seeded_version = self.store.version
        self.fixtures = None

    async def _copy_seed_image(self) -> bool:
        """A `--db` file that holds no database yet becomes a copy of the seeded image, when
        one is cached: a file copy, where restoring into it would write every page twice
        (the WAL, then the file) through this process."""
        if self.settings.db is None or self._images is None:
            return False
        target = Path(self.settings.db)
        if not empty_db_file(target):
            return False
        digest, image = self._prepared or (self._digest(), None)
        if digest is not None and (image is None or not image.is_file()):
            image = self._find_image(digest)
        if image is None:
            return False
        await asyncio.to_thread(copy_image, image, target)
        return True

    async def start_from_image(self, image: bytes) -> None:
        """Open an in-memory store holding `image`, the seeded image of this emulator's
        fixture directory (a workspace: one copy, no seeding); resets copy it back. The bytes
        are shared, never changed, by every emulator started from them."""
        self.store = await Store.open(None)
        try:
            await self.store.restore(image)
            await self.load_clock()
        except BaseException:
            await self.close()
            raise
        self._pristine = image
        self.fixtures = None

    async def pristine_image(self) -> bytes | None:
        """The seeded image of the loaded fixtures, when it is at hand without seeding: kept
        by a reset, in the seed cache, or the store itself while nothing changed it since
        the start seeded it. None: only seeding again would give it."""
        if self._pristine is not None:
            return self._pristine
        if self._image is not None and self._image.is_file():
            return await asyncio.to_thread(self._image.read_bytes)
        if self.store is not None and self.store.version == self._seeded_version:
            self._pristine = await self.store.serialize()
            return self._pristine
        return None

    async def close(self) -> None:
        if self.preload is not None:  # a start that ended before its store opened
            self.preload.close()
            self.preload = None
        if self.store is not None:
            await self.store.close()
            self.store = None
        self._pristine = None

    def build_image(
        self,
        digest_of: Callable[[], str | None] | None = None,
        worker: ContactsWorker | None = None,
        ready: Callable[[], None] | None = None,
        idle: Idle = lambda done: None,
    ) -> Path | None:
        """Before serving (the command line): the cached image of the fixtures, seeded now if
        there is none yet, validating and seeding file by file with contacts in chunks so
        that no start holds every decoded record. None: no seed cache, or the directory is
        not cacheable. Raises FixtureError (and keeps no image). `digest_of` answers the
        directory's digest when it was computed beforehand (a DigestThread's result);
        `worker`, spawned for this directory, writes the contacts meanwhile (closed here).
        `ready` is called once a new image is in place, before the decoded files are freed
        and the worker's files removed (a seeding process answers then). `idle(done)` is
        work done where the seeding would wait, until `done()` (the server's imports): for
        the worker's memberships, and while its contacts are copied (SQLite holds no GIL)."""
        try:
            if self._images is None:
                return None
            digest = self._digest() if digest_of is None else digest_of()
            if digest is None:
                return None
            found = self._images.find(digest)
            if found is not None:
                self._prepared = (digest, found)
                return found
            with _gc_paused():
                return self._seed_image(self._images, digest, worker, ready, idle)
        finally:
            if worker is not None:
                worker.close()
            heap.trim()  # the decoded fixtures' memory, before the image comes into memory

    def _seed_image(
        self,
        images: ImageCache,
        digest: str,
        worker: ContactsWorker | None,
        ready: Callable[[], None] | None,
        idle: Idle,
    ) -> Path | None:
        # The biggest files one after the other: contacts (in chunks), then the files that
        # only refer to them, so their decoded records are never alive together.
        later = ("conversations.json", "crm.json")
        fixtures = decode_fixture_dir(self.fixtures_dir, skip=(ContactStream.name, *later))
        stamp("files decoded but contacts, conversations, crm")

        def rest() -> None:
            more = decode_fixture_dir(self.fixtures_dir, only=later)
            fixtures.conversations, fixtures.crm = more.conversations, more.crm
            stamp("conversations and crm decoded")

        def in_process(
            conn: sqlite3.Connection,
            indexes: Indexes,
            before: Callable[[], None],
            after: Callable[[], None],
        ) -> None:
            contacts = ContactStream(
                self.fixtures_dir,
                {c.id for c in fixtures.companies},
                {c.id for c in fixtures.campaigns},
            )
            for chunk in contacts.chunks():
                write_contact_rows(conn, *contact_rows(chunk))
            indexes.build_later("contacts")  # on the other core, while the rest decodes
            rest()
            check_fixtures(fixtures, contacts.ids)  # the other files' references to contacts
            indexes.wait()
            before()
            after()

        def in_worker(
            conn: sqlite3.Connection,
            indexes: Indexes,
            before: Callable[[], None],
            after: Callable[[], None],
        ) -> None:
            assert worker is not None
            # While the worker writes contacts: the other files, checked with every contact
            # reference noted, and every other table. An error here comes after any of the
            # worker's (contacts came first: their errors were met first).
            try:
                rest()
                asked = AnyContact()
                try:
                    check_fixtures(fixtures, asked)
                except FixtureError:
                    check_fixtures(fixtures, worker.result())  # the first error in file order
                    raise
                stamp("references checked")
                before()
                # While the worker writes the memberships: the indexes of the tables the rest
                # does not write (an index built before a write is still right, only slower).
                indexes.build_except(("contacts", "campaign_members", "simulation_members"))
                stamp("indexes built but contacts' and memberships'")
                idle(worker.members_ready)
                worker.copy_members_into(conn)  # decoded from contacts.json by the worker
                stamp("memberships copied")
                after()
            except Exception:
                worker.wait()  # its error first: contacts came first
                raise
            indexes.build_except(("contacts",))  # while the worker may still run
            stamp("indexes built but contacts'")
            indexes.build_except(())  # on the empty table: the copy brings their entries
            worker.wait()
            stamp("contacts worker done")
            # The references to contacts are looked up in the worker's file (a connection of
            # their own) while its contacts are copied in on another thread (SQLite lets go
            # of the GIL; the lookup's memory stays in this thread's heap, where it was): a
            # reference to no contact fails the seeding all the same, only after the copy.
            with ThreadPoolExecutor(1) as copier:
                copied = copier.submit(worker.copy_into, conn)
                all_known = worker.knows_all(asked.asked)
                idle(copied.done)
                copied.result()
            stamp("contacts copied, references to contacts checked")
            if not all_known:
                check_fixtures(fixtures, worker.result())  # the first reference to no contact

        self.fixtures = fixtures
        contacts_phase = in_process if worker is None else in_worker
        try:
            built = images.build(digest, lambda conn: self._seed_into(conn, contacts_phase))
        except (OSError, sqlite3.Error) as exc:  # an unwritable or full cache: seed in memory
            log.warning("seed cache %s not usable (%s); seeding in memory", images.directory, exc)
            return None
        else:
            self._prepared = (digest, built)
            if ready is not None:  # outside the try: a server gone is not a cache unusable
                ready()
            return built
        finally:
            self.fixtures = None

    def _seed_into(self, conn: sqlite3.Connection, contacts: ContactsPhase | None = None) -> None:
        """Every seeder into `conn`; with `contacts`, the fixtures' contacts are streamed (not
        in `self.fixtures`) and `contacts` writes them and runs the seeders."""
        fixtures = self.fixtures
        assert fixtures is not None
        if fixtures.clockStart is None:  # the clock's start (on reset: the same as before)
            fixtures.clockStart = now_iso(self.clock.start)  # seeders date records from it

        def run(seeders: list[Seeder]) -> None:
            for seeder in seeders:
                seeder(conn, fixtures)
                stamp(f"seeder {seeder.__module__}.{seeder.__qualname__}")

        def fill(conn: sqlite3.Connection, indexes: Indexes) -> None:
            if contacts is None:
                run(self.seeding.before)
                run(self.seeding.after)
            else:
                contacts(
                    conn,
                    indexes,
                    lambda: run(self.seeding.before),
                    lambda: run(self.seeding.after),
                )

        bulk_load(conn, fill)
        write_meta(conn, "fixtures", self.fixtures_dir)
        write_meta(conn, "clock.start", fixtures.clockStart)
        write_meta(conn, "clock", fixtures.clockStart)

    def _digest(self) -> str | None:
        if self._images is None:
            return None
        return fixture_digest(self.fixtures_dir, self._images.directory)

    def _find_image(self, digest: str) -> Path | None:
        return None if self._images is None else self._images.find(digest)

    def _save_image(self, conn: sqlite3.Connection, digest: str) -> None:
        if self._images is not None:
            self._images.save(conn, digest)
            self._image = self._images.find(digest)

    async def _restore_seed_image(self, image: Path) -> None:
        """The seeded image, named for this fixture directory (an image is shared by
        every directory holding the same files)."""
        await self.db.restore_path(image)
        await self.db.write(lambda conn: write_meta(conn, "fixtures", self.fixtures_dir))

    async def load_clock(self) -> None:
        """Set the clock from the stored `clock.start` and `clock` (after a start, reset or
        restore of a whole database image); a database without them starts at the wall time."""
        start, current = await self.db.get_meta("clock.start"), await self.db.get_meta("clock")
        begin = parse_iso(start) if start else wall_now()
        self.clock.restart(begin, parse_iso(current) if current else begin)

    async def reset(self) -> None:
        """Put every table back to the fixture directory's records (once nothing else runs)."""
        async with self.operations.exclusive("reset"):
            await self._reset()

    async def reset_onto(self, fixtures: FixtureSet) -> None:
        """Reset onto fixtures already loaded (a scenario's own), not the directory's files."""
        async with self.operations.exclusive("reset"):
            self.fixtures = fixtures  # the first reset seeds from these
            await self._reset()

    async def _reset(self) -> None:
        """The first reset reads the directory again and keeps the seeded database as bytes
        (with a seed cache: as the cached image, not in memory); later resets only copy
        those bytes back.
        """
        if self._pristine is None and (self._image is None or not self._image.is_file()):
            digest = self._digest()
            self._image = None if digest is None else self._find_image(digest)
            if self._image is None:
                if self.fixtures is None:
                    self.fixtures = load_fixture_dir(self.fixtures_dir)
                pristine = open_sync(None)
                try:
                    pristine.execute("BEGIN")
                    self._seed_into(pristine)
                    pristine.execute("COMMIT")
                    if digest is not None:
                        self._save_image(pristine, digest)
                    if self._image is None:
                        self._pristine = pristine.serialize()
                finally:
                    pristine.close()
                    self.fixtures = None
        if self._image is not None:
            await self._restore_seed_image(self._image)
        else:
            assert self._pristine is not None
            await self.db.restore(self._pristine)
        await self.load_clock()
        for hook in self.on_reset:
            hook()
        for hook in self.on_fixtures_reset:
            hook()

    async def capture(self) -> StateImage:
        """The whole state as a StateImage (the database is serialized in one db-thread hop)."""
        async with self.operations.exclusive("snapshot"):
            return await self._capture()

    async def _capture(self) -> StateImage:
        image = await self.db.serialize()
        parts = {name: part.save() for name, part in self.snapshot_parts.items()}
        return StateImage(image, self.clock.start, self.clock.now(), parts)

    async def restore_image(self, state: StateImage) -> None:
        """Put back a captured state: database, clock, then caches dropped and parts reloaded
        (a part registered after the capture keeps the fresh state its reset hook gave it)."""
        async with self.operations.exclusive("snapshot restore"):
            await self._restore_image(state)

    async def _restore_image(self, state: StateImage) -> None:
        await self.db.restore(state.image)
        # The same clock object, set back (a realtime clock runs on from the saved moment).
        self.clock.restart(state.clock_start, state.clock_now)
        for hook in self.on_reset:
            hook()
        for name, value in state.parts.items():
            if name in self.snapshot_parts:
                self.snapshot_parts[name].load(value)

    async def load_fixtures(self, directory: str) -> None:
        """Validate another fixture directory (read off the event loop), then reset onto it
        (nothing changes if invalid)."""
        async with self.operations.exclusive("fixture load"):
            fixtures = await asyncio.to_thread(load_fixture_dir, directory)
            if fixtures.clockStart is None:
                fixtures.clockStart = now_iso(wall_now())
            before = (self.fixtures_dir, self._pristine, self._image)
            self.fixtures, self.fixtures_dir = fixtures, str(Path(directory).resolve())
            self._pristine = self._image = None
            try:
                await self._reset()
            except Exception as exc:
                # Seeding failed past validation (it seeds a database of its own before
                # copying it in): the previous fixtures stay loaded, the state as it was, and
                # reset keeps working on them.
                self.fixtures = None
                self.fixtures_dir, self._pristine, self._image = before
                raise FixtureError(f"{directory}: cannot be seeded: {exc}") from exc
