"""The response envelopes of Part B, exactly as the spec gives them."""

from __future__ import annotations

import math
from typing import Any, Generic, TypeVar

from emulator.wire import Wire, encode

T = TypeVar("T")


class Success(Wire, Generic[T]):
    """Single object and mutation responses."""

    status: str = "success"
    message: str
    data: T


class Pagination(Wire):
    page: int
    pageSize: int
    total: int
    totalPages: int


class PaginatedList(Wire, Generic[T]):
    """Campaigns and identities."""

    status: str = "success"
    data: list[T]
    pagination: Pagination


class Meta(Wire):
    page: int
    pageSize: int
    total: int


class MetaList(Wire, Generic[T]):
    """Contacts, companies, company search, lists, saved views and webhooks."""

    data: list[T]
    meta: Meta


def paginated(data: list[Any], page: int, page_size: int, total: int) -> PaginatedList[Any]:
    pages = math.ceil(total / page_size)
    return PaginatedList(
        data=data,
        pagination=Pagination(page=page, pageSize=page_size, total=total, totalPages=pages),
    )


def meta_list(data: list[Any], page: int, page_size: int, total: int) -> MetaList[Any]:
    return MetaList(data=data, meta=Meta(page=page, pageSize=page_size, total=total))


def success(data: Any, message: str = "OK") -> Success[Any]:
    return Success(message=message, data=data)


# Envelopes around records that are already JSON text (the contact fast path): the same
# shapes as MetaList and Success, assembled without decoding and re-encoding the records.


def meta_list_items(items: list[str]) -> bytes:
    """The MetaList's opening up to its items (a part cached pages reuse)."""
    return b'{"data":[' + ",".join(items).encode()


def meta_list_end(page: int, page_size: int, total: int) -> bytes:
    return b'],"meta":' + encode(Meta(page=page, pageSize=page_size, total=total)) + b"}"


def success_json(item: str, message: str) -> bytes:
    return b'{"status":"success","message":' + encode(message) + b',"data":' + item.encode() + b"}"
