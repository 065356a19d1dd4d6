"""The one URL rule that keeps the emulator from driving itself: no outgoing call (webhook
delivery, actions-run delivery, CRM call) may target an emulator's control API (/_emulator).

A webhook aimed at /_emulator/webhooks/deliveries/1/redeliver redelivers itself for ever;
one aimed at /_emulator/reset resets state mid-advance. Any host is refused, not only this
one: the emulator cannot know every name and address it is reached by.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote, urlsplit

CONTROL_PREFIX = "/_emulator"
REASON = (
    "points at an emulator's control API (/_emulator): calls there would drive the emulator "
    "itself (a delivery loop)"
)


def control_api_target(url: str) -> str | None:
    """REASON when `url` (absolute, or a path of this emulator) reaches /_emulator, else None."""
    text = url.strip()
    if text.startswith("/"):  # a path of this emulator ("//_emulator" too: not a host here)
        path = text.split("?", 1)[0].split("#", 1)[0]
    else:
        try:
            path = urlsplit(text).path
        except ValueError:
            return None  # not a URL at all: the caller's own validation says so
    path = unquote(path)
    while "//" in path:  # //_emulator, /x//../_emulator
        path = path.replace("//", "/")
    normal = posixpath.normpath("/" + path.lstrip("/")).lower()
    if normal == CONTROL_PREFIX or normal.startswith(CONTROL_PREFIX + "/"):
        return REASON
    return None
