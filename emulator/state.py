"""The emulator's whole resettable state: store, loaded fixtures and clock."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

from emulator.clock import Clock
from emulator.fixtures.loader import load_fixture_dir
from emulator.fixtures.models import FixtureSet
from emulator.settings import Settings
from emulator.store.db import Store, open_sync

log = logging.getLogger(__name__)

Seeder = Callable[[sqlite3.Connection, FixtureSet], None]


class Emulator:
    """Owns the store; `reset` puts it back to the loaded fixtures in one backup copy."""

    def __init__(
        self, settings: Settings, seeders: list[Seeder], fixtures: FixtureSet | None = None
    ) -> None:
        self.settings = settings
        self.seeders = seeders
        self.clock = Clock()
        self.fixtures_dir = str(Path(settings.fixtures).resolve())
        self.fixtures: FixtureSet | None = fixtures
        self.store: Store | None = None
        self.on_reset: list[Callable[[], None]] = []
        self._pristine: sqlite3.Connection | None = None

    @property
    def db(self) -> Store:
        assert self.store is not None, "emulator not started"
        return self.store

    async def start(self) -> None:
        """Load the fixtures and open the store; a `--db` file that holds state is kept as is."""
        if self.fixtures is None:
            self.fixtures = load_fixture_dir(self.fixtures_dir)
        self.store = await Store.open(self.settings.db)
        if await self.store.get_meta("fixtures") is None:
            await self.store.write(self._seed_into)
        else:
            log.info("kept the state stored in %s", self.settings.db)

    async def close(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None
        if self._pristine is not None:
            self._pristine.close()
            self._pristine = None

    def _seed_into(self, conn: sqlite3.Connection) -> None:
        assert self.fixtures is not None
        for seeder in self.seeders:
            seeder(conn, self.fixtures)
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('fixtures', ?)", (self.fixtures_dir,)
        )

    async def reset(self) -> None:
        """Put every table back to the loaded fixtures."""
        if self._pristine is None:
            pristine = open_sync(None)
            pristine.execute("BEGIN")
            self._seed_into(pristine)
            pristine.execute("COMMIT")
            self._pristine = pristine
        await self.db.replace_with(self._pristine)
        self.clock = Clock()
        for hook in self.on_reset:
            hook()

    async def load_fixtures(self, directory: str) -> None:
        """Validate another fixture directory, then reset onto it (nothing changes if invalid)."""
        fixtures = load_fixture_dir(directory)
        self.fixtures, self.fixtures_dir = fixtures, str(Path(directory).resolve())
        if self._pristine is not None:
            self._pristine.close()
            self._pristine = None
        await self.reset()
