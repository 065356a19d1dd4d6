"""The one error the platform raises: a value its caller must answer as a bad field."""

from __future__ import annotations


class InvalidField(ValueError):
    """A request names something the platform's state cannot take (the field and why)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
