"""Bodies the control API (/_emulator) answers that no other area defines."""

from __future__ import annotations

from typing import Any

import msgspec

from emulator.crm.schemas import Activity, StoredAssociation, StoredRecord, Task
from emulator.public_api.envelopes import MetaList
from emulator.wire import Wire


class Counts(Wire):
    """Rows per platform table (field order = the order the handler counts them in)."""

    contacts: int
    companies: int
    campaigns: int
    conversations: int
    webhooks: int


class ControlHealth(Wire):
    status: str = "ok"
    fixtures: str
    db: str | None
    now: str
    counts: Counts


class CancelledRuns(Wire):
    """The ids of the runs a reset cancelled (their reports say so)."""

    exports: list[str] = msgspec.field(default_factory=list)
    verifyRuns: list[str] = msgspec.field(default_factory=list)
    advances: list[str] = msgspec.field(default_factory=list)  # stopped before the reset


class ResetOut(Wire):
    status: str = "ok"
    fixtures: str = ""
    cancelled: CancelledRuns = msgspec.field(default_factory=CancelledRuns)


class FixturesLoaded(Wire):
    """POST /_emulator/fixtures: the directory now loaded, then its row counts (flat)."""

    status: str = "ok"
    fixtures: str
    contacts: int
    companies: int
    campaigns: int
    conversations: int
    webhooks: int


class StoredActivity(Activity):
    """An activity as the CRM holds it: every field it was sent, its id and createdAt."""

    createdAt: str


# GET /_emulator/crm/{kind}: one page of the kind asked for.
STORED_PAGES: tuple[Any, ...] = (
    MetaList[StoredRecord],
    MetaList[StoredActivity],
    MetaList[Task],
    MetaList[StoredAssociation],
)
# GET /_emulator/crm/{kind}/{recordId}: one record; for associations, every link of the id.
STORED_ONE: tuple[Any, ...] = (StoredRecord, StoredActivity, Task, list[StoredAssociation])
