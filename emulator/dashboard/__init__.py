"""The dashboard: server-rendered HTML pages over the same services as /v1 and /_emulator."""
