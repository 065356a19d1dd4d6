"""A warm start's image read into memory before the store opens: the store holds the same
rows as one restored from the image, a copy that fails is the store's error, and the work
done meanwhile runs beside the copy."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from emulator.app import create_app
from emulator.fixtures import image_cache
from emulator.fixtures.image_cache import ImageCache, fixture_digest
from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.image_preload import ImagePreload
from emulator.state import Emulator
from tests.conftest import ALL, make_settings
from tests.processes import free_port

pytestmark = pytest.mark.anyio


def _tables(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM main.sqlite_master WHERE type = 'table' ORDER BY name"
        )
    ]
    return {name: sorted(conn.execute(f'SELECT * FROM main."{name}"'), key=repr) for name in names}


async def _emulator(cache: Path) -> Emulator:
    emulator: Emulator = create_app(make_settings(seedCache=str(cache))).state.services.emulator
    return emulator


async def test_a_preloaded_start_holds_the_rows_of_a_restored_one_and_resets_to_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(image_cache, "_SETTLED_NS", -(10**12))  # the digest is remembered
    cache = tmp_path / "cache"
    restored = await _emulator(cache)
    restored.build_image()  # seeds the image: a cold start
    await restored.start()
    expected = await restored.db.read(_tables)
    await restored.close()
    assert ImagePreload.find(DEFAULT_FIXTURES, tmp_path / "elsewhere") is None

    preload = ImagePreload.find(DEFAULT_FIXTURES, cache)
    assert preload is not None
    assert preload.image == ImageCache(cache).find(fixture_digest(DEFAULT_FIXTURES) or "")
    ran: list[str] = []
    preload.load(meanwhile=lambda: ran.append(threading.current_thread().name))
    assert len(ran) == 1 and ran[0] != threading.current_thread().name

    warm = await _emulator(cache)
    warm.preload = preload
    await warm.start()
    try:
        assert warm.preload is None
        assert await warm.db.read(_tables) == expected
        assert warm.db.restored > 0  # page caches know the whole database was replaced
        await warm.db.execute("DELETE FROM contacts")
        await warm.reset()
        assert await warm.db.read(_tables) == expected
    finally:
        await warm.close()
    with pytest.raises(RuntimeError, match="taken already"):
        preload.connection()


async def test_a_copy_that_failed_is_raised_where_the_store_opens(tmp_path: Path) -> None:
    preload = ImagePreload(tmp_path / "gone.sqlite")

    def broken() -> None:
        raise ValueError("dropped: the copy goes on")

    preload.load(meanwhile=broken)
    emulator = await _emulator(tmp_path / "cache")
    emulator.preload = preload
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        await emulator.start()
    assert emulator.store is None
    preload.close()


def test_an_image_not_taken_is_closed(tmp_path: Path) -> None:
    image = tmp_path / "image.sqlite"
    with sqlite3.connect(image) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    preload = ImagePreload(image)
    preload.load()
    preload.close()
    with pytest.raises(RuntimeError, match="not loaded"):
        preload.connection()


def test_a_warm_serve_answers_as_the_cold_one(tmp_path: Path) -> None:
    fixtures, cache = DEFAULT_FIXTURES, tmp_path / "cache"  # files settled: digest remembered
    answers = []
    for _ in ("cold", "warm"):
        port = free_port()
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "emulator", "serve", "--port", str(port)),
                *("--fixtures", str(fixtures), "--seed-cache", str(cache)),
                *("--link-base", "http://crm.example"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()  # printed once listening
            base = f"http://127.0.0.1:{port}"
            health = httpx.get(f"{base}/_emulator/health").json()
            page = httpx.get(f"{base}/v1/contacts", params={"pageSize": 5}, headers=ALL).json()
            answers.append((banner.split(" (", 1)[1], health["counts"], page))
        finally:
            proc.terminate()
            proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        if not answers[1:]:
            assert ImagePreload.find(fixtures, cache) is not None  # the next start is warm
    assert answers[0] == answers[1]
    assert "200 contacts" in answers[0][0] and answers[0][1]["contacts"] == 200
