"""Every Part A body the reference CRM reads or writes (interfaces.md Part A, decisions.md §3).

Bodies are decoded twice: once into the typed struct, which checks the fields the CRM relies
on (ids, match keys, enums), and once as plain JSON, which keeps every field sent (unknown
and engagement names included) for storage.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from emulator.wire import Wire

MAX_BATCH = 100

Id = Annotated[str, msgspec.Meta(min_length=1)]
ActivityType = Literal["EMAIL", "NETWORK", "NETWORK_CONNECTION", "NETWORK_INMAIL"]
Direction = Literal["INBOUND", "OUTBOUND"]


class Health(Wire):
    status: str = "ok"


# --- companies and contacts -------------------------------------------------------------


class CompanyItem(Wire):
    """A company as sent to sync or create: the fields the CRM reads; others are kept as sent."""

    externalId: Id
    name: str | None = None
    domain: str | None = None
    website: str | None = None
    companyNetworkUrl: str | None = None
    ownerId: str | None = None


class ContactItem(Wire):
    """A contact as sent to sync or create."""

    externalId: Id
    email: str | None = None
    networkUrl: str | None = None
    phone: str | None = None
    mobilePhone: str | None = None
    ownerId: str | None = None


class UpdateItem(Wire):
    """A PUT item: `crmId` plus any field, all stored."""

    crmId: Id


class CompaniesIn(Wire):
    companies: Annotated[list[CompanyItem], msgspec.Meta(max_length=MAX_BATCH)]


class ContactsIn(Wire):
    contacts: Annotated[list[ContactItem], msgspec.Meta(max_length=MAX_BATCH)]


class CompanyUpdatesIn(Wire):
    companies: Annotated[list[UpdateItem], msgspec.Meta(max_length=MAX_BATCH)]


class ContactUpdatesIn(Wire):
    contacts: Annotated[list[UpdateItem], msgspec.Meta(max_length=MAX_BATCH)]


class SyncResult(Wire):
    externalId: str
    crmId: str
    properties: dict[str, Any] | UnsetType = UNSET


class SyncError(Wire):
    externalId: str
    error: str


class SyncOut(Wire):
    results: list[SyncResult]
    errors: list[SyncError] | UnsetType = UNSET


class Created(Wire):
    externalId: str
    crmId: str


class CreateOut(Wire):
    results: list[Created]


class UpdateResult(Wire):
    crmId: str
    success: bool
    error: str | UnsetType = UNSET


class UpdateOut(Wire):
    results: list[UpdateResult]


# --- associations -----------------------------------------------------------------------


class Association(Wire):
    contactCRMId: Id
    companyCRMId: Id


class AssociationsIn(Wire):
    associations: list[Association]


class AssociationError(Wire):
    contactCRMId: str
    companyCRMId: str
    error: str


class AssociationsOut(Wire):
    success: bool = True
    created: int
    errors: list[AssociationError] | UnsetType = UNSET


# --- activities and tasks ---------------------------------------------------------------


class ActivityIn(Wire):
    type: ActivityType
    subject: str | None = None
    body: str | None = None
    direction: Direction | None = None
    ownerId: str | None = None
    occurredAt: str | None = None
    contactId: str | None = None
    companyId: str | None = None
    metadata: dict[str, Any] | None = None


class Activity(ActivityIn):
    """The created activity: its id and every field sent."""

    id: str


class TaskFields(Wire):
    """The optional task fields (interfaces.md Task)."""

    description: str | None = None
    type: str | None = None
    ownerId: str | None = None
    dueDate: str | None = None
    contactId: str | None = None
    companyId: str | None = None


class TaskIn(TaskFields):
    subject: Id
    completed: bool = False


class TaskPatch(TaskFields):
    """PATCH /tasks/:taskId: `completed` is required; other task fields sent are merged."""

    completed: bool
    subject: Id | None = None


class Task(TaskFields):
    """A task as answered: the fields above, any other field it was sent, and its state."""

    id: str
    subject: str
    completed: bool
    completedAt: str | None


class TaskIds(Wire):
    ids: list[str]


class TaskBatchPatch(Wire):
    ids: list[str]
    completed: bool


# --- control API views ------------------------------------------------------------------


class StoredRecord(Wire):
    """What the CRM holds for one contact or company (GET /_emulator/crm/{kind}/{crmId})."""

    crmId: str
    externalId: str | None
    createdAt: str
    updatedAt: str
    fields: dict[str, Any]
    companyCRMIds: list[str] | UnsetType = UNSET
    contactCRMIds: list[str] | UnsetType = UNSET


class StoredAssociation(Wire):
    contactCRMId: str
    companyCRMId: str
    createdAt: str
