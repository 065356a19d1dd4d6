"""Run the app under uvicorn on a socket bound beforehand: the banner is printed only once the
port is bound and the store is open, and every start-up failure is one line, exit 2."""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import socket
import sqlite3
import sys
from typing import TYPE_CHECKING

from emulator.settings import Settings
from emulator.start_trace import stamp

if TYPE_CHECKING:  # the server's modules load only when it serves
    from starlette.applications import Starlette

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
GRACEFUL_SECONDS = 2  # on SIGTERM/SIGINT: running requests (a long advance) get this long


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (OSError names why not: in use, no such address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def probe_db(path: str) -> None:
    """Open `path` as SQLite and read its header, synchronously: a file that is not a database,
    or a directory that does not exist, fails here with sqlite3's own words."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    finally:
        conn.close()


SWITCH_SECONDS = 0.0005


def run_server(
    app: Starlette,
    settings: Settings,
    sock: socket.socket,
    log_level: str,
    banner: str,
    *,
    warm_search: bool = True,
) -> int:
    """Open the app's store, serve on `sock` until a signal; answers the exit code. Without
    `warm_search` the contact search's index and the updatedAt counts wait for the first
    listing that needs them."""
    import uvicorn  # deferred: commands other than `serve` start without it

    from emulator.store import contact_search, updated_counts

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                stamp("listening")
                print(banner, flush=True)
                # the contact search's index and the updatedAt counts, built in the background
                # (or, lazily, by the first listing that needs them)
                if warm_search:
                    contact_search.warm(app.state.services.emulator.db)
                    updated_counts.warm(app.state.services.emulator.db)
                # What is alive now (modules, the app, the open store) lives as long as the
                # server: kept out of every later collection, which walks only what came
                # after (a full collection over all of it took 20-50 ms of wall time at
                # 1,000,000 contacts on a loaded machine, inside whichever request allocated
                # last; 0.2-0.5 ms once frozen).
                gc.freeze()

    if settings.db is not None:
        try:
            probe_db(settings.db)
        except sqlite3.Error as exc:
            print(f"emulator: cannot open --db {settings.db}: {exc}", file=sys.stderr)
            return 2
    from emulator.connection_limits import connection_cap, limited

    cap, lowered = connection_cap(settings.maxConnections)
    if lowered is not None:
        print(f"emulator: warning: {lowered}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        http=limited(settings.headTimeout, cap),  # request-head deadline, connection cap
        limit_concurrency=cap,  # a request while `cap` connections are open: 503
        ws="none",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )

    async def main() -> int:
        emulator = app.state.services.emulator
        try:
            await emulator.start()  # before serving: the lifespan finds it open
        except (sqlite3.Error, OSError) as exc:
            await emulator.close()
            where = f"--db {settings.db}" if settings.db else "the store"
            print(f"emulator: cannot open {where}: {exc}", file=sys.stderr)
            return 2
        try:
            await Server(config).serve(sockets=[sock])
        finally:
            await emulator.close()
        return 0

    # Each statement of the database thread hands the GIL back and waits to get it again: a
    # busy event loop lets go of it after the switch interval, 5 ms by default, so a write of
    # ten statements could wait 50 ms for a CPU-second of work. 0.5 ms keeps writes short
    # under load. 0.05 ms halved a mixed load's p99 but cost page reads a third while
    # background steps (index builds) run beside them (scripts/bench_api.py).
    sys.setswitchinterval(SWITCH_SECONDS)
    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
        return runner.run(main())
