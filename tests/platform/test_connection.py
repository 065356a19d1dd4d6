"""platform.connection: the one rule resolving a connection's crmUrl, and the field rules."""

from __future__ import annotations

import httpx
import pytest

from emulator.platform.connection import IN_PROCESS_BASE, resolve, rule_problems


def _app_transport() -> httpx.AsyncBaseTransport:
    return httpx.MockTransport(lambda request: httpx.Response(200))


@pytest.mark.parametrize("url", ["http://crm.example/api", "HTTPS://crm.example"])
def test_an_absolute_url_is_used_as_given_over_the_network(url: str) -> None:
    resolved = resolve(url, "http://127.0.0.1:8000", in_process=_app_transport())
    assert (resolved.base_url, resolved.transport) == (url, None)


def test_a_path_joins_the_servers_url() -> None:
    assert resolve("/crm", "http://127.0.0.1:8000/").base_url == "http://127.0.0.1:8000/crm"
    assert resolve("/crm", "http://127.0.0.1:8000").transport is None


def test_a_path_without_a_server_is_reached_in_process() -> None:
    app = _app_transport()
    resolved = resolve("/crm", in_process=app)
    assert (resolved.base_url, resolved.transport) == (IN_PROCESS_BASE + "/crm", app)


def test_a_path_with_a_server_and_the_app_keeps_the_servers_url() -> None:
    app = _app_transport()
    resolved = resolve("/crm", "http://testserver", in_process=app)
    assert (resolved.base_url, resolved.transport) == ("http://testserver/crm", app)


def test_a_path_with_neither_is_refused() -> None:
    with pytest.raises(ValueError, match="relative"):
        resolve("/crm")


def test_every_broken_rule_is_named_at_once() -> None:
    body = {"crmUrl": "ftp://x", "batchSize": 500, "retries": 3, "timeoutSeconds": -1}
    assert [field for field, _ in rule_problems(body)] == ["crmUrl", "batchSize", "timeoutSeconds"]
