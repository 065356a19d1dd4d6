"""Company search conditions (decisions.md §2) turned into one parameterised SQL WHERE clause.

Pure: no I/O. `include` and `exclude` map a key to a value whose shape follows the field:

    text / enum      ["Software", "Fintech"]        exact values, case-insensitive (casefold)
    numeric          ["1", "10"]                     [min, max], "" leaves that end open
    boolean          [true]                          one item
    timestamp        {"startDate": ..., "endDate": ...}
    special          id, campaigns, companyGroup     arrays of ids
                     leadsCount, numberOfEmployees   numeric ranges
                     isCompanyInCRM                  boolean

A condition with nothing in it (empty array, both ends open, no dates) constrains nothing.
Column names come only from the tables below, never from the request; values are bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from emulator.errors import BadRequest
from emulator.public_api.filters import iso_bound, non_ascii

MAX_VALUES = 1000  # items in one array condition; keeps far below SQLite's bound-variable cap

TEXT_FIELDS = frozenset(
    {
        "name",
        "domain",
        "website",
        "companyNetworkUrl",
        "industry",
        "rangeOfEmployees",
        "yearfounded",
        "description",
        "country",
        "city",
        "streetAddress",
        "phoneNumber",
        "companyEmail",
        "revenueRange",
        "companyCRMId",
    }
)
NUMERIC_FIELDS = frozenset({"numberOfEmployees", "openJobPositions"})
BOOLEAN_FIELDS = frozenset({"hiringOnNetwork"})
TIME_FIELDS = frozenset({"createdAt", "updatedAt"})
ID_FIELDS = frozenset({"id", "campaigns", "companyGroup"})
SPECIAL = frozenset({"leadsCount", "isCompanyInCRM"})
# Text fields with an index of their own (platform.sql): a condition on one reads the
# field's distinct values off the index (a few dozen: an industry), folds those, and finds
# the rows of the ones that match through the index, instead of folding every row's value.
INDEXED_TEXT = frozenset({"industry"})
KEYS = TEXT_FIELDS | NUMERIC_FIELDS | BOOLEAN_FIELDS | TIME_FIELDS | ID_FIELDS | SPECIAL

# SQL of each id-array key; `{marks}` is the list of placeholders.
_ID_SQL = {
    "id": "id IN ({marks})",
    "campaigns": (
        "id IN (SELECT c.companyId FROM contacts c JOIN campaign_members m ON m.contactId = c.id"
        " WHERE m.campaignId IN ({marks}) AND c.companyId IS NOT NULL)"
    ),
    "companyGroup": (
        "id IN (SELECT lm.entityId FROM list_members lm JOIN lists l ON l.id = lm.listId"
        " WHERE l.type = 'COMPANIES' AND lm.listId IN ({marks}))"
    ),
}
# Companies by how many contacts they have: one GROUP BY over the contacts' companyId index,
# not a count per company (10x faster on 100k rows).
_LEADS = "SELECT companyId FROM contacts WHERE companyId IS NOT NULL GROUP BY companyId HAVING "

Clause = tuple[str, list[Any]]


class Conditions:
    """The WHERE clause (without the keyword) and its parameters; empty when nothing applies.

    `folds`: the clause calls casefold(), which the caller must register first.
    """

    def __init__(self, clauses: list[Clause], folds: bool) -> None:
        self.sql = " AND ".join(sql for sql, _ in clauses)
        self.params: list[Any] = [p for _, params in clauses for p in params]
        self.folds = folds


def parse_conditions(include: Mapping[str, Any], exclude: Mapping[str, Any]) -> Conditions:
    """Every include condition must hold and no exclude condition may; 400 names a bad key."""
    clauses: list[Clause] = []
    folds = False
    for side, conditions in (("include", include), ("exclude", exclude)):
        for key, value in conditions.items():
            clause = condition(f"{side}.{key}", key, value)
            if clause is None:
                continue
            folds |= key in TEXT_FIELDS
            sql, params = clause
            # A NULL column makes the condition NULL: not met, so never excludes either.
            clauses.append((f"({sql})" if side == "include" else f"NOT IFNULL(({sql}), 0)", params))
    return Conditions(clauses, folds)


def condition(where: str, key: str, value: Any) -> Clause | None:
    """One condition as (sql, params), or None when it constrains nothing."""
    parser = _PARSERS.get(_kind(key))
    if parser is None:
        raise BadRequest.field(
            where, f"unknown condition key; known keys: {', '.join(sorted(KEYS))}"
        )
    return parser(where, key, value)


def _kind(key: str) -> str:
    for kind, keys in (
        ("text", TEXT_FIELDS),
        ("numeric", NUMERIC_FIELDS | {"leadsCount"}),
        ("boolean", BOOLEAN_FIELDS | {"isCompanyInCRM"}),
        ("time", TIME_FIELDS),
        ("ids", ID_FIELDS),
    ):
        if key in keys:
            return kind
    return ""


def _array(where: str, value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadRequest.field(where, f"must be an array of {what}")
    if len(value) > MAX_VALUES:
        raise BadRequest.field(where, f"at most {MAX_VALUES} values")
    return value


def _text(where: str, key: str, value: Any) -> Clause | None:
    items = _array(where, value, "strings")
    values: list[str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise BadRequest.field(where, "must be an array of strings")
        values.append(str(item).casefold())
    if not values:
        return None
    # casefold() is the SQL function the listings register; SQLite's lower() folds ASCII only,
    # which is all an ASCII value needs, so only the others pay for the Python call.
    marks = _marks(values)
    if key in INDEXED_TEXT:  # the few spellings that match, then their rows by the index
        folds = f"lower(v) IN ({marks}) OR ({non_ascii('v')} AND casefold(v) IN ({marks}))"
        return f"{key} IN (SELECT v FROM ({_spellings(key)}) WHERE {folds})", values * 2
    sql = f"lower({key}) IN ({marks}) OR ({non_ascii(key)} AND casefold({key}) IN ({marks}))"
    return sql, values * 2


def _spellings(key: str) -> str:
    """SQL: the distinct non-null values of `key`, one index probe each (a loose index scan:
    each the least value above the one before), not a read of every row's value."""
    least = f"SELECT min({key}) FROM companies"
    return (
        f"WITH RECURSIVE spelled(v) AS ({least} UNION ALL SELECT ({least} WHERE {key} > v)"
        " FROM spelled WHERE v IS NOT NULL) SELECT v FROM spelled WHERE v IS NOT NULL"
    )


def _ids(where: str, key: str, value: Any) -> Clause | None:
    items = _array(where, value, "integer ids")
    ids: list[int] = []
    for given in items:
        item = given
        if isinstance(item, str) and item.strip().isdecimal() and item.strip().isascii():
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < 2**63:
            raise BadRequest.field(where, "must be an array of integer ids")
        ids.append(item)
    if not ids:
        return None
    return _ID_SQL[key].format(marks=_marks(ids)), ids


def _number(where: str, item: Any) -> float | int | None:
    if item is None or item == "":
        return None
    if isinstance(item, str):
        text = item.strip()
        try:
            item = int(text) if text.lstrip("+-").isdecimal() and text.isascii() else float(text)
        except ValueError:
            raise BadRequest.field(where, f"{item!r} is not a number") from None
    if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
        raise BadRequest.field(where, 'range ends must be numbers as strings, or "" for open')
    if isinstance(item, int) and abs(item) >= 2**63:
        item = float(item)  # beyond SQLite's integers; a float compares correctly
    return item


def _numeric(where: str, key: str, value: Any) -> Clause | None:
    if not isinstance(value, list) or len(value) != 2:
        raise BadRequest.field(where, 'must be a two-item [min, max] array ("" for an open end)')
    low, high = _number(where, value[0]), _number(where, value[1])
    if key == "leadsCount":
        return _leads(low, high)
    column = key
    parts: list[str] = []
    params: list[Any] = []
    if low is not None:
        parts.append(f"{column} >= ?")
        params.append(low)
    if high is not None:
        parts.append(f"{column} <= ?")
        params.append(high)
    return (" AND ".join(parts), params) if parts else None


def _leads(low: float | None, high: float | None) -> Clause | None:
    """leadsCount in [low, high]; a company without contacts counts 0."""
    if low is None and high is None:
        return None
    if low is not None and low > 0:
        if high is None:
            return f"id IN ({_LEADS}COUNT(*) >= ?)", [low]
        return f"id IN ({_LEADS}COUNT(*) >= ? AND COUNT(*) <= ?)", [low, high]
    if high is None:
        return "1", []  # at least zero contacts: every company
    if high < 0:
        return "0", []
    return f"id NOT IN ({_LEADS}COUNT(*) > ?)", [high]


def _boolean(where: str, key: str, value: Any) -> Clause | None:
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], bool):
        raise BadRequest.field(where, "must be a one-item array: [true] or [false]")
    if key == "isCompanyInCRM":
        return "(companyCRMId IS NOT NULL) = ?", [int(value[0])]
    return f"{key} = ?", [int(value[0])]


def _time(where: str, key: str, value: Any) -> Clause | None:
    if not isinstance(value, dict) or not set(value) <= {"startDate", "endDate"}:
        raise BadRequest.field(where, 'must be an object {"startDate", "endDate"}')
    parts: list[str] = []
    params: list[Any] = []
    for name, op in (("startDate", ">="), ("endDate", "<=")):
        raw = value.get(name)
        if raw is None or raw == "":
            continue
        if not isinstance(raw, str):
            raise BadRequest.field(f"{where}.{name}", "must be an ISO 8601 date or date-time")
        parts.append(f"{key} {op} ?")
        params.append(iso_bound(f"{where}.{name}", raw, end=name == "endDate"))
    return (" AND ".join(parts), params) if parts else None


def _marks(values: list[Any]) -> str:
    return ",".join("?" * len(values))


_PARSERS: dict[str, Callable[[str, str, Any], Clause | None]] = {
    "text": _text,
    "numeric": _numeric,
    "boolean": _boolean,
    "time": _time,
    "ids": _ids,
}
