"""emulator/server.py's openers of the platform for the command line: a start cut short
(Ctrl-C) closes the store it opened, in both the store-only and the served opener."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from emulator.app import create_app
from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.server import Platform, platform_only, server_opener
from emulator.settings import Settings
from emulator.state import Emulator
from emulator.store.db import Store

pytestmark = pytest.mark.anyio

Opener = Callable[[Settings, Any], AbstractAsyncContextManager[Platform]]


@pytest.mark.parametrize("opener", [platform_only, server_opener(create_app)])
async def test_a_start_cut_short_closes_the_store_it_opened(
    opener: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[Store] = []
    closed: list[Store] = []
    real_open, real_close = Store.open.__func__, Store.close  # type: ignore[attr-defined]

    async def open_(cls: type[Store], *args: Any, **kwargs: Any) -> Store:
        store: Store = await real_open(cls, *args, **kwargs)
        opened.append(store)
        return store

    async def close(self: Store) -> None:
        closed.append(self)
        await real_close(self)

    reached = asyncio.Event()

    async def stuck(self: Emulator) -> None:  # the start's last step, after the store opened
        reached.set()
        await asyncio.sleep(60)

    monkeypatch.setattr(Store, "open", classmethod(open_))
    monkeypatch.setattr(Store, "close", close)
    monkeypatch.setattr(Emulator, "load_clock", stuck)

    async def enter() -> None:
        async with opener(Settings(fixtures=str(DEFAULT_FIXTURES)), None):
            raise AssertionError("the start was meant to be cut short")

    starting = asyncio.create_task(enter())
    try:
        await asyncio.wait_for(reached.wait(), 30)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        assert len(opened) == 1 and closed == opened
    finally:  # a store left open keeps its thread, and the test run, alive
        for store in opened:
            if store not in closed:
                await real_close(store)
