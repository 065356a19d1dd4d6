"""Helpers of the campaign simulation tests: small fixture sets and whole-state dumps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from tests.processes import generated_fixtures

# Every table an event writes to, with what identifies a row (ids are part of the dump:
# the same story must also hand out the same ids).
DUMPS = {
    "events": "SELECT id, type, contactId, campaignId, messageId, occurredAt, data FROM events",
    "messages": "SELECT id, conversationId, content, subject, type, isContactSender, sequenceIndex,"
    " createdAt, updatedAt, viewCount, clickCount FROM messages",
    "conversations": "SELECT * FROM conversations",
    "members": "SELECT campaignId, contactId, stepIndex, sequenceStatus, engagementStatus,"
    " nextActionAt, opens, clicks, replies FROM campaign_members",
    "contacts": "SELECT id, updatedAt FROM contacts",
    "tasks": "SELECT id, contactId, campaignId, stepIndex, subject, type, dueDate FROM platform_tasks",
    "campaigns": "SELECT id, status FROM campaigns",
}


def small_fixtures(out: Path, contacts: int = 24, campaigns: int = 3, seed: int = 5) -> Path:
    """A generated set whose campaigns are all ACTIVE and carry no fixture conversations nor
    tasks (so every member is simulated from the clock start), without webhooks or actions
    runs."""
    generated_fixtures(out, contacts=contacts, companies=4, campaigns=campaigns, seed=seed)
    rows = json.loads((out / "campaigns.json").read_text())
    for row in rows:
        row["status"] = "ACTIVE"
    (out / "campaigns.json").write_text(json.dumps(rows))
    # no webhook subscriptions nor actions runs: the listeners have nothing to deliver; no
    # task at start either (on either side): every task is one a simulated TASK step made
    for name in ("conversations.json", "webhooks.json", "actions_runs.json", "tasks.json"):
        (out / name).write_text("[]")
    crm = json.loads((out / "crm.json").read_text())
    crm["tasks"] = []
    (out / "crm.json").write_text(json.dumps(crm))
    return out


def reseed(directory: Path, seed: int) -> None:
    """Give every campaign of a fixture directory another outcome seed."""
    path = directory / "campaigns.json"
    rows = json.loads(path.read_text())
    for i, row in enumerate(rows):
        row["seed"] = seed * 31 + i
    path.write_text(json.dumps(rows))


async def dump(app: Starlette) -> dict[str, list[tuple[Any, ...]]]:
    db = app.state.services.emulator.db
    return {name: await db.fetchall(sql + " ORDER BY 1, 2") for name, sql in DUMPS.items()}
