"""Incoming calls to /v1 and /crm: their journal, the /v1 faults, and the middleware between."""
