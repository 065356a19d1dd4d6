"""What a chunk reads up front answers what each read would have, and the jobs of its worker
thread (the contacts' touches, the conversations' read) write and read what they would
inline, in order, or raise their error."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from functools import partial

import pytest

from emulator.platform import contacts as platform_contacts
from emulator.platform import tasks as platform_tasks
from emulator.simulation.campaigns.batch import Batch, read_conversations
from emulator.simulation.campaigns.touches import Worker
from emulator.store.db import open_sync

AT = "2026-03-01T10:00:00.000Z"


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    """Conversations with outbound and inbound messages (some numbered, some not, several
    of one number) and tasks, some keys twice."""
    conn = open_sync(None)
    rng = random.Random(7)
    conn.executemany(
        "INSERT INTO conversations VALUES (?, ?, ?, 1)", [(i, i, 1 + i % 3) for i in range(1, 41)]
    )
    messages = []
    for mid in range(1, 301):
        number = rng.choice([None, 1, 2, 3])
        messages.append((mid, rng.randint(1, 30), rng.random() < 0.3, number))
    conn.executemany(
        "INSERT INTO messages(id, conversationId, type, isContactSender, sequenceIndex,"
        " createdAt, updatedAt) VALUES (?, ?, 'EMAIL', ?, ?, 'x', 'x')",
        messages,
    )
    conn.executemany(
        "INSERT INTO platform_tasks(contactId, campaignId, stepIndex, subject) VALUES (?, ?, ?, 's')",
        [(rng.randint(1, 10), rng.randint(1, 3), rng.randint(0, 4)) for _ in range(60)],
    )
    yield conn
    conn.close()


def test_prefetched_answers_are_the_reads(conn: sqlite3.Connection) -> None:
    asked = list(range(1, 36))  # some without messages, some not in the table at all
    keys = [(c, k, s) for c in range(1, 12) for k in range(1, 4) for s in range(5)]
    read, fetched = Batch(conn), Batch(conn)
    fetched.prefetch(asked, keys)
    for conversation in asked:
        for number in range(5):
            assert fetched.sent_message(conversation, number) == read.sent_message(
                conversation, number
            )
    for key in keys:
        assert fetched.task_ids[key] == platform_tasks.find(conn, *key)


def test_conversations_read_on_the_worker_are_the_lowest_ids(conn: sqlite3.Connection) -> None:
    conn.executemany(  # a second conversation of some keys, with a higher id
        "INSERT INTO conversations VALUES (?, ?, ?, 1)", [(100 + i, i, 1 + i % 3) for i in (2, 5)]
    )
    keys = [(c, k) for c in range(1, 45) for k in range(1, 4)]  # some with none
    batch = Batch(conn)
    known = {(7, 2): 999}  # taken from there, not read
    wanted = batch.conversations_to_read(keys, known)
    assert (7, 2) not in wanted and len(wanted) == len(keys) - 1
    batch.take_conversations(Worker().submit(partial(read_conversations, conn, wanted)).wait())
    for contact, campaign in keys:
        (lowest,) = conn.execute(
            "SELECT MIN(id) FROM conversations WHERE contactId = ? AND campaignId = ?",
            (contact, campaign),
        ).fetchone()
        expected = 999 if (contact, campaign) == (7, 2) else lowest
        assert batch.conversations.get((contact, campaign)) == expected
    assert read_conversations(conn, []) == "[]"


def _touched(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    return conn.execute("SELECT id, updatedAt FROM contacts ORDER BY id").fetchall()


def test_touches_on_their_thread_write_what_the_inline_update_does() -> None:
    rows = [(f"2026-03-0{1 + i % 5}T00:00:00.000Z", i) for i in range(1, 50, 3)]
    results = []
    for threaded in (False, True):
        conn = open_sync(None)
        conn.executemany(
            "INSERT INTO contacts(id, createdAt, updatedAt) VALUES (?, ?, ?)",
            [(i, AT, "2026-03-03T00:00:00.000Z") for i in range(1, 60)],
        )
        if threaded:
            text = platform_contacts.touches_text({c: at for at, c in rows})
            Worker().submit(partial(platform_contacts.touch_text, conn, text)).wait()
        else:
            platform_contacts.touch(conn, rows)
        results.append(_touched(conn))
        conn.close()
    assert results[0] == results[1]
    assert ("2026-03-05T00:00:00.000Z") in {at for _, at in results[0]}  # moved forward
    assert {at for _, at in results[0]} >= {"2026-03-03T00:00:00.000Z"}  # never back


def test_a_failed_job_is_raised_by_wait_and_jobs_run_in_order() -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False)  # no contacts table
    worker = Worker()
    failed = worker.submit(lambda: platform_contacts.touch(conn, [(AT, 1)]))
    failed.join()  # joins, raises nothing
    with pytest.raises(sqlite3.OperationalError):
        failed.wait()
    seen: list[int] = []
    jobs = [worker.submit(lambda i=i: seen.append(i) or i) for i in range(50)]
    assert [job.wait() for job in jobs] == list(range(50))
    assert seen == list(range(50))  # one at a time, in the order submitted


def test_a_worker_thread_ends_when_idle_and_starts_again() -> None:
    worker = Worker(idle=0.01)
    assert worker.submit(threading.get_ident).wait() != threading.get_ident()
    deadline = time.monotonic() + 10
    while worker._thread is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker._thread is None  # ended after its idle time
    assert worker.submit(lambda: 7).wait() == 7  # a new thread runs the next job
