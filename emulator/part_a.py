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
