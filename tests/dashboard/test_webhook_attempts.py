"""The headers a webhook attempt is shown with: those every delivery carries, secret redacted."""

from __future__ import annotations

from emulator.dashboard.webhook_attempts import shown_headers
from emulator.simulation.webhooks.delivery import Subscription


def subscription(secret: str | None) -> Subscription:
    return Subscription(
        id=1,
        url="http://127.0.0.1:9/",
        secret=secret,
        events=["MESSAGE_REPLIED"],
        campaignIds=[],
        customFields=[],
        enabled=True,
    )


def test_the_secret_header_is_shown_redacted() -> None:
    assert shown_headers(subscription("whsec-abc-123")) == {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-Webhook-Secret": "***",
    }


def test_without_a_secret_there_is_no_secret_header() -> None:
    assert shown_headers(subscription(None)) == {
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
