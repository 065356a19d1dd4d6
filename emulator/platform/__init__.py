"""The platform's state (moto's `models` role): the one writer of contacts, companies, platform
tasks, campaign engagement values, the CRM connection, lists, webhook subscriptions, actions
runs and the seeded accounts (one module per table: /v1, the simulation and seeding call it).

Every function takes a `sqlite3.Connection` and runs inside a `Store.write(fn)` hop; nothing here
sees a request or does I/O beyond the database. tests/platform/test_sole_writer.py keeps it so.
"""
