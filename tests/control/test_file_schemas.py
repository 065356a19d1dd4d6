"""/_emulator/schemas serves the JSON Schemas of the scenario and fixture files; the routes that
load those files refuse unknown keys with 400 in the error shape; a failed fixture load leaves
the previous fixtures loaded and reset working."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from emulator import file_schemas
from emulator.app import create_app
from emulator.clock import LATEST_ISO
from emulator.fixtures.loader import DEFAULT_FIXTURES, FILES
from emulator.state import Emulator
from tests.conftest import ALL, make_settings, open_client

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "fixtures" / "scenarios"
NAMES = ["scenario", *(name.removesuffix(".json") for name in FILES)]


async def test_the_schemas_are_listed(shared_client: httpx.AsyncClient) -> None:
    listing = (await shared_client.get("/_emulator/schemas")).json()
    assert [s["name"] for s in listing["data"]] == NAMES
    assert listing["data"][0] == {
        "name": "scenario",
        "file": "scenario",
        "url": "/_emulator/schemas/scenario.json",
    }
    assert {
        "name": "contacts",
        "file": "contacts.json",
        "url": "/_emulator/schemas/contacts.json",
    } in listing["data"]


@pytest.mark.parametrize("name", NAMES)
async def test_each_schema_is_served_as_a_valid_json_schema(
    shared_client: httpx.AsyncClient, name: str
) -> None:
    answer = await shared_client.get(f"/_emulator/schemas/{name}.json")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/schema+json")
    schema = answer.json()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert answer.content == (ROOT / "emulator" / "schemas" / f"{name}.json").read_bytes()


@pytest.mark.parametrize("path", ["/_emulator/schemas/nope.json", "/_emulator/schemas/scenario"])
async def test_an_unknown_schema_is_404(shared_client: httpx.AsyncClient, path: str) -> None:
    answer = await shared_client.get(path)
    assert answer.status_code == 404
    body = answer.json()
    assert body["status"] == "error" and "message" in body


def test_the_shipped_schemas_are_what_the_structs_generate() -> None:
    for name in NAMES:
        shipped = file_schemas.shipped(name)
        assert shipped == file_schemas.render(file_schemas.schema(name)), (
            f"emulator/schemas/{name}.json is stale: run python -m emulator.file_schemas"
        )
    assert sorted(p.stem for p in (ROOT / "emulator" / "schemas").glob("*.json")) == sorted(NAMES)


def test_the_schemas_accept_the_bundled_files_and_flag_unknown_keys() -> None:
    """The editor's view agrees with the decoder's: the bundled files pass, a misspelled key
    fails, at the top and nested."""
    scenario = Draft202012Validator(json.loads(file_schemas.shipped("scenario") or b""))
    for path in sorted(SCENARIOS.glob("*.json")) + sorted(SCENARIOS.glob("*.toml")):
        data = (
            tomllib.loads(path.read_text())
            if path.suffix == ".toml"
            else json.loads(path.read_text())
        )
        assert list(scenario.iter_errors(data)) == [], path
    data = json.loads((SCENARIOS / "null-clearing-rule.json").read_text())
    data["expect"]["crmCalls"]["calls"][0]["methd"] = "GET"
    data["fixtures"]["contacts"][0]["firstNme"] = "x"
    errors = sorted(e.message for e in scenario.iter_errors(data))
    assert len(errors) == 2 and all("'firstNme'" in e or "'methd'" in e for e in errors), errors
    for directory in (DEFAULT_FIXTURES, SCENARIOS / "_small"):
        for name in FILES:
            if (directory / name).exists():
                schema = json.loads(file_schemas.shipped(name.removesuffix(".json")) or b"")
                assert (
                    list(
                        Draft202012Validator(schema).iter_errors(
                            json.loads((directory / name).read_text())
                        )
                    )
                    == []
                ), (directory, name)
    contacts = json.loads((DEFAULT_FIXTURES / "contacts.json").read_text())
    contacts[3]["emial"] = "x"
    schema = json.loads(file_schemas.shipped("contacts") or b"")
    assert len(list(Draft202012Validator(schema).iter_errors(contacts))) == 1


# ---- loading routes answer 400 -------------------------------------------------------------


@pytest.fixture
async def rooted(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Emulator]]:
    app = create_app(make_settings(allowPaths=[str(tmp_path)]))
    async with open_client(app) as client:
        yield client, app.state.services.emulator


def broken_copy(root: Path, change: Any) -> Path:
    shutil.copytree(DEFAULT_FIXTURES, root)
    contacts = json.loads((root / "contacts.json").read_text())
    change(contacts)
    (root / "contacts.json").write_text(json.dumps(contacts))
    return root


async def test_scenario_run_with_a_misspelled_key_is_400(
    rooted: tuple[httpx.AsyncClient, Emulator], tmp_path: Path
) -> None:
    client, _ = rooted
    data = json.loads((SCENARIOS / "link-templates.json").read_text())
    data["fixtures"]["directory"] = str(SCENARIOS / "_small")
    assert data["steps"][1]["step"] == "export"
    data["steps"][1]["expcet"] = {}
    answer = await client.post("/_emulator/scenarios/run", json=data)
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {"field": "steps[1].expcet", "message": "unknown key `expcet` (did you mean `expect`?)"}
    ]
    # an inline record: checked before anything runs
    data = json.loads((SCENARIOS / "null-clearing-rule.json").read_text())
    data["fixtures"]["directory"] = str(SCENARIOS / "_small")
    data["fixtures"]["contacts"][0]["networkProfileURL"] = "x"
    answer = await client.post("/_emulator/scenarios/run", json=data)
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {
            "field": "fixtures.contacts[0].networkProfileURL",
            "message": "unknown key `networkProfileURL` (did you mean `networkProfileUrl`?)",
        }
    ]
    # a file by path
    data = json.loads((SCENARIOS / "link-templates.json").read_text())
    data["fixtures"]["directory"] = str(SCENARIOS / "_small")
    data["expects"] = data.pop("expect")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    answer = await client.post("/_emulator/scenarios/run", json={"path": str(path)})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == [
        {
            "field": "path",
            "message": f"{path}: expects: unknown key `expects` (did you mean `expect`?)",
        }
    ]


async def test_a_failed_fixture_load_keeps_the_previous_fixtures(
    rooted: tuple[httpx.AsyncClient, Emulator], tmp_path: Path
) -> None:
    client, emulator = rooted
    before = (await client.get("/_emulator/health")).json()
    contact = (await client.get("/v1/contact/3", headers=ALL)).json()
    cases = {
        "unknown key": (
            lambda d: d[1].__setitem__("emial", "x"),
            "contacts.json: [1].emial: unknown key `emial` (accepted:",
        ),
        "id of 2^63": (
            lambda d: d[2].__setitem__("id", 2**63),
            "contacts.json: [2].id: Expected int <= 9223372036854775807",
        ),
    }
    for name, (change, message) in cases.items():
        bad = broken_copy(tmp_path / name.replace(" ", "-"), change)
        answer = await client.post("/_emulator/fixtures", json={"directory": str(bad)})
        assert answer.status_code == 400, answer.text
        (error,) = answer.json()["errors"]
        assert error["field"] == "directory" and error["message"].startswith(message), error
        assert (await client.get("/_emulator/health")).json()["fixtures"] == before["fixtures"]
        assert (await client.post("/_emulator/reset")).status_code == 200
        assert (await client.get("/v1/contact/3", headers=ALL)).json() == contact
    assert emulator.fixtures_dir == before["fixtures"]


async def test_a_fixture_load_failing_while_seeding_is_rolled_back(
    rooted: tuple[httpx.AsyncClient, Emulator], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever fails after validation (here: a seeder) leaves the previous fixtures."""
    client, emulator = rooted
    before = (await client.get("/_emulator/health")).json()["fixtures"]
    other = tmp_path / "other"
    shutil.copytree(DEFAULT_FIXTURES, other)
    real = Emulator._seed_into

    def failing(self: Emulator, conn: Any, contacts: Any = None) -> None:
        if self.fixtures_dir == str(other.resolve()):
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        real(self, conn, contacts)

    monkeypatch.setattr(Emulator, "_seed_into", failing)
    made = await client.post("/v1/contact", headers=ALL, json={"firstName": "Kept"})
    assert made.status_code == 201, made.text
    mine = f"/v1/contact/{made.json()['data']['id']}"
    answer = await client.post("/_emulator/fixtures", json={"directory": str(other)})
    assert answer.status_code == 400
    assert "cannot be seeded" in answer.json()["errors"][0]["message"]
    assert (await client.get("/_emulator/health")).json()["fixtures"] == before
    assert (await client.get(mine, headers=ALL)).status_code == 200  # the state as it was
    assert (await client.post("/_emulator/reset")).status_code == 200
    assert (await client.get(mine, headers=ALL)).status_code == 404
    assert emulator.fixtures_dir == before


async def test_crm_settings_with_an_unknown_key_are_400(shared_client: httpx.AsyncClient) -> None:
    answer = await shared_client.put("/_emulator/crm/settings", json={"synBack": "all"})
    assert answer.status_code == 400
    assert "synBack" in answer.text


async def test_v1_bodies_stay_lenient(shared_client: httpx.AsyncClient) -> None:
    """Only files (and control bodies carrying them) are strict: /v1 ignores unknown keys."""
    made = await shared_client.post(
        "/v1/contact", headers=ALL, json={"firstName": "A", "lastName": "B", "nickname": "x"}
    )
    assert made.status_code == 201, made.text


# ---- the clock's last moment ---------------------------------------------------------------


async def test_the_clock_never_passes_its_last_moment(tmp_path: Path) -> None:
    fx = tmp_path / "fx"
    shutil.copytree(DEFAULT_FIXTURES, fx)
    (fx / "clock.json").write_text('{"start": "2999-12-30T00:00:00Z"}')
    app = create_app(make_settings(fixtures=str(fx)))
    async with open_client(app) as client:
        day = await client.post("/_emulator/clock/advance", json={"seconds": 86400})
        assert day.status_code == 200, day.text
        again = await client.post("/_emulator/clock/advance", json={"seconds": 86400})
        assert again.status_code == 400
        assert again.json()["errors"] == [
            {
                "field": "seconds",
                "message": f"would take the clock past its last moment {LATEST_ISO}",
            }
        ]
        until = await client.post(
            "/_emulator/clock/advance", json={"until": "3000-01-01T00:00:00Z"}
        )
        assert until.status_code == 400 and until.json()["errors"][0]["field"] == "until"
        last = await client.post("/_emulator/clock/advance", json={"until": LATEST_ISO})
        assert last.status_code == 200, last.text
        assert (await client.get("/_emulator/clock")).json()["now"] == LATEST_ISO
        assert (await client.post("/_emulator/reset")).status_code == 200
