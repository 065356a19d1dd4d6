"""The server's workspaces: created from a seeded image, listed, expired when idle, removed.

A workspace created from fixtures another workspace (or the default one) already seeded is
one copy of that in-memory SQLite image: no fixture file is read again, and every workspace
started from an image shares its bytes for its own resets.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict
from pathlib import Path

import msgspec
from starlette.types import ASGIApp

from emulator.fixtures.loader import DEFAULT_FIXTURES, load_fixture_dir
from emulator.path_roots import PathRoots
from emulator.server import AppFactory
from emulator.services import Services
from emulator.store import contact_search, updated_counts
from emulator.workspaces.bundle import build_services

log = logging.getLogger(__name__)

DEFAULT_MAX = 100  # live workspaces at most (--max-workspaces)
DEFAULT_IDLE = 1800.0  # seconds without a request before one expires (--workspace-idle)
IMAGES_KEPT = 8  # seeded images of fixture directories kept (the most recently used)


class TooManyWorkspaces(Exception):
    """The cap is reached: the caller removes one first (409)."""


def fixture_dir_named(raw: str, roots: PathRoots) -> Path:
    """`raw` as a fixture directory: a bundled name ("default") or a path under the server's
    roots (raises PathRefused otherwise)."""
    if raw and "/" not in raw and (DEFAULT_FIXTURES.parent / raw).is_dir():
        raw = str(DEFAULT_FIXTURES.parent / raw)
    return roots.fixture_dir(raw)


class Workspaces:
    """The default workspace (the root paths) and the `/w/{id}/` ones."""

    def __init__(
        self,
        factory: AppFactory,
        max_count: int = DEFAULT_MAX,
        idle_seconds: float = DEFAULT_IDLE,
    ) -> None:
        self.factory = factory
        self.max_count, self.idle_seconds = max_count, idle_seconds
        # Set by `attach` once the app exists (the default workspace is built over it).
        self.app: ASGIApp | None = None
        self.default: Services | None = None
        self._spaces: dict[str, Services] = {}
        self._starting = 0  # creations under way: they count against the cap
        self._images: OrderedDict[str, bytes] = OrderedDict()  # fixture dir -> seeded image
        self._seeding: dict[str, asyncio.Lock] = {}  # one seeding per directory at a time

    def attach(self, app: ASGIApp, default: Services) -> None:
        """The app every workspace is served by, and the root paths' workspace."""
        self.app, self.default = app, default

    def get(self, workspace_id: str) -> Services | None:
        return self._spaces.get(workspace_id)

    def all(self) -> list[Services]:
        return list(self._spaces.values())

    def roots(self) -> PathRoots:
        assert self.default is not None
        settings = self.default.emulator.settings
        return PathRoots.of_server(settings.fixtures, settings.allowPaths)

    async def create(self, fixtures_dir: str | None = None, name: str | None = None) -> Services:
        """A new workspace on `fixtures_dir` (a checked directory; None: the default
        workspace's), started; raises TooManyWorkspaces at the cap."""
        assert self.default is not None and self.app is not None
        await self.expire()
        if len(self._spaces) + self._starting >= self.max_count:
            raise TooManyWorkspaces(
                f"{self.max_count} workspaces exist (the cap, --max-workspaces): "
                "remove one first (DELETE /_emulator/workspaces/{id})"
            )
        self._starting += 1
        try:
            directory = fixtures_dir or self.default.emulator.fixtures_dir
            settings = msgspec.structs.replace(
                self.default.emulator.settings, db=None, fixtures=directory
            )
            workspace_id = secrets.token_hex(6)
            while workspace_id in self._spaces:
                workspace_id = secrets.token_hex(6)
            services = build_services(
                self.app, settings, None, self.factory, workspace_id, name, self.default.secrets
            )
            await self._open(services)
            await services.start()
        finally:
            self._starting -= 1
        self._spaces[workspace_id] = services
        # its contact search's index and updatedAt counts, in the background as for the default
        contact_search.warm(services.emulator.db)
        updated_counts.warm(services.emulator.db)
        log.info("workspace %s created on %s", workspace_id, services.emulator.fixtures_dir)
        return services

    async def _open(self, services: Services) -> None:
        """Open its store from the directory's seeded image, seeding it once if none is kept."""
        emulator = services.emulator
        directory = emulator.fixtures_dir
        image = await self._image_of(directory)
        if image is None:
            async with self._seeding.setdefault(directory, asyncio.Lock()):
                image = await self._image_of(directory)  # seeded meanwhile by another call
                if image is None:
                    emulator.fixtures = await asyncio.to_thread(load_fixture_dir, directory)
                    try:
                        await emulator.start()
                        image = await emulator.pristine_image()
                    except BaseException:
                        await emulator.close()
                        raise
                    if image is not None:
                        self._keep(directory, image)
                    return
        await emulator.start_from_image(image)

    async def _image_of(self, directory: str) -> bytes | None:
        if directory in self._images:
            self._images.move_to_end(directory)
            return self._images[directory]
        for other in [self.default, *self._spaces.values()]:  # a copy: it awaits
            if other is not None and other.emulator.fixtures_dir == directory:
                image = await other.emulator.pristine_image()
                if image is not None:
                    self._keep(directory, image)
                    return image
        return None

    def _keep(self, directory: str, image: bytes) -> None:
        self._images[directory] = image
        self._images.move_to_end(directory)
        while len(self._images) > IMAGES_KEPT:
            self._images.popitem(last=False)

    async def delete(self, workspace_id: str) -> list[str] | None:
        """Remove a workspace, cancelling what runs in it; None when there is no such one.
        Answers the ids of the exports it cancelled."""
        services = self._spaces.pop(workspace_id, None)
        if services is None:
            return None
        cancelled = await services.stop(f"workspace {workspace_id} was removed")
        log.info("workspace %s removed", workspace_id)
        return cancelled

    def idle(self, services: Services, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - services.last_used

    async def expire(self) -> list[str]:
        """Remove every workspace idle for longer than `idle_seconds` (nothing running in it
        counts as use: an export still running keeps it)."""
        now = time.monotonic()
        gone = [
            s.id
            for s in self._spaces.values()
            if self.idle(s, now) > self.idle_seconds and not s.exports.tasks
        ]
        for workspace_id in gone:
            await self.delete(workspace_id)
        return gone

    async def sweep_forever(self) -> None:
        """The lifespan's task: expire idle workspaces every so often."""
        period = max(1.0, min(60.0, self.idle_seconds / 4))
        while True:
            await asyncio.sleep(period)
            try:
                await self.expire()
            except Exception:  # one failed close must not stop later sweeps
                log.exception("expiring idle workspaces failed")

    async def close_all(self) -> None:
        for workspace_id in list(self._spaces):
            await self.delete(workspace_id)
