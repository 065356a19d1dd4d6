"""Facts of the spec's Part A shared by both sides of it (the CRM, the exporter, verify)."""

from __future__ import annotations

# The spec's endpoint table, in its order and spelling (interfaces.md Part A).
ENDPOINTS = (
    "GET /health",
    "POST /contacts",
    "POST /contacts/sync",
    "PUT /contacts",
    "POST /companies",
    "POST /companies/sync",
    "PUT /companies",
    "POST /associations",
    "POST /activities",
    "POST /tasks",
    "GET /tasks/:taskId",
    "PATCH /tasks/:taskId",
    "POST /tasks/batch",
    "PATCH /tasks/batch",
    "GET /users",
)

# The syncable property names the spec gives as common per record kind ("Sync result item"):
# under the null-clearing rule, one absent from a sync result's `properties` is cleared.
SYNC_PROPERTIES: dict[str, tuple[str, ...]] = {
    "companies": (
        "domain",
        "phone",
        "accountTier",
        "totalDeals",
        "lifetimeValue",
        "accountOwner",
        "industry",
        "tags",
        "lastActivityDate",
    ),
    "contacts": (
        "email",
        "phone",
        "mobilePhone",
        "leadScore",
        "lifecycleStage",
        "lastActivityDate",
        "owner",
        "dealValue",
        "tags",
    ),
}
