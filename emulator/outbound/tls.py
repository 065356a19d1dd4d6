"""TLS contexts and default headers of outgoing calls, built once per process."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping

import httpx


def tls_verify(verify: bool, ca_file: str | None) -> ssl.SSLContext | bool:
    """What a connection's `verify` and `caFile` settings ask for (False: no verification)."""
    if not verify:
        return False
    if ca_file:
        return ssl.create_default_context(cafile=ca_file)
    return default_tls()


@functools.cache
def default_tls() -> ssl.SSLContext:
    """What httpx's verify=True builds (the CA bundle loaded: ~20-30 ms), once per process:
    auto-sync and the health check open a client on every advance of the clock."""
    return httpx.create_ssl_context()


@functools.cache
def _unverified_tls() -> ssl.SSLContext:
    return httpx.create_ssl_context(verify=False)


def transport_tls(tls: ssl.SSLContext | bool) -> ssl.SSLContext:
    """The context a transport takes for what `tls_verify` answered (False: unverified)."""
    return tls if isinstance(tls, ssl.SSLContext) else _unverified_tls()


@functools.cache
def _client_defaults() -> tuple[tuple[bytes, bytes], ...]:
    return tuple(
        httpx.AsyncClient(transport=httpx.AsyncBaseTransport(), trust_env=False).headers.raw
    )


def client_headers(headers: Mapping[str, str] | None = None) -> httpx.Headers:
    """The headers an `httpx.AsyncClient` sends with a request: its own (Accept, User-Agent...)
    updated by `headers`, merged as it merges them."""
    merged = httpx.Headers(list(_client_defaults()))
    merged.update(headers or {})
    return merged
