"""Request and response bodies of /v1; the OpenAPI document is generated from these."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from emulator.event_types import WebhookEvent
from emulator.fixtures.models import (
    ActionsStatus,
    CampaignStatus,
    CrmUrl,
    ListType,
    SavedViewType,
    StatusCounts,
)
from emulator.wire import Positive64, Wire, WireOmit


class Ref(Wire):
    """`createdBy`, `senderIdentity`: a reference by id and name."""

    id: int
    name: str


class CompanyRef(Wire):
    id: int
    name: str
    domain: str | None
    companyNetworkUrl: str | None


class Contact(Wire):
    id: int
    firstName: str | None
    lastName: str | None
    jobTitle: str | None
    networkProfileUrl: str | None
    professionalEmail: str | None
    personalEmails: str | None
    mobilePhone: str | None
    phones: str | None
    imageUrl: str | None
    companyId: int | None
    company: CompanyRef | None
    emailVerificationStatus: str | None
    contactCountry: str | None
    networkHeadline: str | None
    numberOfConnections: int | None
    contactCRMId: str | None
    leadCRMId: str | None
    isInCRM: bool
    createdAt: str
    updatedAt: str
    smartFieldExplanations: dict[str, str] | None
    contactCRMUrl: str | None = None  # built from the connection's contactLinkTemplate


class Company(Wire):
    id: int
    name: str
    domain: str | None
    website: str | None
    companyNetworkUrl: str | None
    industry: str | None
    rangeOfEmployees: str | None
    numberOfEmployees: int | None
    yearfounded: str | None
    description: str | None
    country: str | None
    city: str | None
    streetAddress: str | None
    phoneNumber: str | None
    companyEmail: str | None
    revenueRange: str | None
    hiringOnNetwork: bool | None
    openJobPositions: int | None
    companyCRMId: str | None
    isCompanyInCRM: bool
    createdAt: str
    updatedAt: str
    smartFieldExplanations: dict[str, str] | None
    companyCRMUrl: str | None = None  # built from the connection's companyLinkTemplate


class Campaign(Wire):
    id: int
    name: str
    description: str | None
    status: CampaignStatus
    createdBy: Ref
    crmOwnerId: str | None
    senderIdentity: Ref
    createdAt: str


class Identity(Wire):
    id: int
    name: str
    firstName: str | None
    lastName: str | None
    jobTitle: str | None
    email: str | None
    networkUrl: str | None
    timezone: str | None
    createdAt: str


class ContactList(Wire):
    id: int
    name: str
    description: str | None
    type: ListType
    entitiesCount: int
    createdBy: Ref
    createdAt: str


class SavedView(Wire):
    id: int
    name: str
    type: SavedViewType
    view: list[str]
    createdBy: Ref
    createdAt: str
    updatedAt: str


class Webhook(Wire):
    id: int
    name: str
    url: str
    events: list[WebhookEvent]
    campaignIds: list[int]
    customFields: list[str]
    enabled: bool
    createdAt: str
    updatedAt: str
    hasSecret: bool


class WebhookLog(Wire):
    id: int
    eventType: str
    statusCode: int | None
    errorMessage: str | None
    attemptNumber: int
    durationMs: int | None
    createdAt: str


class Message(Wire):
    id: int
    content: str | None
    subject: str | None
    type: str
    isContactSender: bool
    isAutosent: bool
    isAudio: bool
    url: str | None
    attachment: str | None
    attachmentName: str | None
    contentType: str | None
    createdAt: str
    updatedAt: str
    viewCount: int
    clickCount: int


class Conversation(Wire):
    conversationId: int
    messages: list[Message]


class ActionsRunStatus(Wire):
    actionsId: int
    entity: str
    overallStatus: ActionsStatus
    totalActions: int
    statusCounts: StatusCounts
    progress: float
    createdAt: str


class ActionsRunCreated(Wire):
    actionsId: int
    createdAt: str


class TestResult(Wire):
    success: bool


class Deleted(Wire):
    id: int


# ---- request bodies -------------------------------------------------------------------

Email = Annotated[str, msgspec.Meta(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=320)]
Uri = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://\S+$", max_length=2048)]
# A web address with a scheme, or a bare dotted host and path ("network.com/in/jane"): merge
# matching ignores the scheme, so a record given either way must be accepted.
WebUrl = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^(?:[A-Za-z][A-Za-z0-9+.-]*://\S+|[^\s/?#.:]+(?:\.[^\s/?#.]+)+(?:[/?#]\S*)?)$",
        max_length=2048,
    ),
]
Text = Annotated[str, msgspec.Meta(max_length=10_000)]
Id = Positive64


class ContactCompanyIn(Wire):
    name: Text | None = None
    domain: Text | None = None
    companyNetworkUrl: Text | None = None
    industry: Text | None = None
    website: Text | None = None


class ContactIn(Wire):
    """POST /v1/contact (no field is required)."""

    firstName: Text | None = None
    lastName: Text | None = None
    professionalEmail: Email | None = None
    jobTitle: Text | None = None
    networkProfileUrl: WebUrl | None = None
    mobilePhone: Text | None = None
    phones: Text | None = None
    networkHeadline: Text | None = None
    contactCountry: Text | None = None
    company: ContactCompanyIn | None = None
    listId: Id | None = None
    mergeWithExisting: bool = True


class ContactCreated(Wire):
    id: int
    firstName: str | None
    lastName: str | None
    professionalEmail: str | None
    networkProfileUrl: str | None
    companyId: int | None
    createdAt: str


class CompanyIn(Wire):
    """POST /v1/company."""

    name: Text | None = None
    domain: Text | None = None
    website: WebUrl | None = None
    companyNetworkUrl: WebUrl | None = None
    listId: Id | None = None
    mergeWithExisting: bool = True


class CompanyCreated(Wire):
    id: int
    name: str
    domain: str | None
    companyNetworkUrl: str | None
    createdAt: str
    updatedAt: str


class CompanySearchIn(Wire):
    """POST /v1/companies/search; condition values are checked per field type."""

    page: Any = 1
    pageSize: Any = 25
    search: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    include: dict[str, Any] = {}
    exclude: dict[str, Any] = {}


class ListIn(Wire):
    type: ListType
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
    description: Text | None = None
    folderId: Id | None = None


WebhookName = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
Secret = Annotated[str, msgspec.Meta(min_length=8, max_length=256)]
Events = Annotated[list[WebhookEvent], msgspec.Meta(min_length=1)]


class WebhookIn(Wire):
    """POST /v1/webhooks."""

    name: WebhookName
    url: Uri
    events: Events
    secret: Secret | None = None
    campaignIds: list[Id] = []
    customFields: list[Annotated[str, msgspec.Meta(max_length=255)]] = []
    enabled: bool = True


class WebhookPatch(WireOmit):
    """PATCH /v1/webhooks/{id}: an absent field is left alone; `secret: null` removes it."""

    name: WebhookName | msgspec.UnsetType = msgspec.UNSET
    url: Uri | msgspec.UnsetType = msgspec.UNSET
    secret: Secret | msgspec.UnsetType | None = msgspec.UNSET
    events: Events | msgspec.UnsetType = msgspec.UNSET
    campaignIds: list[Id] | msgspec.UnsetType = msgspec.UNSET
    customFields: list[Annotated[str, msgspec.Meta(max_length=255)]] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    enabled: bool | msgspec.UnsetType = msgspec.UNSET


class ActionIn(Wire):
    """One action: one of the six documented types, with that type's options."""

    type: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    options: dict[str, Any] | None = None


TargetIds = Annotated[list[Id], msgspec.Meta(min_length=1, max_length=10_000)]


class ActionsIn(Wire):
    """POST /v1/actions: the actions and exactly one target (records, or list ids)."""

    actions: Annotated[list[ActionIn], msgspec.Meta(min_length=1, max_length=100)]
    contactIds: TargetIds | None = None
    companyIds: TargetIds | None = None
    contactGroupIds: TargetIds | None = None
    companyGroupIds: TargetIds | None = None
    webhookUrl: Uri | None = None


class CustomCrmIn(Wire):
    """POST /v1/custom-crm/test and /connect."""

    baseUrl: CrmUrl
    apiKey: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    apiKeyHeader: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9-]{1,128}$")] = "X-API-Key"
    contactLinkTemplate: Text | None = None
    companyLinkTemplate: Text | None = None


class CustomCrmHealth(Wire):
    """POST /v1/custom-crm/test: the outcome of GET {baseUrl}/health, and whether GET /users
    makes owner selection available (None: its answer decided nothing)."""

    success: bool
    status: int | None
    message: str
    ownerSelection: bool | None = None
    usersStatus: int | None = None


class CustomCrmStatus(Wire):
    connected: bool
    baseUrl: str | None
    apiKeyHeader: str | None
    contactLinkTemplate: str | None
    companyLinkTemplate: str | None
    lastHealth: dict[str, Any] | None  # {ok, status, checkedAt, message, failuresInRow, ...}
    ownerSelection: bool | None  # from the last GET /users probe
    healthCheckIntervalSeconds: int  # virtual time between periodic health checks
