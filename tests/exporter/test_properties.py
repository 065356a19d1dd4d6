"""The null-clearing rule of decisions.md §3, end to end (export -> SQLite -> /v1 read), with the
expected values taken from the spec's tables (tests/exporter/scripted.py), never from the
exporter's own lists: every syncable name absent or null in a matched record's `properties`
is cleared, every present one overwrites, other names become custom fields; records that
fail their sync (an `errors` entry, or a whole batch answered 5xx, timed out or malformed)
and records without `properties` keep every value. Several batches per kind, per-item errors
mixed with whole-batch failures; and the property check is shown to catch a planted bug."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.exporter import properties as rule
from emulator.exporter.report import Report, cleared_lines
from tests.exporter.scripted import (
    KEEP,
    SIZES,
    SPEC_COMMON,
    SPEC_CORE_V1,
    After,
    Script,
    batch_of,
    custom_seed,
    export_and_read,
)

pytestmark = pytest.mark.anyio

# The platform's core values as the fixtures seed them (scripted.fixtures, small_fixtures).
SEEDED_CORE = {
    "companies": lambda i: {
        "domain": f"co{i}.com",
        "phoneNumber": "+1 555 0100",
        "industry": "Software",
    },
    "contacts": lambda i: {
        "professionalEmail": f"p{i}@x.com",
        "phones": "+1 555 0199",
        "mobilePhone": "+1 555 0177",
    },
}


def sync_answered(script: Script, kind: str, i: int) -> bool:
    """Whether record i got a sync result with its crmId (not an error, not a failed batch)."""
    return (kind, "sync", batch_of(str(i))) not in script.faults and script.fates[kind][i - 1] in (
        "match",
        "update_fail",
    )


def expected(script: Script, kind: str, i: int) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The record's core /v1 values and stored custom fields after the export, and how many
    values the sync-back cleared, by the rule as the spec words it."""
    core, custom = SEEDED_CORE[kind](i), custom_seed(kind)
    props = script.properties[kind][i - 1]
    cleared = 0
    if not sync_answered(script, kind, i) or props is None:
        return core, custom, cleared
    for name in SPEC_COMMON[kind] | props.keys():
        value = props.get(name)
        field = SPEC_CORE_V1[kind].get(name)
        if field is not None:
            cleared += value is None and core[field] is not None
            core[field] = value
        elif value is None:
            cleared += custom.pop(name, None) is not None
        else:
            custom[name] = value
    return core, custom, cleared


def check_null_clearing(script: Script, report: Report, after: After) -> None:
    total = 0
    for kind, size in SIZES.items():
        for i in range(1, size + 1):
            core, custom, cleared = expected(script, kind, i)
            total += cleared
            record = after.v1[kind][i]
            assert {f: record[f] for f in core} == core, (kind, i)
            assert after.custom[kind][i] == custom, (kind, i)
    # The report counts what was cleared: the total, and per field adding up to it.
    assert report.clearedTotal == total
    assert sum(c.count for c in report.clearedByField) == total
    assert sum(report.clearedByCause.values()) == total
    assert len(cleared_lines(report)) == 1 + len(report.clearedByField)


VALUES = st.one_of(st.none(), st.sampled_from(["v1", "v2"]))


def properties_of(kind: str) -> st.SearchStrategy[dict[str, Any] | None]:
    names = sorted(SPEC_COMMON[kind] | {"customField_x", KEEP, "hobby"})
    return st.one_of(st.none(), st.dictionaries(st.sampled_from(names), VALUES, max_size=6))


def scripts() -> st.SearchStrategy[Script]:
    fates = st.sampled_from(["match", "match", "new", "error", "update_fail"])
    faults = st.dictionaries(
        st.tuples(
            st.sampled_from(list(SIZES)),
            st.sampled_from(["sync", "create", "update"]),
            st.integers(0, 3),
        ),
        st.sampled_from(["500", "timeout", "malformed"]),
        max_size=3,
    )
    return st.builds(
        Script,
        fates=st.fixed_dictionaries(
            {k: st.lists(fates, min_size=n, max_size=n) for k, n in SIZES.items()}
        ),
        properties=st.fixed_dictionaries(
            {k: st.lists(properties_of(k), min_size=n, max_size=n) for k, n in SIZES.items()}
        ),
        faults=faults,
    )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scripts())
async def test_sync_back_clears_and_writes_exactly_what_the_rule_says(script: Script) -> None:
    report, _, after = await export_and_read(script)
    check_null_clearing(script, report, after)


def every_company_matched_with_empty_properties() -> Script:
    return Script(
        fates={
            "companies": ["match"] * SIZES["companies"],
            "contacts": ["new"] * SIZES["contacts"],
        },
        properties={
            "companies": [{}] * SIZES["companies"],
            "contacts": [None] * SIZES["contacts"],
        },
    )


async def test_the_check_holds_on_a_plain_example() -> None:
    script = every_company_matched_with_empty_properties()
    report, _, after = await export_and_read(script)
    check_null_clearing(script, report, after)
    assert report.clearedTotal == SIZES["companies"] * len(SPEC_COMMON["companies"])


async def test_the_check_catches_a_name_missing_from_the_exporters_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planted bug: `lastActivityDate` dropped from the exporter's company names."""
    planted = rule.COMMON_PROPERTIES["companies"] - {"lastActivityDate"}
    monkeypatch.setitem(rule.COMMON_PROPERTIES, "companies", planted)
    script = every_company_matched_with_empty_properties()
    report, _, after = await export_and_read(script)
    with pytest.raises(AssertionError):
        check_null_clearing(script, report, after)
