"""Pure ASGI guard against what a web page can make a browser send to a server on loopback.

- DNS rebinding: a page on a name the attacker later points at 127.0.0.1 reaches this port
  under its own name. Every request whose `Host` is not a loopback name or address, the
  address the server is bound to, or a name given with --allowed-host is answered 421.
- Cross-origin writes: a page on another origin may send a POST without CORS ("no-cors").
  A request with an unsafe method whose `Origin` names another origin (or is "null"), or whose
  `Sec-Fetch-Site` is `cross-site` or `same-site`, is answered 403.
- JSON sent as a "simple" request: a page may POST `text/plain` without a preflight. A request
  to the control API (/_emulator) with a body must say `Content-Type: application/json`
  (parameters allowed, `application/<x>+json` too), else 415.

Clients that are not browsers send no `Origin` and no `Sec-Fetch-Site`: they pass.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.asgi_guards import is_control
from emulator.errors import ApiError, Forbidden, surface_response

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


class MisdirectedRequest(ApiError):
    status_code = 421


class UnsupportedMediaType(ApiError):
    status_code = 415


def split_authority(value: str) -> tuple[str, int | None] | None:
    """("name", port) of a `Host` value or URL authority ("[::1]:8400" -> ("::1", 8400));
    the name in lower case without a trailing dot; None when it is not one."""
    value = value.strip()
    if not value or any(c in value for c in "/@?#\\ \t"):
        return None
    try:
        parts = urlsplit("//" + value)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return host.rstrip(".").lower(), port


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


@functools.lru_cache(maxsize=64)
def is_loopback_name(name: str) -> bool:
    """localhost, a name under .localhost (browsers resolve both to loopback themselves,
    never through DNS), or a loopback address. Cached: every request asks it of its Host
    (an address parse each time cost ~10 us a call, e.g. each call of an embedded export)."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = _ip(name)
    return address is not None and address.is_loopback


@dataclass(frozen=True)
class HostRule:
    """Which `Host` names this server answers: loopback, the bound address, the allowed names.

    Bound to a wildcard (0.0.0.0, ::) the server is every address of the machine: any IP
    address is allowed (a rebinding page always reaches it under a *name*); names still need
    --allowed-host. An allowed name starting with "." allows every name under it.
    """

    bound: str = "127.0.0.1"
    allowed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, bound: str, allowed: Iterable[str]) -> HostRule:
        names = frozenset(a.strip().strip("[]").rstrip(".").lower() for a in allowed if a.strip())
        return cls(bound.strip().strip("[]").lower(), names)

    def allows(self, host_header: str) -> bool:
        return _allowed(self, host_header)

    def decide(self, host_header: str) -> bool:
        """`allows` without the cache."""
        parsed = split_authority(host_header)
        if parsed is None:
            return False
        name = parsed[0]
        if is_loopback_name(name):
            return True
        address = _ip(name)
        if address is not None:
            return (
                self.bound in WILDCARDS
                or address == _ip(self.bound)
                or str(address) in self.allowed
            )
        if name == self.bound:
            return True
        return any(
            name == allowed or (allowed.startswith(".") and name.endswith(allowed))
            for allowed in self.allowed
        )


# Every request asks it of its Host header, almost always the same few values: parsing one
# (urlsplit, an address parse) costs more than the rest of the guard. Bounded: any client
# may send any Host.
@functools.lru_cache(maxsize=256)
def _allowed(rule: HostRule, host_header: str) -> bool:
    return rule.decide(host_header)


def foreign_origin(headers: Mapping[str, str], scheme: str) -> str | None:
    """Why a request comes from a page of another origin, or None. `headers` are lower-case
    names: `origin`, `sec-fetch-site`, `host`."""
    site = headers.get("sec-fetch-site", "").strip().lower()
    if site in ("cross-site", "same-site"):
        return f"Sec-Fetch-Site: {site}"
    origin = headers.get("origin")
    if origin is None:
        return None
    text = origin.strip()
    here = split_authority(headers.get("host", ""))
    scheme_there, _, authority = text.partition("://")
    there = split_authority(authority) if scheme_there and authority else None
    if here is None or there is None:  # "null" (a sandboxed frame, a file), or unreadable
        return f"Origin: {text[:100]}"
    there_port = there[1] or DEFAULT_PORTS.get(scheme_there.lower())
    here_port = here[1] or DEFAULT_PORTS.get(scheme)
    if (scheme_there.lower(), there[0], there_port) != (scheme, here[0], here_port):
        return f"Origin: {text[:100]}"
    return None


def is_json_type(content_type: str) -> bool:
    """`application/json` or `application/<x>+json`, any case, with or without parameters."""
    media = content_type.split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def has_body(headers: Mapping[str, str]) -> bool:
    length = headers.get("content-length", "").strip()
    return "transfer-encoding" in headers or (length != "" and length != "0")


def refusal(
    method: str, path: str, scheme: str, headers: Mapping[str, str], hosts: HostRule
) -> ApiError | None:
    """The error a request gets from these guards, or None when it passes."""
    host = headers.get("host")
    if host is not None and not hosts.allows(host):
        return MisdirectedRequest(
            f"Host {host[:100]!r} is not this server's: use 127.0.0.1 or localhost, or start "
            "it with --allowed-host NAME (refused to defeat DNS rebinding)"
        )
    if method in SAFE_METHODS:
        return None
    if (why := foreign_origin(headers, scheme)) is not None:
        return Forbidden(
            f"refused a request from another origin ({why}): a web page may not drive the emulator"
        )
    if is_control(path) and has_body(headers) and not is_json_type(headers.get("content-type", "")):
        return UnsupportedMediaType(
            "the control API takes JSON bodies: send `Content-Type: application/json`"
        )
    return None


_WANTED = frozenset(
    {
        b"host",
        b"origin",
        b"sec-fetch-site",
        b"content-type",
        b"content-length",
        b"transfer-encoding",
    }
)


def guarded_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """The headers `refusal` reads, the first of each kept (as Starlette reads them); two
    `Host` headers make an empty one (which is refused: which one was meant?)."""
    headers: dict[str, str] = {}
    for name, value in raw:
        if name in _WANTED:
            key = name.decode("latin-1")
            if key == "host" and key in headers:
                headers[key] = ""
            headers.setdefault(key, value.decode("latin-1"))
    return headers


def safe_host_passes(raw: Iterable[tuple[bytes, bytes]], hosts: HostRule) -> bool:
    """Whether a GET, HEAD or OPTIONS with these raw headers passes `refusal`: for those
    methods only the Host is checked, so this reads that one header (as `guarded_headers`
    does: none passes, two or more make an empty one) without decoding the others."""
    host: bytes | None = None
    for name, value in raw:
        if name == b"host":
            host = b"" if host is not None else value
    return host is None or hosts.allows(host.decode("latin-1"))


_CODES = {421: "misdirected_request", 403: "forbidden", 415: "unsupported_media_type"}


class BrowserGuard:
    """Answers what `refusal` names before any route runs (every route, whoever adds it)."""

    def __init__(self, app: ASGIApp, hosts: HostRule) -> None:
        self.app, self.hosts = app, hosts

    def refused(self, scope: Scope) -> ASGIApp | None:
        """The answer an http request gets from these guards, or None when it passes."""
        if scope["method"] in SAFE_METHODS and safe_host_passes(scope["headers"], self.hosts):
            return None  # the common read: what `refusal` would pass, found cheaper
        headers = guarded_headers(scope["headers"])
        error = refusal(
            scope["method"], scope["path"], scope.get("scheme", "http"), headers, self.hosts
        )
        if error is None:
            return None
        return surface_response(scope["path"], error, _CODES[error.status_code])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (answer := self.refused(scope)) is not None:
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)
