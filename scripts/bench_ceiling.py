"""The stack's ceiling for bench_api.py: bare Starlette under the same uvicorn, fixed bytes.

It answers GET /v1/contacts with one 100-contact page of the emulator's shape (no store, no
paging, no encoding), so the same wrk run shows how far uvicorn and Starlette go at all.
Like the peers harness's peers/ceiling_app.py; kept here so `make bench` needs no checkout
of the harness. Usage: python scripts/bench_ceiling.py PORT
"""

from __future__ import annotations

import json
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

KEY = "demo-all"
ROWS = [
    {"id": i, "firstName": "x" * 40, "lastName": "y" * 40, "jobTitle": "z" * 60, "bio": "b" * 600}
    for i in range(100)
]
BODY = json.dumps({"data": ROWS, "meta": {"page": 1, "pageSize": 100, "total": 100000}}).encode()


async def page(request: Request) -> Response:
    if request.headers.get("x-api-key") != KEY:
        return Response(
            b'{"status":"error","message":"unauthorized"}', 401, media_type="application/json"
        )
    return Response(BODY, media_type="application/json")


app = Starlette(routes=[Route("/v1/contacts", page)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
