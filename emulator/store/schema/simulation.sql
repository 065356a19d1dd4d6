-- Campaign simulation (emulator/simulation/): where each scheduled member's timeline starts.
-- A member's whole future is a pure function of (campaign sequence, rates, seed, contact,
-- anchorAt, firstStep); campaign_members.nextActionAt is the time of its next unprocessed item.
CREATE TABLE IF NOT EXISTS simulation_members (
    campaignId INTEGER NOT NULL,
    contactId INTEGER NOT NULL,
    anchorAt TEXT NOT NULL,              -- step `firstStep` runs at anchorAt + its delaySeconds
    firstStep INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (campaignId, contactId)
);
-- A stopped (paused) campaign: start shifts its members' timelines by the pause.
CREATE TABLE IF NOT EXISTS simulation_campaigns (
    campaignId INTEGER PRIMARY KEY,
    pausedAt TEXT
);
-- The engine reads the first N due members in this order (simulation/campaigns/engine.py).
CREATE INDEX IF NOT EXISTS campaign_members_next ON campaign_members(nextActionAt, campaignId, contactId)
    WHERE nextActionAt IS NOT NULL;
-- How many members of each campaign have a next item (nextActionAt set), so that
-- complete_finished asks one row, however many of its members are done. Kept by the one
-- writer of campaign_members (platform/engagement.py) in each write that sets or clears a
-- nextActionAt: an index on campaign_members(campaignId) WHERE nextActionAt IS NOT NULL
-- answered it before, at ~1 us a member's move (SQLite rewrites a partial index's entry
-- whenever an UPDATE sets a column of its WHERE). A campaign without a row (a database
-- written before the table) is counted afresh when asked.
CREATE TABLE IF NOT EXISTS simulation_moving (
    campaignId INTEGER PRIMARY KEY,
    members INTEGER NOT NULL
);
-- That index, gone from a `--db` file written before the count (its campaigns are counted
-- when asked, above).
DROP INDEX IF EXISTS campaign_members_busy;
-- TASK steps look their task up by this key (so does exporter.records.ensure_platform_tasks).
CREATE INDEX IF NOT EXISTS platform_tasks_step ON platform_tasks(contactId, campaignId, stepIndex);
