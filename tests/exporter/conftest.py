"""Exporter fixtures: a small platform in a fresh in-memory store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from emulator.state import Emulator
from tests.exporter.harness import open_platform


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def platform() -> AsyncIterator[Emulator]:
    emulator = await open_platform()
    yield emulator
    await emulator.close()
