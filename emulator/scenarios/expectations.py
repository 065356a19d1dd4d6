"""A scenario's expectations checked after its steps: CRM calls, the report, records."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from msgspec import UNSET

from emulator.scenarios import models as sm
from emulator.scenarios.calls import Failed, check_calls, mismatch
from emulator.scenarios.match import show, subset
from emulator.scenarios.models import Failure
from emulator.scenarios.record import Exchange

# GET a path of the scenario's emulator: (status, JSON or text).
Request = Callable[[str, str], Awaitable[tuple[int, Any]]]


async def check_expectations(
    expect: sm.Expectations,
    request: Request,
    calls: list[Exchange],
    report: Any,
    missing: list[str],
) -> None:
    """Raise Failed at the first expectation the run did not meet."""
    if missing:
        raise Failed(
            Failure(
                at="crm.playback",
                message="calls without a recorded answer",
                expected="a recorded answer for each call",
                actual=", ".join(missing[:8]),
            )
        )
    if expect.crmCalls is not UNSET:
        check_calls(expect.crmCalls, calls, "expect.crmCalls")
    if expect.report is not UNSET:
        if report is None:
            raise Failed(
                Failure(
                    at="expect.report",
                    message="no export was run",
                    expected="an export report",
                    actual="none",
                )
            )
        m = subset(expect.report, report)
        if m:
            raise mismatch("expect.report", m, "export report")
    for i, rec in enumerate(expect.platform):
        at = f"expect.platform[{i}]"
        status, data = await request("GET", rec.path)
        if status != 200:
            raise Failed(
                Failure(
                    at=at,
                    message=f"GET {rec.path}",
                    expected="200",
                    actual=f"{status} {show(data, 160)}",
                )
            )
        shown = data["data"] if isinstance(data, dict) and "data" in data else data
        m = subset(rec.fields, shown)
        if m:
            raise mismatch(f"{at}.fields", m, f"GET {rec.path}")
    listed: dict[str, list[Any]] = {}  # each kind is listed once: the checks only read
    for i, crm_rec in enumerate(expect.crm):
        await _crm_record(request, crm_rec, f"expect.crm[{i}]", listed)


async def _crm_records(request: Request, kind: str, listed: dict[str, list[Any]]) -> list[Any]:
    if kind in listed:
        return listed[kind]
    found: list[Any] = []
    page = 1
    while True:
        status, data = await request("GET", f"/_emulator/crm/{kind}?page={page}&pageSize=100")
        if status != 200 or not isinstance(data, dict):
            raise Failed(
                Failure(
                    at=f"crm {kind}",
                    message="cannot list CRM records",
                    expected="200",
                    actual=f"{status} {show(data, 160)}",
                )
            )
        items = data.get("data") or []
        found.extend(items)
        if len(items) < 100:
            listed[kind] = found
            return found
        page += 1


async def _crm_record(
    request: Request, spec: sm.CrmRecordExpect, at: str, listed: dict[str, list[Any]]
) -> None:
    if spec.crmId is not UNSET:
        status, data = await request("GET", f"/_emulator/crm/{spec.kind}/{spec.crmId}")
        if status != 200:
            raise Failed(
                Failure(
                    at=f"{at}.crmId",
                    message=f"CRM {spec.kind} {spec.crmId}",
                    expected="a stored record",
                    actual=f"{status} {show(data, 160)}",
                )
            )
        records = [data]
    else:
        assert spec.match is not UNSET
        match = spec.match
        records = [
            r
            for r in await _crm_records(request, spec.kind, listed)
            if subset(match, _flat(r)) is None
        ]
        if spec.count is not UNSET and len(records) != spec.count:
            raise Failed(
                Failure(
                    at=f"{at}.count",
                    message=f"CRM {spec.kind} matching {show(match, 120)}",
                    expected=f"{spec.count} records",
                    actual=f"{len(records)} records",
                )
            )
        if not records and spec.fields is not UNSET:
            raise Failed(
                Failure(
                    at=f"{at}.match",
                    message=f"no CRM {spec.kind} record matches",
                    expected=show(match),
                    actual="none",
                )
            )
    if spec.fields is not UNSET:
        m = subset(spec.fields, _flat(records[0]))
        if m:
            raise mismatch(f"{at}.fields", m, f"CRM {spec.kind} record")


def _flat(record: Any) -> Any:
    """A stored contact or company with its stored `fields` lifted beside crmId, externalId..."""
    if isinstance(record, dict) and isinstance(record.get("fields"), dict):
        return {**record["fields"], **{k: v for k, v in record.items() if k != "fields"}}
    return record
