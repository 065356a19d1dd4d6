"""Two exports in a row against the reference CRM change no platform field but the CRM's own
(its ids, links and the fields it owns): embedded (`emulator export --db`), served `/crm`
(`emulator export --crm-url`), and through the control API the dashboard calls. Platform
records are compared field by field as `/v1` reads them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.hostile.harness import ALL, cli, served, wait_export

# What an export may change on a platform record: the CRM's id of it, the link to it, whether
# it is in the CRM, and updatedAt (the CRM's own fields land in customFields).
CRM_OWNED = frozenset(
    {
        "updatedAt",
        "companyCRMId",
        "companyCRMUrl",
        "isCompanyInCRM",
        "contactCRMId",
        "contactCRMUrl",
        "isInCRM",
    }
)
Records = dict[tuple[str, int], dict[str, Any]]


def platform_records(client: httpx.Client) -> Records:
    """Every company and contact as `/v1` reads them."""
    records: Records = {}
    for kind, path in (("company", "/v1/companies"), ("contact", "/v1/contacts")):
        page = 1
        while True:
            params = {"page": str(page), "pageSize": "100"}
            data = client.get(path, params=params, headers=ALL).json()["data"]
            records.update(((kind, r["id"]), r) for r in data)
            if len(data) < 100:
                break
            page += 1
    return records


def changed_fields(before: Records, after: Records) -> dict[str, int]:
    """`kind.field` -> how many records changed it, CRM-owned fields left out."""
    assert before.keys() == after.keys()
    changed: dict[str, int] = {}
    for key, old in before.items():
        new = after[key]
        for name in (old.keys() | new.keys()) - CRM_OWNED:
            if old.get(name) != new.get(name):
                changed[f"{key[0]}.{name}"] = changed.get(f"{key[0]}.{name}", 0) + 1
    return changed


@pytest.fixture(scope="module")
def fresh() -> Iterator[tuple[httpx.Client, Records]]:
    """A served emulator on the default fixtures, and its platform before any export."""
    with served("--rate-limit", "off") as client:
        yield client, platform_records(client)


def control_export(client: httpx.Client) -> dict[str, Any]:
    started = client.post("/_emulator/exports")
    assert started.status_code == 202, started.text
    return wait_export(client, started.json()["id"])


def test_two_control_api_exports_change_no_platform_field(
    fresh: tuple[httpx.Client, Records],
) -> None:
    client, before = fresh
    assert client.post("/_emulator/reset").status_code == 200
    for _ in range(2):
        report = control_export(client)
        assert (report["status"], report["clearedTotal"], report["cleared"]) == ("ok", 0, [])
    assert changed_fields(before, platform_records(client)) == {}
    company = client.get("/v1/company/1", headers=ALL).json()["data"]
    assert company["domain"] and company["industry"] and company["phoneNumber"]


def test_the_owned_setting_wipes_and_the_comparison_sees_it(
    fresh: tuple[httpx.Client, Records],
) -> None:
    """The named wiping setting: the same two exports clear the platform's values."""
    client, before = fresh
    assert client.post("/_emulator/reset").status_code == 200
    settings = client.get("/_emulator/crm/settings").json()
    r = client.put("/_emulator/crm/settings", json={**settings, "syncBack": "owned"})
    assert r.status_code == 200, r.text
    cleared = sum(control_export(client)["clearedTotal"] for _ in range(2))
    changed = changed_fields(before, platform_records(client))
    assert (
        cleared > 0 and changed["company.domain"] > 0 and changed["contact.professionalEmail"] > 0
    )
    company = client.get("/v1/company/1", headers=ALL).json()["data"]
    assert company["domain"] is None
    assert client.post("/_emulator/reset").status_code == 200


def exported_twice(tmp_path: Path, *args: str) -> Path:
    """`emulator export --db FILE ARGS` twice; each run clears nothing and exits 0."""
    db = tmp_path / "platform.db"
    for _ in range(2):
        ran = cli("export", "--db", str(db), "--json", *args, timeout=120)
        assert ran.code == 0, ran.err + ran.out[-2000:]
        report = json.loads(ran.out)
        assert (report["clearedTotal"], report["cleared"]) == (0, [])
    return db


def test_two_embedded_cli_exports_change_no_platform_field(
    fresh: tuple[httpx.Client, Records], tmp_path: Path
) -> None:
    db = exported_twice(tmp_path)
    with served("--db", str(db), "--rate-limit", "off") as after:
        assert changed_fields(fresh[1], platform_records(after)) == {}


def test_two_cli_exports_to_a_served_crm_change_no_platform_field(
    fresh: tuple[httpx.Client, Records], tmp_path: Path
) -> None:
    client, before = fresh
    assert client.post("/_emulator/reset").status_code == 200
    crm = f"{client.base_url}".rstrip("/") + "/crm"
    db = exported_twice(tmp_path, "--crm-url", crm, "--api-key", "crm-demo-key")
    with served("--db", str(db), "--rate-limit", "off") as after:
        assert changed_fields(before, platform_records(after)) == {}
