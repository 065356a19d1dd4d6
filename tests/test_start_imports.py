"""What a start of `emulator serve` imports: the whole server, but not what no start needs
(the dashboard's template engine, Swagger UI's package, httpx's command-line client with the
terminal libraries it brings), each imported at its first use."""

from __future__ import annotations

import subprocess
import sys

# Imported by a dashboard page (jinja2), never (swagger_ui and its yaml: /docs/assets needs
# only the package's directory), or by httpx's command-line client (rich, pygments).
NOT_AT_START = ("jinja2", "swagger_ui", "yaml", "rich", "pygments")

SERVER_AND_APP = """
import sys
import emulator.cli.serve
from emulator.app import create_app
from emulator.settings import Settings
emulator.cli.serve._import_server()
create_app(Settings())
print(" ".join(sorted(name for name, module in sys.modules.items() if module is not None)))
"""


def python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def test_a_start_imports_the_server_but_none_of_what_only_a_page_or_a_command_needs() -> None:
    imported = set(python(SERVER_AND_APP).split())
    assert {"emulator.app", "uvicorn", "httpx"} <= imported
    assert sorted(m for m in imported if m.partition(".")[0] in NOT_AT_START) == []


def test_httpx_command_line_client_still_runs_once_the_emulator_is_imported() -> None:
    out = python("import emulator, httpx, sys\nhttpx.main(['--help'])")
    assert "Usage: httpx <URL> [OPTIONS]" in out


def test_the_dashboard_still_renders_its_pages_and_serves_swagger_ui_files() -> None:
    code = """
from starlette.testclient import TestClient
from emulator.app import create_app
from emulator.settings import Settings
with TestClient(create_app(Settings()), base_url="http://127.0.0.1") as client:
    page = client.get("/contacts")
    assets = client.get("/docs/assets/swagger-ui-bundle.js")
    print(page.status_code, "Contacts" in page.text, assets.status_code, len(assets.content) > 100_000)
"""
    assert python(code).split() == ["200", "True", "200", "True"]
