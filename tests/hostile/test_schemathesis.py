"""Schemathesis over the emulator's own OpenAPI document, against a real `emulator serve`:
every operation, no 5xx, and every documented answer matches its schema.

The document is built in-process for collection (one test per operation) and is the very
one the server answers at /openapi.json (checked below).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from emulator import __version__
from emulator.app import create_app
from emulator.openapi import build_document
from emulator.testing import EmulatorServer

# More for a deeper hunt (EMULATOR_FUZZ_EXAMPLES=200); small by default to keep `make test` short.
EXAMPLES = int(os.environ.get("EMULATOR_FUZZ_EXAMPLES", "15"))
TOKEN = "schemathesis-token"
TITLE = "Outreach platform emulator"
DOCUMENT = build_document(create_app().routes, TITLE, __version__, control_token=True)
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# The operations by schemathesis's label, read from the document at collection; schemathesis's
# own (0.4 s of CPU to build) only where a test of them runs, not in every pytest process.
LABELS = [
    f"{method.upper()} {path}"
    for path, item in DOCUMENT["paths"].items()
    for method in item
    if method in METHODS
]


@functools.cache
def operations() -> dict[str, Any]:
    schema = schemathesis.openapi.from_dict(DOCUMENT)
    return {op.label: op for op in (result.ok() for result in schema.get_all_operations())}


# Outgoing calls to generated URLs would wait on the network: their own tests cover them.
OUTGOING = {
    "POST /v1/custom-crm/test",
    "POST /v1/custom-crm/connect",
    "POST /v1/webhooks/{webhookId}/test",
}
CHECKS = [not_a_server_error, response_schema_conformance]


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    server = EmulatorServer.start(["--rate-limit", "off"], token=TOKEN)
    try:
        yield server
    finally:
        server.stop()


def test_the_server_serves_the_document_under_test(server: EmulatorServer) -> None:
    served = httpx.get(f"{server.url}/openapi.json", timeout=30).json()
    assert served["paths"] == DOCUMENT["paths"]


def test_every_operation_of_the_document_is_fuzzed() -> None:
    assert list(operations()) == LABELS


@pytest.mark.parametrize("label", LABELS)
def test_operation_never_errs_and_matches_its_schema(label: str, server: EmulatorServer) -> None:
    if label in OUTGOING:
        pytest.skip("makes outgoing calls to generated URLs; covered by its own tests")
    operation = operations()[label]
    # The generated key header would be a random string: every /v1 and /crm case then stops
    # at 401. The fixtures' keys let the cases reach the handlers.
    key = (
        {"x-api-key": "demo-all"}
        if operation.path.startswith("/v1")
        else {"X-API-Key": "crm-demo-key"}
    )

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    def check(case: schemathesis.Case) -> None:
        case.headers = {**(case.headers or {}), **key, **server.headers}
        try:
            case.call_and_validate(base_url=server.url, checks=CHECKS, timeout=60)
        finally:
            if operation.path.startswith("/_emulator/v1-faults"):
                # a generated fault (a 500 or a minute's latency on every /v1 call) would
                # shape the calls of the operations tested after it
                httpx.delete(f"{server.url}/_emulator/v1-faults", headers=server.headers)

    check()
