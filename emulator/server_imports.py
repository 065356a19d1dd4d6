"""The server's modules, imported a few at a time where a cold start would otherwise wait: for
the fixtures' digest (hashed on a thread), for the contacts worker's memberships, for SQLite's
copy of its contacts (no GIL held). What is left is imported when the app is built."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable

# What `emulator serve` imports beyond the seeders, in steps of a few tens of milliseconds:
# the third-party packages first, then the app's route modules, the app, uvicorn's parts.
SERVER_MODULES = (
    "httpx",
    "starlette.applications",
    "emulator.public_api.routes",
    "emulator.crm.routes",
    "emulator.control.routes",
    "emulator.dashboard.routes",
    "emulator.app",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "emulator.connection_limits",
)


class PendingImports:
    """`until(done)` imports the next modules while `done()` is false."""

    def __init__(self, modules: tuple[str, ...] = SERVER_MODULES) -> None:
        self._todo = list(modules)

    def until(self, done: Callable[[], bool]) -> None:
        """The next modules, one at a time, until `done()` or none is left."""
        while self._todo and not done():
            name = self._todo.pop(0)
            # a module that fails is imported again where it is needed, and fails there
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    def all(self) -> None:
        self.until(lambda: False)
