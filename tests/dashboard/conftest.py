"""One Chromium per module and a watched page per test; each module provides `server`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboard.browser import Watched, browser_or_skip, chromium, watch


@pytest.fixture(scope="module")
def browser(server: str) -> Iterator[Any]:
    with chromium(browser_or_skip()) as b:
        yield b


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Watched]:
    """A page of `server`; the test fails if it logged an error or requested anything else."""
    watched = watch(browser, server)
    yield watched
    watched.page.close()
    watched.assert_clean()
