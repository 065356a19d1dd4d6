"""The CRM connection row (`crm_connection`, id 1): its settings and its last health."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import msgspec

from emulator.fixtures.models import CONNECTION_RULES, CrmConnection
from emulator.platform.engagement import ENGAGEMENT_FIELDS
from emulator.self_target import control_api_target
from emulator.wire import decode, encode
from emulator.workspace_scope import prefix_of, workspace

if TYPE_CHECKING:  # annotations only: the seeders import this without the web server
    import httpx
    from starlette.requests import Request


def read(conn: sqlite3.Connection) -> CrmConnection | None:
    row = conn.execute("SELECT settings FROM crm_connection WHERE id = 1").fetchone()
    return None if row is None else decode(row[0], CrmConnection)


def read_stored(conn: sqlite3.Connection) -> tuple[str | None, str | None]:
    """The stored settings and lastHealth as JSON text (None, None without a connection);
    `record_health` compares the settings text to store a check only for the CRM it checked."""
    row = conn.execute("SELECT settings, lastHealth FROM crm_connection WHERE id = 1").fetchone()
    return (None, None) if row is None else (row[0], row[1])


def write(conn: sqlite3.Connection, connection: CrmConnection) -> None:
    """Store the settings; a connection's health history stays."""
    conn.execute(
        "INSERT INTO crm_connection(id, settings) VALUES (1, ?) "
        "ON CONFLICT(id) DO UPDATE SET settings = excluded.settings",
        (encode(connection).decode(),),
    )


def replace(conn: sqlite3.Connection, settings: str, health: str) -> None:
    """Store encoded settings with the health of their first probes (a new history)."""
    conn.execute(
        "INSERT INTO crm_connection(id, settings, lastHealth) VALUES (1, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET settings = excluded.settings,"
        " lastHealth = excluded.lastHealth",
        (settings, health),
    )


def record_health(conn: sqlite3.Connection, health: str, settings: str) -> None:
    """Store a periodic check's health, unless the connection was replaced meanwhile."""
    conn.execute(
        "UPDATE crm_connection SET lastHealth = ? WHERE id = 1 AND settings = ?", (health, settings)
    )


def delete(conn: sqlite3.Connection) -> bool:
    """Forget the connection; answers whether there was one."""
    return conn.execute("DELETE FROM crm_connection WHERE id = 1").rowcount > 0


def rule_problems(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, message) of every constrained field of a connection body that breaks its rule;
    decoding alone stops at the first."""
    problems = []
    for name, rule in CONNECTION_RULES.items():
        if name in body:
            try:
                msgspec.convert(body[name], rule)
            except msgspec.ValidationError as exc:
                problems.append((name, str(exc).replace("`", "")))
    return problems


def problems(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, message) of everything a connection body breaks, every field at once: the
    struct's rules, a URL of an emulator's control API, unknown engagement fields."""
    found = rule_problems(body)
    url = body.get("crmUrl")
    loop = control_api_target(url) if isinstance(url, str) and "crmUrl" not in dict(found) else None
    if loop is not None:
        found.append(("crmUrl", loop))
    fields = body.get("engagementFields")
    for kind in ("contacts", "companies"):
        named = fields.get(kind) if isinstance(fields, dict) else None
        for name in named if isinstance(named, dict) else ():
            if name not in ENGAGEMENT_FIELDS[kind]:
                found.append((f"engagementFields.{kind}.{name}", "unknown engagement field"))
    return found


# ---------------------------------------------------------------------------------------------
# Where the CRM is: the one rule every caller uses

# The base of a relative crmUrl when this app is reached in-process with no URL of its own
# (a loopback name: the app's Host guard answers it).
IN_PROCESS_BASE = "http://emulator.localhost"


def served_base(scope: Mapping[str, Any], bound: tuple[str, int]) -> str:
    """The base URL of this server as the request's connection reached it: the socket's own
    address (ASGI `server`), else the address it was told to bind; never the request's `Host`,
    which a client chooses. A wildcard address (0.0.0.0, ::) is reached on loopback."""
    server = scope.get("server")
    host, port = (server[0], server[1]) if server else bound
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}" if port is None else f"http://{shown}:{port}"


def own_base(request: Request) -> str:
    """`served_base` of a request to this app, with the workspace's `/w/{id}` when it came to
    one: what a relative crmUrl is joined to (a workspace's "/crm" is its own CRM)."""
    settings = workspace(request).emulator.settings
    return served_base(request.scope, (settings.host, settings.port)) + prefix_of(request.scope)


@dataclass(frozen=True)
class ResolvedCrm:
    """A connection's CRM as a caller reaches it: the base URL, and the transport to use
    (None: the network)."""

    base_url: str
    transport: httpx.AsyncBaseTransport | None = None


def is_absolute(crm_url: str) -> bool:
    """An http(s) URL (any case), as opposed to a path of this emulator such as "/crm"."""
    return crm_url[:8].lower().startswith(("http://", "https://"))


def resolve(
    crm_url: str,
    server_base: str | None = None,
    in_process: httpx.AsyncBaseTransport | None = None,
) -> ResolvedCrm:
    """An absolute crmUrl is used as it is, over the network. A path ("/crm") names this
    emulator: joined to `server_base` (the URL it serves on) or, without one, to
    IN_PROCESS_BASE; reached through `in_process` (the app itself) when given. A path with
    neither raises ValueError."""
    if is_absolute(crm_url):
        return ResolvedCrm(crm_url)
    if server_base:
        return ResolvedCrm(urljoin(server_base.rstrip("/") + "/", crm_url.lstrip("/")), in_process)
    if in_process is not None:
        return ResolvedCrm(IN_PROCESS_BASE + "/" + crm_url.lstrip("/"), in_process)
    raise ValueError(f"crmUrl {crm_url!r} is relative and there is no server to resolve it against")
