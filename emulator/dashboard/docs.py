"""/docs: the OpenAPI document in Swagger UI, served from the swagger-ui-py package's files."""

from __future__ import annotations

from pathlib import Path

import swagger_ui
from starlette.requests import Request
from starlette.responses import Response

from emulator.dashboard.render import page

# swagger-ui-py ships the Swagger UI distribution (swagger-ui-bundle.js, swagger-ui.css)
SWAGGER_STATIC = Path(swagger_ui.__file__).parent / "static"


async def docs(request: Request) -> Response:
    return page(request, "docs.html")
