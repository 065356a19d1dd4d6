"""The contact JSON that SQLite keeps (`doc` column) is exactly the Contact struct's shape."""

from __future__ import annotations

import httpx
import msgspec
import pytest

from emulator.public_api.schemas import Contact
from tests.conftest import ALL

pytestmark = pytest.mark.anyio


async def test_every_listed_contact_has_exactly_the_struct_fields(
    client: httpx.AsyncClient,
) -> None:
    page, seen = 1, 0
    while True:
        body = (
            await client.get("/v1/contacts", params={"page": page, "pageSize": 100}, headers=ALL)
        ).json()
        for item in body["data"]:
            assert set(item) == set(Contact.__struct_fields__)
            msgspec.convert(item, Contact, strict=True)
            seen += 1
        if page * 100 >= body["meta"]["total"]:
            break
        page += 1
    assert seen == body["meta"]["total"] >= 200


async def test_fast_path_and_field_selection_agree(client: httpx.AsyncClient) -> None:
    whole = (await client.get("/v1/contacts", params={"pageSize": 50}, headers=ALL)).json()["data"]
    names = ",".join(f for f in Contact.__struct_fields__ if f != "id")
    chosen = await client.get("/v1/contacts", params={"pageSize": 50, "fields": names}, headers=ALL)
    assert chosen.json()["data"] == whole
    one = (await client.get(f"/v1/contact/{whole[3]['id']}", headers=ALL)).json()["data"]
    assert one == whole[3]


async def test_contact_in_crm_shows_its_link_and_flag(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/contacts", params={"pageSize": 100}, headers=ALL)).json()
    in_crm = [c for c in body["data"] if c["contactCRMId"]]
    out = [c for c in body["data"] if not c["contactCRMId"]]
    assert in_crm and out
    assert all(c["isInCRM"] and c["contactCRMUrl"].endswith(c["contactCRMId"]) for c in in_crm)
    assert all(not c["isInCRM"] and c["contactCRMUrl"] is None for c in out)
