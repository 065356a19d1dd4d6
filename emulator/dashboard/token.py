"""The control token in the dashboard: a form that takes it once and keeps it in a cookie.

With `--control-token`, the dashboard's actions call the token-guarded control API. The page
cannot add `Authorization` to an ordinary form post, and a token kept where scripts can read
it would leak to any script on the origin: the form posts the token here once, and the answer
sets an HttpOnly, SameSite=Strict cookie (a value derived from the token, not the token) that
the guard accepts like the header.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from emulator.asgi_guards import COOKIE, TOKEN_FORM, cookie_value
from emulator.dashboard.render import emulator_of, form_fields, page


def safe_next(target: str) -> str:
    """Where to go after the form: a path of this server only (never another host)."""
    if target.startswith("/") and not target.startswith(("//", "/\\")) and TOKEN_FORM not in target:
        return target
    return "/"


async def form(request: Request) -> Response:
    """GET: the form; POST (`token`, `next`): set the cookie and go back, or say it is wrong."""
    token = emulator_of(request).settings.controlToken
    target = safe_next(request.query_params.get("next", "/"))
    if request.method == "GET":
        return page(request, "token.html", token_set=token is not None, next=target, wrong=False)
    fields = form_fields(await request.body())
    target = safe_next(fields.get("next", "/"))
    if token is None:
        return page(request, "token.html", 400, token_set=False, next=target, wrong=False)
    presented = fields.get("token", "").strip()
    if not hmac.compare_digest(presented.encode(), token.encode()):
        return page(request, "token.html", 401, token_set=True, next=target, wrong=True)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        cookie_value(token),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response
