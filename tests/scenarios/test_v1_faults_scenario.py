"""A scenario's `v1Faults`: armed when its emulator starts and again after a reset step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.anyio
SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios" / "_small"


def scenario(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "platform-500s",
        "fixtures": {"directory": str(SMALL)},
        "v1Faults": [{"route": "/v1/contacts", "status": 500, "times": 1}],
        "steps": [
            {"step": "call", "path": "/v1/contacts", "expectStatus": 500},
            {"step": "call", "path": "/v1/contacts", "expectStatus": 200},
            {"step": "reset"},
            {"step": "call", "path": "/v1/contacts", "expectStatus": 500},
        ],
    }
    data.update(overrides)
    return data


async def run(client: httpx.AsyncClient, data: dict[str, Any]) -> dict[str, Any]:
    answer = await client.post("/_emulator/scenarios/run", json=data)
    assert answer.status_code == 200, answer.text
    return answer.json()["results"][0]  # type: ignore[no-any-return]


async def test_faults_of_a_scenario_shape_its_calls(client: httpx.AsyncClient) -> None:
    result = await run(client, scenario())
    assert result["outcome"] == "pass", result
    # the serving emulator is untouched: its own /v1 has no fault
    assert (await client.get("/_emulator/v1-faults")).json() == {"data": []}


async def test_a_wrong_expectation_fails_so_the_fault_really_applies(
    client: httpx.AsyncClient,
) -> None:
    data = scenario(steps=[{"step": "call", "path": "/v1/contacts", "expectStatus": 200}])
    result = await run(client, data)
    assert result["outcome"] == "fail"
    assert result["failure"]["actual"].startswith("500")


async def test_an_unknown_fault_field_is_refused_when_the_file_is_read(
    client: httpx.AsyncClient,
) -> None:
    data = scenario(v1Faults=[{"route": "/v1/contacts", "status": 500, "sometimes": True}])
    answer = await client.post("/_emulator/scenarios/run", json=data)
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {
            "field": "v1Faults[0].sometimes",
            "message": "unknown key `sometimes` (did you mean `times`?)",
        }
    ]


async def test_an_impossible_fault_is_the_scenarios_error(client: httpx.AsyncClient) -> None:
    result = await run(client, scenario(v1Faults=[{"route": "/v1/nowhere", "status": 500}]))
    assert result["outcome"] == "fail"
    assert result["failure"]["at"] == "v1Faults[0]"
    assert "/v1/nowhere" in result["failure"]["message"]
