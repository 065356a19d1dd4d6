"""Query-string parsing for /v1: every bad value is a 400 naming the parameter."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from starlette.datastructures import QueryParams

from emulator.errors import BadRequest
from emulator.public_api.filters import iso_bound

MAX_INT = 2**63 - 1


def _int(name: str, raw: str, low: int, high: int) -> int:
    text = raw.strip()
    if not text.lstrip("-").isdigit() or not text.isascii():
        raise BadRequest.field(name, "must be an integer")
    value = int(text)
    if not low <= value <= high:
        raise BadRequest.field(name, f"must be between {low} and {high}")
    return value


def page_params(query: QueryParams) -> tuple[int, int]:
    """`page` >= 1 (default 1) and 1 <= `pageSize` <= 100 (default 25); never clamped."""
    return (
        _int("page", query.get("page", "1"), 1, MAX_INT),
        _int("pageSize", query.get("pageSize", "25"), 1, 100),
    )


def page_numbers(page: object, page_size: object) -> tuple[int, int]:
    """The same rules for a JSON body (company search), where the values are integers."""
    for name, value in (("page", page), ("pageSize", page_size)):
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise BadRequest.field(name, "must be an integer")
    return (_int("page", str(page), 1, MAX_INT), _int("pageSize", str(page_size), 1, 100))


def optional_int(query: QueryParams, name: str) -> int | None:
    raw = query.get(name)
    return None if raw is None or raw == "" else _int(name, raw, -MAX_INT, MAX_INT)


def path_id(raw: str, name: str) -> int:
    """A path id is a string that must hold an integer."""
    return _int(name, raw, 1, MAX_INT)


def search_term(query: QueryParams) -> str | None:
    term = query.get("search")
    return term.strip() or None if term is not None else None


def enum_param(query: QueryParams, name: str, allowed: Collection[str]) -> str | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    if raw not in allowed:
        raise BadRequest.field(name, f"must be one of {', '.join(sorted(allowed))}")
    return raw


def date_param(query: QueryParams, name: str, end: bool = False) -> str | None:
    """An inclusive bound; with `end`, a date-only value covers its whole day."""
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    return iso_bound(name, raw, end)


def fields_param(query: QueryParams, known: Iterable[str]) -> list[str] | None:
    """`fields=a,b` or repeated `fields=a&fields=b`; unknown names are a 400."""
    raw = query.getlist("fields")
    if not raw:
        return None
    names = [part.strip() for item in raw for part in item.split(",") if part.strip()]
    known_set = set(known)
    unknown = [n for n in names if n not in known_set]
    if unknown:
        raise BadRequest.field("fields", f"unknown field(s): {', '.join(unknown)}")
    return names or None
