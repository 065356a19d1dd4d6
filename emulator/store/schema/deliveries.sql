-- Deliveries on the virtual clock (emulator/simulation/webhooks/queue.py): webhook events and
-- actions-run completions waiting for their due time, and the actions runs that progress.

-- One attempt still to make. The key is the processing order (and so the order of log ids):
-- due time, then kind (0 webhook event, 1 actions-run completion), then event id / run id,
-- then webhook id / contact position in the run.
CREATE TABLE IF NOT EXISTS delivery_queue (
    dueAt TEXT NOT NULL,
    kind INTEGER NOT NULL,
    sourceId INTEGER NOT NULL,
    targetId INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    eventType TEXT NOT NULL,
    url TEXT,                                 -- kind 1; kind 0 posts to the subscription's url
    payload TEXT NOT NULL,
    PRIMARY KEY (dueAt, kind, sourceId, targetId)
) WITHOUT ROWID;

-- Actions runs started through POST /v1/actions: they progress from startAt on the clock.
-- contactsDone = contacts whose actions ended and whose completion delivery is queued.
CREATE TABLE IF NOT EXISTS actions_schedule (
    runId INTEGER PRIMARY KEY,
    startAt TEXT NOT NULL,
    contactsDone INTEGER NOT NULL DEFAULT 0
);

-- Every attempt of an actions-run completion delivery (the webhook_deliveries of runs).
CREATE TABLE IF NOT EXISTS actions_deliveries (
    id INTEGER PRIMARY KEY,
    runId INTEGER NOT NULL,
    contactId INTEGER NOT NULL,
    url TEXT NOT NULL,
    payload TEXT NOT NULL,
    statusCode INTEGER,
    errorMessage TEXT,
    attemptNumber INTEGER NOT NULL,
    durationMs INTEGER,
    createdAt TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS actions_deliveries_run ON actions_deliveries(runId, id);

-- The outcome of each record's EXPORT_TO_CRM in an actions run (simulation/actions/export.py),
-- exported through the exporter under the journal's exportId `exportId`.
CREATE TABLE IF NOT EXISTS actions_exports (
    runId INTEGER NOT NULL,
    recordIndex INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    exportId TEXT NOT NULL,
    PRIMARY KEY (runId, recordIndex)
);
