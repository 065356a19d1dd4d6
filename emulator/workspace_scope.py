"""The one way a handler, middleware or page reaches the state it works on: its workspace's
services, named in the ASGI scope by the dispatcher (`/w/{id}/...`) or, on the root paths,
the app's default workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # annotations only: the seeders import this without the web server
    from starlette.requests import Request
    from starlette.types import Scope

    from emulator.services import Services
    from emulator.state import Emulator
    from emulator.workspaces.registry import Workspaces

# ASGI scope key: the Services a request is served by (named by dispatch.py)
WORKSPACE = "emulator.workspace"
PREFIX = "emulator.prefix"  # ASGI scope key: the stripped `/w/{id}` ("" or absent at the root)


def services_of(scope: Scope) -> Services:
    """The services of the workspace `scope` is in (the default one on the root paths)."""
    found = scope.get(WORKSPACE)
    if found is None:
        found = scope["app"].state.services
    return cast("Services", found)


def workspace(request: Request) -> Services:
    """The services of the workspace the request is in."""
    return services_of(request.scope)


def emulator_of(request: Request) -> Emulator:
    """The request's workspace's emulator: store, clock and settings."""
    return services_of(request.scope).emulator


def prefix_of(scope: Scope) -> str:
    """`/w/{id}` for a request to a workspace, "" on the root paths: what links start with."""
    return str(scope.get(PREFIX, ""))


def registry(request: Request) -> Workspaces:
    """The server's workspaces (the same object in every workspace)."""
    return cast("Workspaces", request.app.state.workspaces)
