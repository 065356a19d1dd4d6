"""The /v1 route table: each endpoint module contributes its routes."""

from __future__ import annotations

from starlette.routing import BaseRoute

from emulator.public_api.endpoints import companies, contacts

routes: list[BaseRoute] = [*contacts.routes, *companies.routes]
