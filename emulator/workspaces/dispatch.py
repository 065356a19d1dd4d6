"""Pure ASGI dispatcher: a request to `/w/{id}/...` is served as the root path `/...` in
workspace `{id}` (named in the scope for `scope.workspace`); every other request passes with
one string comparison and the default workspace named in its scope, so the root paths' /v1
reads cost nothing more.

The dashboard's pages link with root-relative URLs (`href="/contacts"`); in a workspace,
their HTML attributes and redirects get the `/w/{id}` prefix here, in one place, so that no
template needs to know where it is served.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.errors import NotFound, surface_response
from emulator.workspace_scope import PREFIX, WORKSPACE
from emulator.workspaces.registry import Workspaces

ROOT = "/w/"
# An attribute holding a root-relative URL: href="/x", action="/x", src="/x", data-api="/x"...
ROOT_RELATIVE = re.compile(rb'(\s(?:href|action|src|formaction|data-[a-z-]+)=")/(?!/)')


def split(path: str) -> tuple[str, str] | None:
    """`/w/{id}/rest` -> (id, "/rest"); `/w/{id}` -> (id, "/"); anything else None."""
    if not path.startswith(ROOT):
        return None
    workspace_id, slash, rest = path[len(ROOT) :].partition("/")
    if not workspace_id:
        return None
    return workspace_id, slash + rest if slash else "/"


def prefixed_html(body: bytes, prefix: str) -> bytes:
    """A page's root-relative links under `prefix`; `<html data-base>` tells its script."""
    encoded = prefix.encode()
    body = ROOT_RELATIVE.sub(rb"\1" + encoded + b"/", body)
    return body.replace(b"<html", b'<html data-base="' + encoded + b'"', 1)


def prefixing(send: Send, prefix: str, head: bool = False) -> Send:
    """The `send` of a workspace's answer: a redirect's Location and an HTML page's links get
    the prefix (the page is held until its last chunk: pages are small). A HEAD has no body
    to rewrite: its page's Content-Length, the unprefixed page's, is left out."""
    start: Message | None = None
    parts: list[bytes] = []

    async def out(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            headers = [
                (k, prefix.encode() + v if k.lower() == b"location" and v[:1] == b"/" else v)
                for k, v in message.get("headers", [])
            ]
            html = any(
                k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers
            )
            if html and head:
                headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
            message = {**message, "headers": headers}
            if not html or head:
                await send(message)
                return
            start = message
            return
        if start is None or message["type"] != "http.response.body":
            await send(message)
            return
        parts.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = prefixed_html(b"".join(parts), prefix)
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return out


class WorkspaceDispatch:
    """Outermost layer: strips `/w/{id}` and names the workspace for everything inside."""

    def __init__(self, app: ASGIApp, workspaces: Workspaces) -> None:
        self.app, self.workspaces = app, workspaces

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or WORKSPACE in scope:  # lifespan; a pinned in-process call
            await self.app(scope, receive, send)
            return
        found = split(scope["path"])
        if found is None:
            # the root paths' workspace, named once: every layer and handler inside asks for
            # it (services_of), a dict look-up instead of app.state's attribute fallback
            if self.workspaces.default is not None:
                scope[WORKSPACE] = self.workspaces.default
            await self.app(scope, receive, send)
            return
        workspace_id, rest = found
        services = self.workspaces.get(workspace_id)
        if services is None:
            error = NotFound(f"no workspace {workspace_id!r} (it was removed, or it expired)")
            await surface_response(rest, error, "not_found")(scope, receive, send)
            return
        services.touch()
        prefix = services.prefix
        raw = scope.get("raw_path") or rest.encode()
        inner = {
            **scope,
            "path": rest,
            "raw_path": raw[len(prefix) :] or b"/" if raw.startswith(prefix.encode()) else raw,
            WORKSPACE: services,
            PREFIX: prefix,
        }
        out = prefixing(send, prefix, head=scope["method"] == "HEAD")
        await self.app(inner, receive, out)
