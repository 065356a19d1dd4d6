"""The null-clearing rule of decisions.md §3: what a sync `properties` object does to a record.

Pure: it takes the record's current values and answers the change, so Hypothesis can prove it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from emulator.exporter.terms import Kind
from emulator.part_a import SYNC_PROPERTIES

# Syncable property names given as common in interfaces.md ("Sync result item").
COMMON_PROPERTIES: dict[str, frozenset[str]] = {
    kind: frozenset(names) for kind, names in SYNC_PROPERTIES.items()
}
# Sync-back names that land on a platform column; every other name lives in customFields.
CORE_COLUMNS: dict[str, dict[str, str]] = {
    "companies": {"domain": "domain", "phone": "phoneNumber", "industry": "industry"},
    "contacts": {"email": "professionalEmail", "phone": "phones", "mobilePhone": "mobilePhone"},
}
# Clearing these loses how the record is matched: flagged as a warning (decisions.md §3).
WARN_ON_CLEAR = frozenset({"domain", "phone", "email"})
# Keys a CRM echoes when it returns a whole stored record as `properties`: not properties.
ECHO_KEYS = frozenset({"externalId", "crmId", "customFields", "id"})
# Names of the record as the platform sends it (sync, create and update items) that are not
# syncable properties: `properties` carrying several of them, with the record's own ids, echo
# what the CRM stored from the platform's last update instead of naming the fields to sync.
SENT_ONLY: dict[str, frozenset[str]] = {
    "companies": frozenset(
        {
            "externalId",
            "crmId",
            "name",
            "website",
            "employeeCount",
            "employeeRange",
            "revenue",
            "foundedYear",
            "description",
            "location",
            "city",
            "country",
            "companyNetworkUrl",
            "numberOfEmployees",
            "ownerId",
            "customFields",
        }
    ),
    "contacts": frozenset(
        {
            "externalId",
            "crmId",
            "firstName",
            "lastName",
            "fullName",
            "title",
            "networkUrl",
            "location",
            "country",
            "company",
            "ownerId",
            "customFields",
        }
    ),
}
ECHO_MIN_NAMES = 3  # sent-only names (one of them an id) that make `properties` an echo

# Why a sync-back cleared a platform value (the report's verdict names the CRM behaviour).
Cause = Literal["absent", "null", "echo"]


def echoes_record(kind: Kind, properties: Mapping[str, Any]) -> bool:
    """Whether `properties` are the record as the CRM stored it from the platform's last
    update (its ids and several of the platform's own fields), not the fields to sync back."""
    sent = SENT_ONLY[kind].intersection(properties)
    return len(sent) >= ECHO_MIN_NAMES and not sent.isdisjoint({"externalId", "crmId"})


def _text(value: Any) -> str:
    """Core columns are text; a CRM that sends a number or a list still gets it stored."""
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


@dataclass(frozen=True)
class Cleared:
    name: str
    previous: Any
    core: bool
    cause: Cause = "absent"


@dataclass
class PropertyChange:
    """What a sync `properties` object does to one platform record."""

    columns: dict[str, Any] = field(default_factory=dict)  # platform column -> new value/None
    custom: dict[str, Any] = field(default_factory=dict)  # the whole new customFields object
    synced: frozenset[str] = frozenset()  # custom property names synced onto the record now
    cleared: list[Cleared] = field(default_factory=list)
    changed: bool = False


def apply_properties(
    kind: Kind,
    columns: Mapping[str, Any],
    custom: Mapping[str, Any],
    synced_before: Iterable[str],
    properties: Mapping[str, Any],
) -> PropertyChange:
    """The rule of decisions.md §3, applied exactly.

    `columns` holds the record's current core column values (CORE_COLUMNS targets), `custom`
    its customFields, `synced_before` the custom names an earlier sync put there.
    Every syncable name (common ones + synced_before) absent or null is cleared; every present
    one overwrites; other present names become custom fields (and syncable from now on).
    """
    core = CORE_COLUMNS[kind]
    common = COMMON_PROPERTIES[kind]
    synced = set(synced_before)
    syncable = common | synced if synced else common
    props = properties
    echo = echoes_record(kind, props)
    if not ECHO_KEYS.isdisjoint(props):
        props = {k: v for k, v in props.items() if k not in ECHO_KEYS}
    custom_out = dict(custom)
    columns_out: dict[str, Any] = {}
    cleared: list[Cleared] = []
    for name in syncable.union(props):
        value = props.get(name)
        column = core.get(name)
        cause: Cause = "echo" if echo else "null" if name in props else "absent"
        if column is not None:
            previous = columns.get(column)
            if value is None:
                if previous is not None:
                    cleared.append(Cleared(name, previous, name in WARN_ON_CLEAR, cause))
                    columns_out[column] = None
            else:
                text = value if isinstance(value, str) else _text(value)
                if previous != text:
                    columns_out[column] = text
        elif value is None:
            previous = custom_out.pop(name, None)
            if previous is not None:
                cleared.append(Cleared(name, previous, False, cause))
            synced.discard(name)
        else:
            custom_out[name] = value
            if name not in common:
                synced.add(name)
    changed = bool(columns_out) or custom_out != custom
    return PropertyChange(columns_out, custom_out, frozenset(synced), cleared, changed)
