"""The platform's state (moto's `models` role): the one writer of contacts, companies, platform
tasks, campaign engagement values and the CRM connection.

Every function takes a `sqlite3.Connection` and runs inside a `Store.write(fn)` hop; nothing here
sees a request or does I/O beyond the database. tests/platform/test_sole_writer.py keeps it so.
"""
