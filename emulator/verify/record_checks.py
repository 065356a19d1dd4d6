"""Pure verdicts on the record endpoints: create, sync and update of companies and contacts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from emulator.verify.checks import Answer, Broken, Learned, Verdict, items, ok, short, text, verdict
from emulator.wire import decode


@verdict
def create(kind: str, answer: Answer, sent: list[str], learned: Learned) -> Verdict:
    """POST /{kind}: one {externalId, crmId} per item sent; fills `learned.ids`."""
    results = items(ok(answer, f"POST /{kind}"), "results", f"the POST /{kind} answer")
    problems: list[str] = []
    seen: dict[str, str] = {}
    for i, result in enumerate(results):
        ext, crm_id = result.get("externalId"), result.get("crmId")
        if ext not in sent:
            problems.append(f"results[{i}] echoes externalId {short(ext)}, which was not sent")
        elif not text(crm_id):
            problems.append(f"results[{i}] ({ext}) has no string crmId: {short(crm_id)}")
        elif ext in seen:
            problems.append(f"{ext} comes back twice")
        else:
            seen[str(ext)] = str(crm_id)
    learned.ids.update(seen)
    missing = [e for e in sent if e not in seen and e not in {r.get("externalId") for r in results}]
    if missing:
        problems.append(f"{len(missing)} of {len(sent)} items have no result (first: {missing[0]})")
    if len(set(seen.values())) < len(seen):
        problems.append("two items were given the same crmId")
    if problems:
        raise Broken("; ".join(problems[:5]))
    if kind == "companies" and answer.status != 201:
        return Verdict(
            "warn",
            f"{len(seen)} created, but answered {answer.status} where the spec documents 201",
        )
    return Verdict("pass", f"{answer.status}: {len(seen)} created, each with its crmId")


def sync_results(kind: str, answer: Answer) -> list[dict[str, Any]]:
    return items(ok(answer, f"POST /{kind}/sync"), "results", f"the POST /{kind}/sync answer")


@verdict
def sync_finds(kind: str, answer: Answer, created: dict[str, str]) -> Verdict:
    """Every record created before is matched, to the crmId the CRM issued."""
    found = {r.get("externalId"): r for r in sync_results(kind, answer)}
    problems = []
    for ext, crm_id in created.items():
        result = found.get(ext)
        if result is None:
            problems.append(f"{ext} (created as {crm_id}) was not matched")
        elif result.get("crmId") != crm_id:
            problems.append(
                f"{ext} matched crmId {short(result.get('crmId'))}, not {crm_id} issued at create"
            )
        elif "properties" in result and not isinstance(result["properties"], dict | None):
            problems.append(f"{ext}: `properties` is not an object: {short(result['properties'])}")
    if problems:
        raise Broken("; ".join(problems[:5]))
    return Verdict("pass", f"{len(created)} created records matched with their crmIds")


@verdict
def sync_omits(kind: str, answer: Answer, asked: list[str], unmatched: list[str]) -> Verdict:
    results = sync_results(kind, answer)
    extra = [r.get("externalId") for r in results if r.get("externalId") in unmatched]
    if extra:
        raise Broken(f"records that do not exist came back as matched: {short(extra)}")
    unasked = [r.get("externalId") for r in results if r.get("externalId") not in asked]
    if unasked:
        raise Broken(f"results carry externalIds that were not asked: {short(unasked)}")
    if any(not text(r.get("crmId")) for r in results):
        raise Broken("a result has no string crmId")
    return Verdict("pass", f"{len(unmatched)} unmatched records omitted")


@verdict
def sync_empty(kind: str, answer: Answer) -> Verdict:
    body = ok(answer, f"POST /{kind}/sync matching nothing")
    results = items(body, "results", f"the POST /{kind}/sync answer")
    if results:
        raise Broken(f"a sync of records that do not exist answered results: {short(results)}")
    if body.get("errors"):
        raise Broken(f"records that do not exist were reported as errors: {short(body['errors'])}")
    return Verdict("pass", f"{answer.status} {{results: []}}")


@verdict
def sync_errors(kind: str, answers: Iterable[tuple[Answer, list[str]]]) -> Verdict:
    """Every `errors` array of every 2xx sync answer seen: [{externalId (asked), error (text)}]."""
    seen = checked = 0
    for answer, asked in answers:
        if not 200 <= answer.status < 300:
            continue
        try:
            body: Any = decode(answer.body)
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue  # the other sync checks report bodies that are not JSON
        if not isinstance(body, dict) or "errors" not in body:
            checked += 1
            continue
        errors = body["errors"]
        if not isinstance(errors, list):
            raise Broken(f"`errors` is not an array: {short(errors)}")
        matched = {r.get("externalId") for r in body.get("results") or [] if isinstance(r, dict)}
        for i, entry in enumerate(errors):
            if (
                not isinstance(entry, dict)
                or not text(entry.get("externalId"))
                or not text(entry.get("error"))
            ):
                raise Broken(f"errors[{i}] is not {{externalId, error}} with texts: {short(entry)}")
            if entry["externalId"] not in asked:
                raise Broken(f"errors[{i}] names externalId {entry['externalId']!r}, not asked")
            if entry["externalId"] in matched:
                raise Broken(
                    f"{entry['externalId']} is both matched in results and failed in errors"
                )
        seen += len(errors)
        checked += 1
    if not checked:
        raise Broken("no sync answer could be checked (see the other sync checks)")
    return Verdict(
        "pass",
        f"{checked} sync answers well formed; {seen} `errors` entries, all {{externalId, error}}",
    )


def update_results(kind: str, answer: Answer, sent: list[str]) -> dict[str, dict[str, Any]]:
    """PUT /{kind}: one result per crmId sent, `success` a boolean, `error` text on failure."""
    results = items(ok(answer, f"PUT /{kind}"), "results", f"the PUT /{kind} answer")
    by_id: dict[str, dict[str, Any]] = {}
    for i, result in enumerate(results):
        crm_id = result.get("crmId")
        if crm_id not in sent:
            raise Broken(f"results[{i}] has crmId {short(crm_id)}, which was not sent")
        if not isinstance(result.get("success"), bool):
            raise Broken(f"results[{i}] ({crm_id}): `success` is not a boolean: {short(result)}")
        if result["success"] is False and not text(result.get("error")):
            raise Broken(f"results[{i}] ({crm_id}) failed without `error` text: {short(result)}")
        by_id[crm_id] = result
    missing = [c for c in sent if c not in by_id]
    if missing:
        raise Broken(
            f"no result for {', '.join(missing)} ({len(results)} results for {len(sent)} items)"
        )
    return by_id


@verdict
def update(kind: str, answer: Answer, sent: list[str], what: str) -> Verdict:
    by_id = update_results(kind, answer, sent)
    failed = [f"{c}: {r.get('error')}" for c, r in by_id.items() if not r["success"]]
    if failed:
        raise Broken(f"updates of records the CRM issued failed: {'; '.join(failed[:3])}")
    return Verdict("pass", f"{len(sent)} updated ({what})")


@verdict
def update_unknown(kind: str, answer: Answer, known: str, unknown: str) -> Verdict:
    if answer.status >= 400:
        raise Broken(f"one unknown crmId failed the whole batch: {answer.describe()}")
    by_id = update_results(kind, answer, [known, unknown])
    if by_id[known]["success"] is not True:
        raise Broken(
            f"the known record {known} failed beside the unknown one: {by_id[known].get('error')}"
        )
    if by_id[unknown]["success"] is not False:
        raise Broken(f"the unknown crmId {unknown} was answered success: true")
    return Verdict("pass", f"only the unknown crmId failed: {by_id[unknown]['error']!r}")


def properties_of(answer: Answer, kind: str, ext: str) -> dict[str, Any] | None:
    """The `properties` a sync answer gave `ext` (None: none given); `Broken` if not matched."""
    for result in sync_results(kind, answer):
        if result.get("externalId") == ext:
            props = result.get("properties")
            return props if isinstance(props, dict) else None
    raise Broken(f"{ext} was not matched by the sync after the PUTs")


@verdict
def keeps_fields(
    kind: str, before: dict[str, Any] | None, after: Answer, ext: str, first: str, second: str
) -> Verdict:
    """After two PUTs (field `first`, then field `second`), nothing the sync showed is lost."""
    props = properties_of(after, kind, ext)
    if before is None and props is None:
        return Verdict("skip", "sync answers carry no `properties`: stored fields cannot be seen")
    if props is None:
        raise Broken(
            "sync carried `properties` before the PUTs and none after: every synced "
            "field would be cleared on the platform"
        )
    lost = [k for k, v in (before or {}).items() if v is not None and props.get(k) is None]
    if second in props and first not in props:
        lost.append(first)
    if lost:
        raise Broken(
            f"fields lost after PUTs of other fields (PUT replaced the stored record?): "
            f"{', '.join(lost[:8])}"
        )
    shown = len([k for k, v in (before or {}).items() if v is not None])
    echoed = " (PUT fields echoed)" if first in props else ""
    return Verdict("pass", f"{shown} synced properties kept after two PUTs{echoed}")
