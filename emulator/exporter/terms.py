"""The words the export's pure decisions and its report share: record kinds and findings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["companies", "contacts"]
Severity = Literal["violation", "warning"]


@dataclass(frozen=True)
class Finding:
    """A contract violation or a tolerated deviation, named after the check it belongs to."""

    severity: Severity
    check: str
    message: str  # the kind of finding: the same text for every record it concerns
    about: str | None = None  # which record or value showed it
