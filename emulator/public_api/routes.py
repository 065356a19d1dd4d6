"""The /v1 route table: each endpoint module contributes its routes."""

from __future__ import annotations

from starlette.routing import BaseRoute

from emulator.public_api.endpoints import (
    actions,
    campaigns,
    companies,
    contacts,
    conversations,
    custom_crm,
    lists,
    webhooks,
)

routes: list[BaseRoute] = [*contacts.routes, *companies.routes]
routes += [
    *campaigns.routes,
    *lists.routes,
    *conversations.routes,
    *webhooks.routes,
    *actions.routes,
    *custom_crm.routes,
]
