"""Shared test harness: an app over the default fixtures, reached through httpx's ASGI transport."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import settings
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.fixtures.image_cache import CACHE_ENV
from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.settings import RateLimit, Settings

# No wall-clock deadline per example: on a shared 2-core machine one example of a pure rule
# took 303 ms against Hypothesis's default 200 under load (a timing, not the rule, failed).
settings.register_profile("emulator", deadline=None)
settings.load_profile("emulator")

ALL = {"x-api-key": "demo-all"}
READONLY = {"x-api-key": "demo-readonly"}
NO_CONTACTS_READ = {"x-api-key": "demo-no-contacts-read"}
CRM_KEY = {"X-API-Key": "crm-demo-key"}


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def seed_cache_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Seed images of every `emulator serve` a test starts go to the session's temp dir, not
    the user's ~/.cache: a test run leaves nothing behind and never reads an image from
    another run or checkout."""
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("seed-cache"))
    yield
    if before is None:
        del os.environ[CACHE_ENV]
    else:
        os.environ[CACHE_ENV] = before


def make_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {"fixtures": str(DEFAULT_FIXTURES), "rateLimit": RateLimit()}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def open_client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """Run the app's lifespan and yield a client bound to it. A context manager, not a
    generator to loop over: an assertion failing inside a loop would leave the generator, and
    so the lifespan and its database threads, open, and pytest waiting for them at exit."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://emulator.localhost"
        ) as client:
            yield client


@pytest.fixture
async def app() -> Starlette:
    return create_app(make_settings())


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a fresh emulator on the default fixtures."""
    async with open_client(app) as c:
        yield c


@pytest.fixture(scope="module")
async def shared_client() -> AsyncIterator[httpx.AsyncClient]:
    """One app for a whole module, for tests whose writes do not disturb each other."""
    async with open_client(create_app(make_settings())) as c:
        yield c


@pytest.fixture
def fixtures_dir() -> Path:
    return DEFAULT_FIXTURES
