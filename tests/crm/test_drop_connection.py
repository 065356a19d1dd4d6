"""dropConnection against a real uvicorn server: the client sees the connection close unanswered."""

from __future__ import annotations

import httpx
import pytest

from emulator.app import create_app
from tests.conftest import CRM_KEY, make_settings
from tests.servers import serve_app


def test_drop_connection_closes_without_a_response() -> None:
    with serve_app(create_app(make_settings())) as base, httpx.Client(base_url=base) as client:
        r = client.put(
            "/_emulator/crm/settings",
            json={
                "faults": [
                    {"endpoint": "POST /contacts", "dropConnection": True, "times": 1},
                ]
            },
        )
        assert r.status_code == 200
        before = client.get("/_emulator/crm/contacts").json()["meta"]["total"]
        body = {"contacts": [{"externalId": "dropped-1"}]}
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)) as caught:
            client.post("/crm/contacts", headers=CRM_KEY, json=body)
        assert "without sending a response" in str(caught.value) or isinstance(
            caught.value, httpx.ReadError
        )
        # The dropped call stored nothing; the next one (a new connection) goes through.
        assert client.get("/_emulator/crm/contacts").json()["meta"]["total"] == before
        r = client.post("/crm/contacts", headers=CRM_KEY, json=body)
        assert r.status_code == 201
        assert client.get("/_emulator/crm/contacts").json()["meta"]["total"] == before + 1
