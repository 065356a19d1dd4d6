"""Webhook subscriptions' deliveries on the virtual clock: events become queued attempts
(events), the delivery queue and its retries (queue, which also carries actions runs'
completion callbacks), one attempt's payload, headers and log (delivery), the HTTP side
(sender) and the per-subscription counts the dashboard shows (status)."""
