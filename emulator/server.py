"""Start an emulator in-process for the CLI, verify and the scenario runner: the whole server
under uvicorn on a free loopback port (the embedded CRM), or the platform store alone.

The app is built by a factory the caller passes in (`create_app`), so nothing here reaches up
into `app`: the CLI and the control API, which sit on top, hand it down.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import msgspec

from emulator.fixtures.models import CrmConnection, FixtureSet
from emulator.platform import connection as platform_connection
from emulator.platform.seed import seed
from emulator.settings import Settings
from emulator.state import Emulator
from emulator.store.db import Store

if TYPE_CHECKING:
    from starlette.applications import Starlette

AppFactory = Callable[[Settings, FixtureSet | None], "Starlette"]
# Opens a platform for the length of an `async with`: embedded_server bound to a factory.
ServerOpener = Callable[[Settings, FixtureSet | None], AbstractAsyncContextManager["Platform"]]


@dataclass
class Platform:
    store: Store
    emulator: Emulator
    server_base: str | None  # set when the embedded emulator serves /crm


def free_socket() -> socket.socket:
    """A loopback socket bound to a free port. Its protocol is named (IPPROTO_TCP, not 0):
    asyncio turns Nagle's algorithm off only on sockets that say TCP, and every connection
    accepted from this one inherits it; with Nagle on, each answer written in two parts waits
    for the peer's delayed ACK (40 ms on Linux), 47x slower per call than a served /crm."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class StartupFailed(RuntimeError):
    """The embedded emulator could not open or seed its store (the message says why)."""


@asynccontextmanager
async def embedded_server(
    settings: Settings, fixtures: FixtureSet | None, create_app: AppFactory
) -> AsyncIterator[Platform]:
    """The whole emulator under uvicorn in this event loop, on a free loopback port."""
    import uvicorn  # deferred: commands without an embedded server start without it

    app = create_app(settings, fixtures)
    emulator: Emulator = app.state.services.emulator
    try:  # before uvicorn: its failed start-up is a SystemExit that would escape any caller
        await emulator.start()
    except Exception as exc:
        await emulator.close()
        raise StartupFailed(f"{type(exc).__name__}: {exc}") from exc
    except BaseException:  # cut short (Ctrl-C): the store's thread must not outlive the loop
        await emulator.close()
        raise
    sock = free_socket()
    config = uvicorn.Config(app, log_level="warning", access_log=False, ws="none", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("embedded server stopped during start-up")
            await asyncio.sleep(0.01)
        yield Platform(emulator.db, emulator, f"http://127.0.0.1:{sock.getsockname()[1]}")
    finally:
        server.should_exit = True
        await task
        sock.close()


def server_opener(create_app: AppFactory) -> ServerOpener:
    """embedded_server bound to the app factory of the caller (what the scenario runner takes)."""
    return partial(embedded_server, create_app=create_app)


@asynccontextmanager
async def platform_only(settings: Settings, fixtures: FixtureSet | None) -> AsyncIterator[Platform]:
    """The platform store alone (the CRM is somebody else's)."""
    emulator = Emulator(settings, seeders=[seed], fixtures=fixtures)
    try:  # a start cut short (Ctrl-C) closes the store too: its thread must not outlive the loop
        await emulator.start()
        yield Platform(emulator.db, emulator, None)
    finally:
        await emulator.close()


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """The CRM and platform flags `connection_for` reads (shared with `emulator record`)."""
    parser.add_argument("--api-key", help="API key sent to the CRM")
    parser.add_argument("--api-key-header", help="header carrying the key (default X-API-Key)")
    parser.add_argument("--fixtures", help="platform fixture directory (default: fixtures/default)")
    parser.add_argument("--owner-id", help="CRM user id sent as ownerId")
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument("--ca-file", help="CA bundle that signs the CRM's certificate")
    tls.add_argument("--insecure", action="store_true", help="do not verify the CRM's certificate")
    parser.add_argument("--batch-size", type=int, help="records per request (1-100)")
    parser.add_argument(
        "--timeout",
        type=deadline_arg,
        metavar="SECONDS",
        help="deadline of each CRM exchange as a whole: connect, send, the whole answer "
        "(default: the connection's timeoutSeconds, 10)",
    )


def deadline_arg(text: str) -> float:
    """A --timeout: seconds, more than 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def connection_for(
    args: argparse.Namespace, stored: CrmConnection | None, server_base: str | None
) -> CrmConnection:
    """The stored connection with the command-line flags laid over it."""
    conn = stored or CrmConnection(crmUrl="/crm", apiKey="")
    changes: dict[str, object] = {}
    if args.crm_url:
        changes["crmUrl"] = args.crm_url
    for flag, field in (
        ("api_key", "apiKey"),
        ("api_key_header", "apiKeyHeader"),
        ("owner_id", "ownerId"),
        ("batch_size", "batchSize"),
        ("timeout", "timeoutSeconds"),
    ):
        if getattr(args, flag) is not None:
            changes[field] = getattr(args, flag)
    if args.ca_file:
        changes.update(caFile=args.ca_file, verify=True)
    if args.insecure:
        changes["verify"] = False
    conn = msgspec.structs.replace(conn, **changes)
    return msgspec.structs.replace(
        conn, crmUrl=platform_connection.resolve(conn.crmUrl, server_base).base_url
    )
