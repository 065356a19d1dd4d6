-- CRM auto-sync: the records whose events are not fully pushed to the CRM yet.
-- A row stays until a push sent everything of it; records not in the CRM yet (no CRM id)
-- wait here until they are, so no event is lost. Cursor and push count live in `meta`.
CREATE TABLE IF NOT EXISTS autosync_pending (
    kind TEXT NOT NULL,                       -- contacts | companies
    id INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
