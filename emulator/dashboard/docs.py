"""/docs: the OpenAPI document in Swagger UI, served from the swagger-ui-py package's files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from emulator.dashboard.render import page


def _package_dir(name: str) -> Path:
    """The directory of package `name`, found without importing it (swagger_ui's import,
    yaml and all, is ~0.06 s of CPU at every start, for a path)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return Path(spec.origin).parent


# swagger-ui-py ships the Swagger UI distribution (swagger-ui-bundle.js, swagger-ui.css)
SWAGGER_STATIC = _package_dir("swagger_ui") / "static"


async def docs(request: Request) -> Response:
    return page(request, "docs.html")
