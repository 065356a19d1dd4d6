"""A real headless Chromium (Debian's package) driven by Playwright, watching what pages do.

Never `playwright install`: the browser is the system's. `chromium-headless-shell` (apt-get
install chromium-headless-shell) first: the same Blink and V8 as `chromium` without the
browser's window and interface, which is what Playwright itself runs for headless pages; the
browser tests' Chromium took ~40% less CPU with it (docs/performance.md, "The test suite's
CPU"). Else `chromium`. Without either the browser tests skip, saying why, unless
EMULATOR_REQUIRE_BROWSER is set (CI), where a missing browser is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest

LAUNCH_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return (
        os.environ.get("CHROMIUM")
        or shutil.which("chromium-headless-shell")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )


def browser_or_skip() -> str:
    """The Chromium executable, or skip (fail where EMULATOR_REQUIRE_BROWSER is set)."""
    reason = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[test]')"
    path = chromium_path()
    if reason is None and path is None:
        reason = (
            "no Chromium on this machine: `apt-get install chromium-headless-shell`"
            " (make test does it as root)"
        )
    if reason is not None:
        if os.environ.get("EMULATOR_REQUIRE_BROWSER"):
            pytest.fail(f"browser tests required but {reason}")
        pytest.skip(reason)
    assert path is not None
    return path


@dataclass
class Watched:
    """A page with what it logged and requested: JavaScript errors and requests elsewhere."""

    page: Any
    origin: str
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def goto(self, path: str) -> Any:
        response = self.page.goto(self.origin + path)
        self.page.wait_for_load_state("load")
        return response

    def run_from_runs_page(self, kind: str, timeout: float = 120_000) -> str:
        """Start an export or verify run from /runs, follow it to its page until it is no
        longer running; answers its status."""
        self.goto("/runs")
        self.page.click(f"#start-{kind}")
        self.page.wait_for_url(re.compile(r"/runs/(exports|verify)/[^/]+$"))
        self.page.wait_for_function(
            "id => !['running', '…', undefined].includes(document.getElementById(id)?.textContent)",
            arg=f"{kind}-status",
            timeout=timeout,
        )
        return str(self.page.inner_text(f"#{kind}-status"))

    def try_in_api_docs(self, docs: str, path: str) -> None:
        """On the API docs page `docs`, open the first operation on `path`, try it out and
        execute it; the opened block is `.opblock.is-open`."""
        self.goto(docs)
        summary = self.page.locator(".opblock-summary-path", has_text=path).first
        # The summary is a deep link (a hash change): the next click waits for the open block,
        # so waiting for that navigation too only adds a wait that a loaded machine timed out.
        summary.click(no_wait_after=True)
        self.page.click(".opblock.is-open button.try-out__btn")
        self.page.click(".opblock.is-open button.execute")

    def assert_clean(self) -> None:
        assert self.errors == [], f"the page logged errors: {self.errors}"
        assert self.outside == [], f"the page requested outside the emulator: {self.outside}"


def _is_local(url: str, origin: str) -> bool:
    if url.startswith(("data:", "about:", "blob:")):
        return True
    parts, own = urlsplit(url), urlsplit(origin)
    return (parts.scheme, parts.netloc) == (own.scheme, own.netloc)


@contextmanager
def chromium(executable: str) -> Iterator[Any]:
    """One headless Chromium for a module's tests."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=LAUNCH_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def watch(browser: Any, origin: str) -> Watched:
    """A new page (laptop-sized) that records console errors, page errors and foreign requests."""
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(15_000)
    watched = Watched(page, origin.rstrip("/"))
    page.on("pageerror", lambda exc: watched.errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: watched.errors.append(f"console: {msg.text}") if msg.type == "error" else None,
    )
    page.on(
        "request",
        lambda req: None if _is_local(req.url, watched.origin) else watched.outside.append(req.url),
    )
    return watched
