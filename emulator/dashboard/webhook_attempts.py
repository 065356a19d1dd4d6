"""What each webhook delivery attempt sent: its payload as stored and the headers it went with.

The payload of every attempt is kept with it (webhook_deliveries.payload). The headers are
the ones every delivery carries (emulator/simulation/webhooks/delivery.py `delivery_headers`),
with the subscription's secret written `***`: a page never shows a secret.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.redaction import REDACTED, Redactor
from emulator.simulation.webhooks.delivery import Subscription, delivery_headers
from emulator.store.db import Store


@dataclass(frozen=True)
class Sent:
    payload: str
    headers: dict[str, str]


def shown_headers(sub: Subscription) -> dict[str, str]:
    """The headers of a delivery to `sub`, its secret redacted."""
    headers = delivery_headers(sub)
    return {
        name: REDACTED if sub.secret and value == sub.secret else value
        for name, value in headers.items()
    }


async def sent_by_attempt(
    store: Store, sub: Subscription, attempt_ids: list[int]
) -> dict[int, Sent]:
    """{attempt id: what it sent} for the attempts of one subscription shown on a page."""
    if not attempt_ids:
        return {}
    marks = ", ".join("?" * len(attempt_ids))  # a page's worth: 50 at most
    rows = await store.fetchall(
        f"SELECT id, payload FROM webhook_deliveries WHERE webhookId = ? AND id IN ({marks})",
        (sub.id, *attempt_ids),
    )
    redact, headers = Redactor([sub.secret]), shown_headers(sub)
    return {row[0]: Sent(redact.text(row[1]), headers) for row in rows}
