"""Shared msgspec base struct and the JSON encoder and decoders, built once."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar, dataclass_transform

import msgspec

T = TypeVar("T")

# An integer the store can hold (SQLite: 64-bit signed); larger ones are the caller's 400.
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
# The same from 1 (ids, numbers counted from one) and from 0 (counts, seeds).
Positive64 = Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]
NonNegative64 = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class _KeywordOnly(msgspec.StructMeta):
    """Makes every subclass keyword-only, so required fields may follow optional ones."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kw: Any) -> Any:
        kw.setdefault("kw_only", True)
        return super().__new__(mcls, name, bases, ns, **kw)


# dataclass_transform tells type checkers what the metaclass does (without it mypy reads the
# fields as positional and reports every required field that follows an optional one).
@dataclass_transform(kw_only_default=True, field_specifiers=(msgspec.field,))
class Wire(msgspec.Struct, metaclass=_KeywordOnly):
    """Base of every body and fixture struct; field names are the wire names (camelCase)."""


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(msgspec.field,))
class FrozenWire(msgspec.Struct, metaclass=_KeywordOnly, frozen=True):
    """Base of immutable values (settings, OpenAPI metadata): hashable, never changed in place."""


class WireOmit(Wire, omit_defaults=True):
    """Base for request bodies where an absent field differs from a null one."""


class FileWire(Wire, forbid_unknown_fields=True):
    """Base of what scenario and fixture files hold: an unknown key is an error, never
    silently dropped (a misspelled `expect` would otherwise check nothing)."""


class FileWireOmit(WireOmit, forbid_unknown_fields=True):
    """FileWire where an absent field differs from a null one."""


encoder = msgspec.json.Encoder()
_generic_decoder = msgspec.json.Decoder()
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def encode(obj: Any) -> bytes:
    return encoder.encode(obj)


def decode(data: bytes | str, type: type[T] | Any = Any) -> T:
    """Decode JSON into `type`; one cached decoder per type (msgspec perf advice)."""
    if type is Any:
        return _generic_decoder.decode(data)  # type: ignore[no-any-return]
    dec = _decoders.get(type)
    if dec is None:
        dec = _decoders[type] = msgspec.json.Decoder(type)
    return dec.decode(data)  # type: ignore[no-any-return]


_PATH = re.compile(r" - at `\$(.*)`$")
_MISSING = re.compile(r"^Object missing required field `([^`]*)`")


def split_validation_error(exc: msgspec.ValidationError | msgspec.DecodeError) -> tuple[str, str]:
    """Split msgspec's "message - at `$.a[1].b`" into ("a[1].b", "message").

    A missing required field is named in the path too ("a[1].name"), so the field of a
    400 is always the one at fault.
    """
    text = str(exc)
    m = _PATH.search(text)
    path, message = ("", text) if m is None else (m.group(1).lstrip("."), text[: m.start()])
    missing = _MISSING.match(message)
    if missing:
        path = f"{path}.{missing.group(1)}" if path else missing.group(1)
    return path, message.replace("`", "")


def now_iso(moment: datetime | None = None) -> str:
    """UTC timestamp in the one fixed-width form stored everywhere (sorts as text)."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{moment.microsecond // 1000:03d}Z"
    )


def parse_iso(text: str) -> datetime:
    """Parse ISO 8601 (date or date-time, `Z` or offset); naive values are UTC."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def normalise_iso(text: str) -> str:
    """Any accepted ISO 8601 text in the stored form; raises ValueError when invalid (also
    when its UTC moment is beyond year 1 to 9999: "9999-12-31T23:00:00-05:00")."""
    try:
        return now_iso(parse_iso(text))
    except OverflowError:
        raise ValueError(f"out of range: {text!r}") from None
