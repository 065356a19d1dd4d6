"""`emulator serve`: the whole emulator on one port until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from emulator.clock import parse_clock
from emulator.fixtures.image_cache import DigestThread, default_cache_dir, image_counts
from emulator.fixtures.loader import DEFAULT_FIXTURES, FixtureError, load_fixture_dir
from emulator.image_preload import ImagePreload
from emulator.platform.contacts_worker import ContactsWorker
from emulator.redaction import SecretBook, redact_logs
from emulator.seed_process import SEED_ASIDE_BYTES, SeedProcess
from emulator.server_imports import PendingImports
from emulator.serving import LOG_LEVELS, is_loopback, listening_socket, run_server
from emulator.settings import RateLimit, Settings
from emulator.start_trace import stamp


def _rate_limit(text: str) -> RateLimit:
    try:
        return RateLimit.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _clock(text: str) -> float | None:
    try:
        return parse_clock(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535, not {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, 3600], not {text!r}")
    return value


def _env_hosts() -> list[str]:
    return [h.strip() for h in os.environ.get("EMULATOR_ALLOWED_HOSTS", "").split(",") if h.strip()]


def _bytes(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a number of bytes, not {text!r}")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return int(text)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve", help="serve /v1, /crm, /_emulator, the dashboard (/) and /docs on one port"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )
    serve.add_argument(
        "--port", type=_port, default=8400, help="port to listen on, 0..65535 (default 8400)"
    )
    serve.add_argument("--fixtures", default=str(DEFAULT_FIXTURES), help="fixture directory")
    serve.add_argument("--db", default=None, help="SQLite file that keeps state across restarts")
    serve.add_argument(
        "--rate-limit",
        type=_rate_limit,
        default=RateLimit(),
        help="contact (default: GET /v1/contact/{id}), all, off, or SCOPE:N[/SECONDS]",
    )
    serve.add_argument(
        "--clock",
        type=_clock,
        default=None,
        help="frozen (default: time moves only through POST /_emulator/clock/advance) or "
        "realtime[:SPEED] (SPEED virtual seconds per wall second)",
    )
    serve.add_argument(
        "--journal-size",
        type=_positive,
        default=Settings().journalLimit,
        metavar="N",
        help="CRM exchanges kept in the export journal; the oldest are dropped (default 100000)",
    )
    serve.add_argument(
        "--requests-size",
        type=_positive,
        default=Settings().requestsLimit,
        metavar="N",
        help="incoming /v1 and /crm calls kept in memory (GET /_emulator/requests); the oldest "
        "are dropped (default 10000)",
    )
    serve.add_argument(
        "--requests-bytes",
        type=_positive,
        default=Settings().requestsBytes,
        metavar="BYTES",
        help="bytes those calls may hold together, bodies capped at 16 KiB each (default 8 MiB)",
    )
    serve.add_argument(
        "--seed-cache",
        default=str(default_cache_dir()),
        metavar="DIR",
        help="directory of seeded database images, reused while the fixture files are "
        "unchanged (default: $EMULATOR_CACHE_DIR or ~/.cache/crm-platform-emulator)",
    )
    serve.add_argument(
        "--no-seed-cache", action="store_true", help="seed from the files every time"
    )
    serve.add_argument(
        "--seed-aside",
        type=_bytes,
        default=SEED_ASIDE_BYTES,
        metavar="BYTES",
        help="size of contacts.json from which a cold start seeds in a process of its own, "
        "so that the server never holds the decoded files (default 128 MiB, ~190,000 "
        "contacts; below it the server seeds, its contacts written by a worker process)",
    )
    serve.add_argument(
        "--lazy-search-index",
        action="store_true",
        help="build the contact search's index and the updatedAt counts at the first listing "
        "that needs them, not in the background "
        "once listening (for a server that answers /crm alone: `emulator export`'s CRM)",
    )
    serve.add_argument(
        "--log-level", default="warning", help=f"uvicorn log level: {', '.join(LOG_LEVELS)}"
    )
    serve.add_argument(
        "--control-token",
        default=os.environ.get("EMULATOR_CONTROL_TOKEN") or None,
        metavar="TOKEN",
        help="every /_emulator route but health then needs `Authorization: "
        "Bearer TOKEN` (default: $EMULATOR_CONTROL_TOKEN)",
    )
    serve.add_argument(
        "--max-body",
        type=_positive,
        default=Settings().maxBody,
        metavar="BYTES",
        help="larger request bodies are answered 413 (default 16 MiB)",
    )
    serve.add_argument(
        "--outgoing-deadline",
        type=_seconds,
        default=Settings().outgoingDeadline,
        metavar="SECONDS",
        help="the whole-exchange deadline of each webhook delivery, test delivery and "
        "custom-CRM connect or test (default 10; the periodic health check takes at most 3)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=_env_hosts(),
        metavar="NAME",
        help="another Host name to answer (besides localhost, loopback addresses and the "
        "--host address; a leading dot allows every name under it); other names are refused "
        "421 against DNS rebinding; repeatable (default: $EMULATOR_ALLOWED_HOSTS, "
        "comma-separated)",
    )
    serve.add_argument(
        "--head-timeout",
        type=_seconds,
        default=Settings().headTimeout,
        metavar="SECONDS",
        help="a connection that has not sent a whole request head within SECONDS is closed "
        "(default 5)",
    )
    serve.add_argument(
        "--max-connections",
        type=_positive,
        default=Settings().maxConnections,
        metavar="N",
        help="open connections at most; past N a new connection is closed at once, and "
        "requests past N in progress are answered 503 (default 512)",
    )
    serve.add_argument(
        "--journal-bytes",
        type=_positive,
        default=Settings().journalBytes,
        metavar="BYTES",
        help="bytes of request and response text kept in the export journal; the oldest "
        "exchanges are dropped (default 268435456, 256 MiB)",
    )
    serve.add_argument(
        "--max-workspaces",
        type=_positive,
        default=Settings().maxWorkspaces,
        metavar="N",
        help="live workspaces (/w/{id}/) at most; creating one more answers 409 (default 100)",
    )
    serve.add_argument(
        "--workspace-idle",
        type=_seconds,
        default=Settings().workspaceIdle,
        metavar="SECONDS",
        help="a workspace without a request for SECONDS is removed (default 1800)",
    )
    serve.add_argument(
        "--link-base",
        default=None,
        metavar="URL",
        help="what relative CRM link templates (/crm-ui/...) are joined to in /v1 answers "
        "(default: the address the request came in on, with /w/{id} in a workspace)",
    )
    serve.add_argument(
        "--allow-path",
        action="append",
        default=[],
        metavar="DIR",
        help="another directory POST /_emulator/fixtures and /_emulator/scenarios/run may read "
        "(besides --fixtures and the bundled fixtures and scenarios); repeatable",
    )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _display(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def main(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT; a start-up failure is one line on stderr and exit 2."""
    if args.log_level.lower() not in LOG_LEVELS:
        return _fail(f"unknown --log-level {args.log_level!r} (one of {', '.join(LOG_LEVELS)})")
    for root in args.allow_path:
        if not Path(root).is_dir():
            return _fail(f"--allow-path {root}: not a directory")
    if not args.control_token and not is_loopback(args.host):
        print(
            f"emulator: warning: listening on {args.host} without --control-token: anyone who "
            "reaches this port can reset, load files into and export from this emulator",
            file=sys.stderr,
            flush=True,
        )
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    try:
        return _serve_on(sock, args)
    finally:
        sock.close()


def _serve_on(sock: socket.socket, args: argparse.Namespace) -> int:
    # A warm start in memory (the image of these files cached, their digest remembered) reads
    # the image into memory at once, the server's modules importing meanwhile. Otherwise the
    # image of the fixtures is found or seeded by another process, started before the
    # server's modules import (emulator/seed_process.py): the server never holds decoded
    # fixtures, and starts from the image (a few thousand contacts: seeded here, sooner).
    warm = _warm_image(args)
    seeder: SeedProcess | None = None
    worker: ContactsWorker | None = None
    digest: DigestThread | None = None
    if warm is None and not args.no_seed_cache:
        seeder = SeedProcess.spawn(args.fixtures, args.seed_cache, args.seed_aside)
        if seeder is None:  # seeded here, the contacts meanwhile by a worker (if worth it)
            worker = ContactsWorker.spawn(args.fixtures, args.seed_cache)
            digest = DigestThread(args.fixtures, args.seed_cache)  # while the server imports
    try:
        return _serve_with(sock, args, seeder or digest, warm, worker)
    finally:
        for child in (seeder, worker):
            if child is not None:
                child.close()


def _warm_image(args: argparse.Namespace) -> ImagePreload | None:
    """The cached image to read into memory at once (no --db), or None."""
    if args.no_seed_cache or args.db is not None:
        return None
    try:
        return ImagePreload.find(args.fixtures, args.seed_cache)
    except OSError:  # an unreadable cache: the seeding process has its say
        return None


def _import_server() -> None:
    """What the server imports (here while the image is read)."""
    PendingImports().all()


def _serve_with(
    sock: socket.socket,
    args: argparse.Namespace,
    seeder: SeedProcess | DigestThread | None,
    warm: ImagePreload | None,
    worker: ContactsWorker | None,
) -> int:
    counted: dict[str, int] = {}  # the start-up line's counts (a warm start: read meanwhile)
    if warm is not None:
        image = warm.image

        def meanwhile() -> None:
            counted.update(image_counts(image))
            _import_server()

        warm.load(meanwhile=meanwhile)
        stamp("image read into memory")
    try:
        return _serve_app(sock, args, seeder, warm, worker, counted)
    finally:
        if warm is not None:
            warm.close()


def _serve_app(
    sock: socket.socket,
    args: argparse.Namespace,
    seeder: SeedProcess | DigestThread | None,
    warm: ImagePreload | None,
    worker: ContactsWorker | None,
    counted: dict[str, int],
) -> int:
    # The seeders alone: the server's other modules import while the contacts are copied
    from emulator.workspaces.seeders import emulator_with_seeders

    settings = Settings(
        host=args.host,
        port=sock.getsockname()[1],
        fixtures=args.fixtures,
        db=args.db,
        rateLimit=args.rate_limit,
        journalLimit=args.journal_size,
        requestsLimit=args.requests_size,
        requestsBytes=args.requests_bytes,
        clockSpeed=args.clock,
        seedCache=None if args.no_seed_cache else args.seed_cache,
        controlToken=args.control_token,
        maxBody=args.max_body,
        allowPaths=args.allow_path,
        outgoingDeadline=args.outgoing_deadline,
        # --host NAME: the address it resolved to is answered too (the socket's own)
        allowedHosts=[*args.allowed_host, str(sock.getsockname()[0])],
        headTimeout=args.head_timeout,
        maxConnections=args.max_connections,
        journalBytes=args.journal_bytes,
        maxWorkspaces=args.max_workspaces,
        workspaceIdle=args.workspace_idle,
        linkBase=args.link_base,
    )
    secrets = SecretBook([settings.controlToken])
    redact_logs(secrets)  # and the stored ones the answers refresh it with
    emulator = emulator_with_seeders(settings)
    stamp("seeders imported")
    imports = PendingImports()  # where the seeding waits
    try:
        # With a seed cache the fixtures were validated while an image was seeded (or
        # before, when the image of the same files exists): the app starts from the image.
        if warm is None:
            digest_of = _digest_of(seeder, imports)
            image = emulator.build_image(digest_of, worker, idle=imports.until)
            if image is not None and args.db is None:
                warm = ImagePreload(image)  # read on this thread, as a warm start does
                warm.load()
                stamp("image read into memory")
        if warm is not None:
            image = warm.image
            emulator.preload = warm  # its store: the image read already
        fixtures = None if image is not None else load_fixture_dir(args.fixtures)
    except FixtureError as exc:
        return _fail(f"fixture error: {exc}")
    from emulator.app import create_app  # the whole server: other commands start without it

    app = create_app(settings, emulator=emulator, secrets=secrets)
    stamp("app created")
    if image is not None:
        n = counted or image_counts(image)
    else:
        assert fixtures is not None
        n = {
            "contacts": len(fixtures.contacts),
            "companies": len(fixtures.companies),
            "campaigns": len(fixtures.campaigns),
        }
    state = f"state in {args.db}" if args.db else "state in memory"
    banner = (
        f"emulator listening on http://{_url_host(args.host)}:{settings.port} "
        f"(fixtures {_display(args.fixtures)}: {n['contacts']} contacts, "
        f"{n['companies']} companies, {n['campaigns']} campaigns; {state})"
    )
    emulator.fixtures = fixtures  # the app seeds the store from it, then lets it go
    del fixtures
    return run_server(
        app, settings, sock, args.log_level.lower(), banner, warm_search=not args.lazy_search_index
    )


def _digest_of(
    seeder: SeedProcess | DigestThread | None, imports: PendingImports
) -> Callable[[], str | None] | None:
    """The fixtures' digest as the seeding process answers it, their image cached (the
    server's modules imported meanwhile); should that process fail otherwise than on the
    fixtures, the server seeds them itself. A DigestThread's (the server seeds): its result
    when asked, the server's modules imported until it is there."""
    if seeder is None:
        return None
    if isinstance(seeder, DigestThread):
        thread = seeder

        def hashed() -> str | None:
            imports.until(thread.done)
            return thread.result()

        return hashed
    try:
        imports.all()  # while the seeding process seeds
        digest = seeder.result()
        stamp("seeding process answered")
    except OSError as exc:
        print(f"emulator: warning: {exc}; seeding in this process", file=sys.stderr, flush=True)
        return None
    return lambda: digest


def _fail(message: str) -> int:
    print(f"emulator: {message}", file=sys.stderr)
    return 2
