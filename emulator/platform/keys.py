"""The match keys derived from a record's columns (decisions.md §2), kept by every write."""

from __future__ import annotations

from typing import Any

from emulator.normalise import domain_key, email_key, name_key, url_key


def contact_keys(values: dict[str, Any]) -> dict[str, str | None]:
    """The key columns of the contact columns in `values` (only those it holds)."""
    out: dict[str, str | None] = {}
    if "professionalEmail" in values:
        out["emailKey"] = email_key(values["professionalEmail"])
    if "networkProfileUrl" in values:
        out["networkUrlKey"] = url_key(values["networkProfileUrl"])
    return out


def company_keys(values: dict[str, Any]) -> dict[str, str | None]:
    """The key columns of a company row; `values` holds the whole row's key sources."""
    return {
        "domainKey": domain_key(values.get("domain") or values.get("website")),
        "networkUrlKey": url_key(values.get("companyNetworkUrl")),
        "nameKey": name_key(values.get("name")),
    }


def with_keys(kind: str, columns: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """Core column changes of an exported record plus the match keys derived from them."""
    if kind == "contacts":
        return {**columns, **contact_keys(columns)}
    if kind == "companies" and "domain" in columns:
        return {**columns, "domainKey": domain_key(columns["domain"] or row.get("website"))}
    return columns
