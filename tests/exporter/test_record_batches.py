"""The property bookkeeping of a matched record (phases/record_batches.bookkeep): no I/O."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from emulator.exporter import plan as p
from emulator.exporter import shapes
from emulator.exporter.phases.record_batches import as_sent, bookkeep, create_item


def company(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": 7,
        "name": "Acme",
        "domain": "acme.example",
        "phoneNumber": "+1 555",
        "industry": None,
        "customFields": {"tier": "gold"},
        "synced": ["tier"],
    }
    return {**row, **overrides}


def test_a_match_without_properties_puts_the_record_as_sent() -> None:
    row = company()
    sent = as_sent("companies", row)
    one = bookkeep("companies", row, p.Match("crm-7", None), sent)
    assert one.item == {"crmId": "crm-7", **sent}
    assert (one.update.id, one.update.crm_id, one.update.columns) == (7, "crm-7", {})
    assert one.update.custom is None and one.update.synced is None and one.cleared == []


def test_sync_back_properties_change_the_stored_record_and_the_put() -> None:
    row = company()
    properties = {"domain": "acme.example", "phone": None, "tier": None, "region": "EU"}
    one = bookkeep("companies", row, p.Match("crm-7", properties), as_sent("companies", row))
    assert one.update.columns["phoneNumber"] is None  # a null clears the core column
    assert one.update.custom == {"region": "EU"}  # tier cleared, region synced onto the record
    assert one.update.synced == frozenset({"region"})
    assert {(c.name, c.core) for c in one.cleared} == {("phone", True), ("tier", False)}
    assert "phone" not in one.item and one.item["customFields"] == {"region": "EU"}
    assert one.item["crmId"] == "crm-7" and one.item["domain"] == "acme.example"


def contact(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": 8,
        "firstName": "Ada",
        "lastName": "Byron",
        "professionalEmail": "ada@acme.example",
        "companyName": "Acme",
        "customFields": {"tier": "gold"},
    }
    return {**row, **overrides}


@pytest.mark.parametrize("owner", [None, "user-1"])
@pytest.mark.parametrize(("kind", "row"), [("companies", company()), ("contacts", contact())])
def test_a_create_item_is_the_sync_item_and_the_create_fields_sync_item_untouched(
    kind: p.Kind, row: dict[str, Any], owner: str | None
) -> None:
    ctx: Any = SimpleNamespace(owner_id=owner, shape_item=None)
    sent = as_sent(kind, row)
    kept = dict(sent)
    item = create_item(ctx, kind, row, sent)
    built = (
        shapes.company_create_item(row, owner)
        if kind == "companies"
        else shapes.with_owner(as_sent(kind, row), owner)
    )
    assert list(item.items()) == list(built.items())  # the same fields in the same order
    assert sent == kept  # the sync item is copied, not extended
    assert ("ownerId" in item) == (owner is not None)
