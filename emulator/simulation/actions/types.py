"""The six action types of an actions run and their options, as the live actions guide lists
them (the profile scrape under the spec's neutral name). Pure: no I/O.

`parse_options(type, options)` answers the typed options or raises OptionsError naming what
is wrong: an unknown type, unknown option names, or a value of the wrong shape.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

SCRAPE = "SCRAPE_LEAD_FROM_NETWORK"
ENRICH_EMAIL = "ENRICH_WITH_EMAIL"
ENRICH_PHONE = "ENRICH_WITH_PHONE"
VERIFY_EMAIL = "VERIFY_LEAD_EMAIL"
VERIFY_PHONE = "VERIFY_LEAD_PHONE"
EXPORT = "EXPORT_TO_CRM"


class Options(msgspec.Struct, forbid_unknown_fields=True):
    """Options of a type without any (VERIFY_LEAD_EMAIL, VERIFY_LEAD_PHONE)."""


class ScrapeOptions(Options):
    skipCompanyScrape: bool = False  # leave the contact's company as it is
    skipContactMerge: bool = False  # no record merge happens in the emulator: accepted


class EnrichOptions(Options):
    """ENRICH_WITH_EMAIL and ENRICH_WITH_PHONE: provider order and speed (accepted; the
    emulator's outcome does not depend on them)."""

    sortedApis: list[str] | None = None
    stopType: Literal["NONE", "VERIFIED_EMAIL", "PHONE"] | None = None
    speed: Literal["SLOW", "FAST"] | None = None
    maxTimeToWait: Annotated[float, msgspec.Meta(ge=0)] | None = None  # milliseconds


class Override(msgspec.Struct, forbid_unknown_fields=True):
    """A value for the CRM, and whether it replaces a value the CRM record already has."""

    value: str
    override: bool = False


class ExportOptions(Options):
    CRMOwnerId: Override | None = None
    promptLeadFieldsCRMMapping: dict[str, Override] = {}
    promptCompanyFieldsCRMMapping: dict[str, Override] = {}
    overwriteFields: dict[str, bool] = {}  # field -> false: not sent on updates
    associationType: str | None = None
    exportAssociatedObject: bool = False  # also export the records' companies (or contacts)


OPTIONS: dict[str, type[Options]] = {
    SCRAPE: ScrapeOptions,
    ENRICH_EMAIL: EnrichOptions,
    ENRICH_PHONE: EnrichOptions,
    VERIFY_EMAIL: Options,
    VERIFY_PHONE: Options,
    EXPORT: ExportOptions,
}
ACTION_TYPES = tuple(OPTIONS)


class OptionsError(ValueError):
    """What is wrong with one action; `field` is relative to the action ("type", "options")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def parse_options(kind: str, options: dict[str, Any] | None) -> Options:
    """The typed options of one action of type `kind`."""
    struct = OPTIONS.get(kind)
    if struct is None:
        raise OptionsError(
            "type", f"unknown action type {kind!r} (one of {', '.join(ACTION_TYPES)})"
        )
    given = options or {}
    unknown = sorted(set(given) - set(struct.__struct_fields__))
    if unknown:
        known = ", ".join(struct.__struct_fields__) or "none"
        raise OptionsError(
            "options", f"unknown option(s) for {kind}: {', '.join(unknown)} (known: {known})"
        )
    try:
        return msgspec.convert(given, struct)
    except msgspec.ValidationError as exc:
        raise OptionsError("options", f"{kind}: {exc}") from None
