"""Crash truth (sends.py): an `emulator export --db` process killed with SIGKILL at several points
of its run, against a served reference CRM, then run again to the end. The CRM then holds every
activity once, except those whose POST was in flight at the kill (at most one batch of
concurrent calls), and the second run's report names each of those as possibly duplicated.
The send log itself: a write that fails or is cancelled loses no completion."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.processes import ROOT, emulator_process

KEY = "crm-demo-key"
IN_FLIGHT = 4  # the exporter's concurrent calls (RunContext's default)
# Slow POSTs: the kill lands inside the activities and tasks phases, not after them.
SLOW = [
    {"endpoint": "POST /activities", "latencyMs": 25},
    {"endpoint": "POST /tasks", "latencyMs": 150},
]


def stored(base: str, kind: str) -> list[dict[str, Any]]:
    """Everything the reference CRM holds of `kind`, every page."""
    items: list[dict[str, Any]] = []
    page = 1
    while True:
        answer = httpx.get(
            f"{base}/_emulator/crm/{kind}", params={"page": page, "pageSize": 100}, timeout=10
        )
        assert answer.status_code == 200, answer.text
        data = answer.json()["data"]
        items += data
        if len(data) < 100:
            return items
        page += 1


def held(base: str, kind: str) -> int:
    answer = httpx.get(f"{base}/_emulator/crm/{kind}", params={"pageSize": 1}, timeout=10)
    return int(answer.json()["meta"]["total"])


def export_command(base: str, db: Path | None) -> list[str]:
    command = [sys.executable, "-m", "emulator", "export", "--crm-url", f"{base}/crm"]
    command += ["--api-key", KEY, "--json"]
    return command + ([] if db is None else ["--db", str(db)])


def kill_when(base: str, db: Path, kind: str, at_least: int) -> None:
    """Start an export; SIGKILL it once the CRM holds `at_least` of `kind`."""
    process = subprocess.Popen(
        export_command(base, db), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while held(base, kind) < at_least:
            assert process.poll() is None, "the export ended before the kill point"
            assert time.monotonic() < deadline, "kill point never reached"
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def clean_counts() -> tuple[int, int]:
    """How many activities and tasks one clean export leaves in a fresh CRM."""
    with emulator_process() as base:
        done = subprocess.run(
            export_command(base, None),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return held(base, "activities"), held(base, "tasks")


@pytest.fixture(scope="module")
def clean() -> tuple[int, int]:
    return clean_counts()


@pytest.mark.parametrize(
    ("kind", "at_least"),
    [("activities", 1), ("activities", 60), ("tasks", 1)],
    ids=["first-activity", "mid-activities", "first-task"],
)
def test_after_kill_9_only_the_calls_in_flight_may_be_logged_twice_and_each_is_named(
    tmp_path: Path, clean: tuple[int, int], kind: str, at_least: int
) -> None:
    db = tmp_path / "platform.db"
    with emulator_process() as base:
        current = httpx.get(f"{base}/_emulator/crm/settings").json()
        shown = httpx.put(f"{base}/_emulator/crm/settings", json={**current, "faults": SLOW})
        assert shown.status_code == 200, shown.text
        kill_when(base, db, kind, at_least)
        again = subprocess.run(
            export_command(base, db),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert again.returncode == 0, again.stderr + again.stdout
        report = json.loads(again.stdout)
        activities = stored(base, "activities")
        tasks = stored(base, "tasks")
    named = {(d["kind"], d["id"]) for d in report["possiblyDuplicated"]}
    assert len(named) <= IN_FLIGHT  # at most one batch of concurrent calls
    logged = Counter(int(a["metadata"]["messageId"]) for a in activities)
    twice = {m for m, n in logged.items() if n > 1}
    assert all(n <= 2 for n in logged.values())
    assert {("activity", m) for m in twice} <= named  # every duplicate is named
    assert len(logged) == clean[0]  # every activity is there
    assert len(activities) == clean[0] + len(twice)
    # Tasks carry no platform id: count them against the named ones.
    task_dups = len(tasks) - clean[1]
    assert 0 <= task_dups <= sum(1 for k, _ in named if k == "task")
    # Each named one was resent by this run, and says so in every output's warnings.
    if named:
        warned = [g for g in report["warnings"] if "possibly logged twice" in g["message"]]
        assert sum(g["count"] for g in warned) == len(named)


@pytest.mark.anyio
async def test_a_send_log_whose_write_fails_stops_the_next_send_and_its_flush() -> None:
    from emulator.exporter.sends import SendLog

    writes: list[int] = []

    async def write(fn: Any) -> None:
        writes.append(1)
        raise RuntimeError("disk full")

    log = SendLog("activity", "e1", lambda: "now", write, lambda c, rows: None, lambda n: None)
    with pytest.raises(RuntimeError, match="disk full"):
        await log.before(1)  # the intent was not committed: the POST must not go out
    log.after(1, "a1")
    with pytest.raises(RuntimeError, match="disk full"):
        await log.flush()
    with pytest.raises(RuntimeError, match="disk full"):
        await log.before(2)
    assert len(writes) == 2  # the flush tried once more to keep the CRM id answered


def intents_db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE export_intents (kind TEXT NOT NULL, recordId INTEGER NOT NULL,"
        " exportId TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (kind, recordId))"
    )
    return conn


@pytest.mark.anyio
async def test_a_send_with_no_write_on_its_way_commits_its_intent_in_the_same_turn() -> None:
    from emulator.exporter.sends import SendLog

    conn = intents_db()

    async def write(fn: Any) -> None:
        fn(conn)  # an idle store: a brief write runs at once

    stored: list[tuple[str, int]] = []
    log = SendLog(
        "activity", "e1", lambda: "now", write, lambda c, r: stored.extend(r), lambda n: None
    )
    turned = []
    asyncio.get_running_loop().call_soon(turned.append, True)
    await log.before(1)
    assert not turned  # the POST may go out before the loop runs anything else
    assert conn.execute("SELECT recordId FROM export_intents").fetchall() == [(1,)]
    log.after(1, "a1")
    await log.flush()
    assert conn.execute("SELECT count(*) FROM export_intents").fetchone() == (0,)
    assert stored == [("a1", 1)]


@pytest.mark.anyio
async def test_a_send_cancelled_while_its_write_waits_leaves_no_intent_and_loses_nothing() -> None:
    """The store busy: the first call's write waits, a second call's intent queues behind it.
    Cancelled then, the first call's intent is never written (its POST is not sent), while
    the completion its write carried and the second call's intent are written next."""
    from emulator.exporter.sends import SendLog

    conn = intents_db()
    busy = asyncio.Event()

    async def write(fn: Any) -> None:
        await busy.wait()
        fn(conn)

    stored: list[tuple[str, int]] = []
    log = SendLog(
        "activity", "e1", lambda: "now", write, lambda c, r: stored.extend(r), lambda n: None
    )
    conn.execute("INSERT INTO export_intents VALUES ('activity', 7, 'e1', 'now')")
    log.after(7, "a7")  # an answered call: its CRM id rides with the next write
    first = asyncio.create_task(log.before(1))
    await asyncio.sleep(0)
    second = asyncio.create_task(log.before(2))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    busy.set()
    await asyncio.wait_for(second, 5)
    assert conn.execute("SELECT recordId FROM export_intents").fetchall() == [(2,)]
    assert stored == [("a7", 7)]
    await log.flush()


@pytest.mark.anyio
async def test_calls_starting_together_write_their_intents_once_before_any_is_sent() -> None:
    """send_all with 4 calls in flight over 6 rows: the first 4 start together, their intents
    in one write; answered in the same turn, they free 4 slots and the last 2 start together,
    in the next write (with the first 4's CRM ids). Every POST goes out after its intent's
    commit, never more than 4 between intent and completion."""
    from types import SimpleNamespace

    from emulator.exporter.context import RunContext
    from emulator.exporter.phases.activities import send_all
    from emulator.exporter.sends import SendLog

    conn = intents_db()
    written: list[list[int]] = []

    def intents() -> set[int]:
        return {r for (r,) in conn.execute("SELECT recordId FROM export_intents")}

    async def write(fn: Any) -> None:
        before = intents()
        fn(conn)  # an idle store: a brief write runs at once
        written.append(sorted(intents() - before))

    stored: list[tuple[str, int]] = []
    log = SendLog(
        "activity", "e1", lambda: "now", write, lambda c, r: stored.extend(r), lambda n: None
    )
    ctx = SimpleNamespace(in_flight=4)
    ctx.bounded = partial(RunContext.bounded, ctx)
    sent: list[int] = []

    async def rows() -> Any:
        for rid in range(1, 7):
            yield rid

    async def post(rid: int) -> None:
        await log.before(rid)
        assert rid in intents()  # committed before the POST
        assert len(intents()) <= 4
        sent.append(rid)
        await asyncio.sleep(0)  # the CRM answers
        log.after(rid, f"a{rid}")

    await send_all(ctx, rows(), post, log, lambda rid: rid)  # type: ignore[arg-type]
    assert sent == [1, 2, 3, 4, 5, 6]
    assert written[:2] == [[1, 2, 3, 4], [5, 6]]
    assert intents() == set()
    assert sorted(stored) == sorted((f"a{r}", r) for r in range(1, 7))
