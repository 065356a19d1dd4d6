-- The exporter's own tables: its journal of CRM exchanges and sync-back bookkeeping.
CREATE TABLE IF NOT EXISTS export_journal (
    id INTEGER PRIMARY KEY,
    exportId TEXT NOT NULL,
    at TEXT NOT NULL,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    status INTEGER,                           -- NULL: no answer (refused, dropped, timed out)
    durationMs REAL NOT NULL,
    attempt INTEGER NOT NULL,                 -- 1 for the first try, 2.. for retries
    requestBody TEXT,                         -- capped, API key redacted
    responseBody TEXT,                        -- capped, API key redacted
    error TEXT
);
CREATE INDEX IF NOT EXISTS export_journal_path ON export_journal(path);
-- The journal's size in bytes as its byte cap counts them (exporter/journal.py ROW_BYTES), kept
-- by the journal's writes; a file from before it was kept is counted once, on open.
CREATE TABLE IF NOT EXISTS export_journal_size (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    bytes INTEGER NOT NULL
);
INSERT OR IGNORE INTO export_journal_size(id, bytes)
SELECT 1, (SELECT coalesce(sum(
    length(CAST(coalesce(requestBody, '') AS BLOB)) + length(CAST(coalesce(responseBody, '') AS BLOB))
    + length(CAST(coalesce(error, '') AS BLOB)) + length(CAST(path AS BLOB))
    + length(CAST(exportId AS BLOB)) + 64), 0) FROM export_journal)
WHERE NOT EXISTS (SELECT 1 FROM export_journal_size);
-- Custom property names a CRM synced onto a platform record: syncable (clearable) from then on.
CREATE TABLE IF NOT EXISTS export_synced_properties (
    kind TEXT NOT NULL,                       -- companies | contacts
    recordId INTEGER NOT NULL,
    names TEXT NOT NULL,                      -- JSON array
    PRIMARY KEY (kind, recordId)
);
-- Platform tasks whose CRM task the CRM no longer knows (task read-back found it missing):
-- reported once, then neither read back nor completed again.
CREATE TABLE IF NOT EXISTS export_tasks_gone (
    taskId INTEGER PRIMARY KEY,
    crmTaskId TEXT NOT NULL,
    at TEXT NOT NULL
);
-- POSTs that log an activity or create a task, between the intent to send (committed before
-- the call) and the answer (its CRM id stored, the row deleted in the same write). Rows left
-- here were in flight when a run stopped: the next run that sends one names it as possibly
-- duplicated.
CREATE TABLE IF NOT EXISTS export_intents (
    kind TEXT NOT NULL,                       -- activity | task
    recordId INTEGER NOT NULL,                -- message id | platform task id
    exportId TEXT NOT NULL,
    at TEXT NOT NULL,                         -- wall clock (UTC) of the intent
    PRIMARY KEY (kind, recordId)
);
