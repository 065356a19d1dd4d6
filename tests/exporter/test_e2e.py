"""End to end over real HTTP: the reference CRM (HTTP and HTTPS), its injected faults, the control API."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trustme
import uvicorn

from emulator.app import create_app
from emulator.fixtures.loader import DEFAULT_FIXTURES, load_fixture_dir
from emulator.outbound import RetryPolicy
from emulator.platform import connection as platform_connection
from emulator.platform.seed import seed
from emulator.settings import Settings
from emulator.state import Emulator
from tests.conftest import make_settings
from tests.exporter.harness import FAST, run_export
from tests.servers import serve_app, unused_url

pytestmark = pytest.mark.anyio
CRM_KEY = {"X-API-Key": "crm-demo-key"}


@pytest.fixture(scope="module")
def default_fixtures() -> Any:
    return load_fixture_dir(DEFAULT_FIXTURES)


@pytest.fixture
async def default_platform(default_fixtures: Any) -> Any:
    emulator = Emulator(Settings(), seeders=[seed], fixtures=default_fixtures)
    await emulator.start()
    yield emulator
    await emulator.close()


async def connection(platform: Emulator, url: str, **changes: Any) -> Any:
    conn = await platform.db.read(platform_connection.read)
    return msgspec.structs.replace(conn, crmUrl=url, **changes)


async def test_export_to_the_reference_crm_twice(
    default_platform: Emulator, default_fixtures: Any
) -> None:
    with serve_app(create_app(make_settings(), default_fixtures)) as base:
        conn = await connection(default_platform, f"{base}/crm")
        first = await run_export(default_platform, connection=conn)
        assert first.exitCode == 0, (first.violations, first.failed[:3])
        n_companies, n_contacts = len(default_fixtures.companies), len(default_fixtures.contacts)
        assert first.phases["companies"].created + first.phases["companies"].updated == n_companies
        assert first.phases["contacts"].created + first.phases["contacts"].updated == n_contacts
        assert first.phases["activities"].created > 0
        missing = await default_platform.db.fetchall(
            "SELECT count(*) FROM contacts WHERE contactCRMId IS NULL"
        )
        assert missing == [(0,)]

        second = await run_export(default_platform, connection=conn)
        assert second.exitCode == 0
        assert second.phases["companies"].created == 0 and second.phases["contacts"].created == 0
        assert second.phases["contacts"].updated == n_contacts
        assert second.phases["activities"].sent == 0

        # The CRM stored the engagement fields under the configured names.
        (crm_id,) = await default_platform.db.fetchone(
            "SELECT c.contactCRMId FROM contacts c JOIN campaign_members m ON m.contactId = c.id LIMIT 1"
        ) or (None,)
        async with httpx.AsyncClient() as client:
            record = (await client.get(f"{base}/_emulator/crm/contacts/{crm_id}")).json()
        assert "platform_engagement_status" in str(record)


async def test_reference_crm_faults_are_retried_or_reported(
    default_platform: Emulator, default_fixtures: Any
) -> None:
    with serve_app(create_app(make_settings(), default_fixtures)) as base:
        client = httpx.AsyncClient()
        settings = (await client.get(f"{base}/_emulator/crm/settings")).json()
        settings["faults"] = [
            {"endpoint": "POST /companies/sync", "status": 429, "retryAfterSeconds": 1, "times": 1},
            {"endpoint": "POST /contacts/sync", "status": 503, "times": 1},
            {"endpoint": "PUT /companies", "dropConnection": True, "times": 1},
            {"endpoint": "POST /contacts", "malformedBody": True, "times": 1},
        ]
        assert (
            await client.put(f"{base}/_emulator/crm/settings", json=settings)
        ).status_code == 200
        await client.aclose()
        conn = await connection(default_platform, f"{base}/crm")
        report = await run_export(default_platform, connection=conn)
        # The malformed create answer fails one batch of contacts; everything else got through.
        assert report.exitCode == 1
        assert [v.check for v in report.violations] == ["POST /contacts"]
        assert report.phases["companies"].failed == 0
        assert 0 < report.phases["contacts"].failed <= 100
        statuses = await default_platform.db.fetchall(
            "SELECT path, status, attempt FROM export_journal WHERE attempt > 1 OR status IS NULL OR status >= 400"
        )
        assert ("/companies/sync", 429, 1) in statuses and ("/contacts/sync", 503, 1) in statuses
        assert ("/companies", None, 1) in statuses


async def test_wrong_key_and_unreachable_crm_stop_the_run(
    default_platform: Emulator, default_fixtures: Any
) -> None:
    with serve_app(create_app(make_settings(), default_fixtures)) as base:
        report = await run_export(
            default_platform,
            connection=await connection(default_platform, f"{base}/crm", apiKey="nope"),
        )
        assert report.exitCode == 2 and "API key rejected by CRM" in (report.message or "")
    report = await run_export(
        default_platform,
        connection=await connection(default_platform, unused_url()),
        policy=RetryPolicy(retries=1, base=0.001),
    )
    assert report.exitCode == 2 and "unreachable" in (report.message or "")


@contextmanager
def serve_https(app: Any, tmp: Path) -> Iterator[tuple[str, str]]:
    """`app` over HTTPS with a trustme certificate; yields (base URL, CA file)."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file, ca_file = tmp / "cert.pem", tmp / "key.pem", tmp / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(cert_file)
    cert.private_key_pem.write_to_path(key_file)
    ca.cert_pem.write_to_path(ca_file)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, log_level="warning", ws="none", ssl_certfile=str(cert_file), ssl_keyfile=str(key_file)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline, "https server did not start"
            time.sleep(0.01)
        yield f"https://127.0.0.1:{sock.getsockname()[1]}", str(ca_file)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


async def test_export_over_https_with_a_ca_file(
    default_platform: Emulator, default_fixtures: Any, tmp_path: Path
) -> None:
    with serve_https(create_app(make_settings(), default_fixtures), tmp_path) as (base, ca_file):
        conn = await connection(default_platform, f"{base}/crm", caFile=ca_file)
        report = await run_export(default_platform, connection=conn)
        assert report.exitCode == 0 and report.crmUrl.startswith("https://")
        # Without the CA the certificate is not trusted: no run.
        untrusted = await run_export(
            default_platform,
            connection=await connection(default_platform, f"{base}/crm"),
            policy=RetryPolicy(retries=0),
        )
        assert untrusted.exitCode == 2 and "CERTIFICATE_VERIFY_FAILED" in (untrusted.message or "")
    assert isinstance(ssl.OPENSSL_VERSION, str)


async def test_control_api_connection_exports_and_journal(default_fixtures: Any) -> None:
    with serve_app(create_app(make_settings(), default_fixtures)) as base:
        async with httpx.AsyncClient(base_url=f"{base}/_emulator") as client:
            shown = (await client.get("/connection")).json()
            assert shown["apiKey"] == "***" and shown["crmUrl"] == "/crm"
            bad = await client.put(
                "/connection", json={**shown, "batchSize": 500, "crmUrl": "ftp://x"}
            )
            assert bad.status_code == 400
            assert {e["field"] for e in bad.json()["errors"]} == {"batchSize", "crmUrl"}
            assert (await client.put("/connection", json={"crmUrl": 3})).status_code == 400
            ok = await client.put(
                "/connection", json={**shown, "apiKey": "crm-demo-key", "batchSize": 40}
            )
            assert ok.status_code == 200 and ok.json()["apiKey"] == "***"

            started = await client.post("/exports")
            assert started.status_code == 202
            export_id = started.json()["id"]
            assert started.json()["crmUrl"] == f"{base}/crm"
            for _ in range(200):
                report = (await client.get(f"/exports/{export_id}")).json()
                if report["status"] != "running":
                    break
                await _sleep(0.05)
            assert report["status"] == "ok" and report["exitCode"] == 0, report["violations"]
            assert report["phases"]["contacts"]["requests"] >= 2 * 200 // 40
            assert (await client.get("/exports/nope")).status_code == 404
            page_html = await client.get(f"/exports/{export_id}/report.html")
            assert page_html.status_code == 200
            assert page_html.headers["content-type"].startswith("text/html")
            assert (
                f"Export <code>{export_id}</code>" in page_html.text
                and "<script" not in page_html.text
            )
            assert (await client.get("/exports/nope/report.html")).status_code == 404

            page = (
                await client.get(
                    "/journal", params={"method": "post", "path": "/contacts/sync", "pageSize": "3"}
                )
            ).json()
            assert page["total"] == 5 and len(page["data"]) == 3
            assert all(e["path"] == "/contacts/sync" for e in page["data"])
            ids = [e["id"] for e in page["data"]]
            assert ids == sorted(ids)  # newest last
            everything = (await client.get("/journal", params={"pageSize": "500"})).json()
            assert "crm-demo-key" not in str(everything)
            assert (await client.get("/journal", params={"pageSize": "0"})).status_code == 400


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def test_fast_policy_is_fast() -> None:
    assert FAST.delay(5, None) <= 0.01 and FAST.delay(0, 100) == 0.05
