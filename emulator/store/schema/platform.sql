-- Platform state behind /v1: what the public API reads and writes.
CREATE TABLE IF NOT EXISTS api_keys (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    scopes TEXT NOT NULL              -- JSON array of scope names
);
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT
);
CREATE TABLE IF NOT EXISTS identities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    firstName TEXT, lastName TEXT, jobTitle TEXT, email TEXT, networkUrl TEXT, timezone TEXT,
    companyName TEXT,
    createdAt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL,
    createdBy INTEGER NOT NULL REFERENCES users(id),
    crmOwnerId TEXT,
    senderIdentityId INTEGER NOT NULL REFERENCES identities(id),
    messageSync INTEGER NOT NULL DEFAULT 0,
    sequence TEXT NOT NULL DEFAULT '[]',      -- JSON list of SequenceStep
    outcomeRates TEXT NOT NULL DEFAULT '{}',  -- JSON OutcomeRates
    seed INTEGER NOT NULL DEFAULT 0,
    createdAt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS companies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    domain TEXT, website TEXT, companyNetworkUrl TEXT, industry TEXT, rangeOfEmployees TEXT,
    numberOfEmployees INTEGER, yearfounded TEXT, description TEXT, country TEXT, city TEXT,
    streetAddress TEXT, phoneNumber TEXT, companyEmail TEXT, revenueRange TEXT,
    hiringOnNetwork INTEGER, openJobPositions INTEGER,
    companyCRMId TEXT,
    smartFieldExplanations TEXT,              -- JSON object or NULL
    customFields TEXT NOT NULL DEFAULT '{}',  -- JSON object: synced-back and unknown properties
    domainKey TEXT,                           -- normalised domain, for merge and matching
    networkUrlKey TEXT,                       -- normalised companyNetworkUrl
    nameKey TEXT,                             -- lower-cased name
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL,
    -- The company as contacts embed it, kept by SQLite on every write (fast contact pages).
    ref TEXT GENERATED ALWAYS AS (json_object(
        'id', id, 'name', name, 'domain', domain, 'companyNetworkUrl', companyNetworkUrl
    )) STORED
);
CREATE INDEX IF NOT EXISTS companies_domain ON companies(domainKey);
CREATE INDEX IF NOT EXISTS companies_network ON companies(networkUrlKey);
CREATE INDEX IF NOT EXISTS companies_name ON companies(nameKey);
CREATE INDEX IF NOT EXISTS companies_updated ON companies(updatedAt);
-- company search (POST /v1/companies/search) conditions read through these; an industry
-- with a numberOfEmployees range is counted off the first alone, without reading a row
CREATE INDEX IF NOT EXISTS companies_industry_employees ON companies(industry, numberOfEmployees);
CREATE INDEX IF NOT EXISTS companies_employees ON companies(numberOfEmployees);
CREATE TABLE IF NOT EXISTS contacts (
    id INTEGER PRIMARY KEY,
    firstName TEXT, lastName TEXT, jobTitle TEXT, networkProfileUrl TEXT, professionalEmail TEXT,
    personalEmails TEXT, mobilePhone TEXT, phones TEXT, imageUrl TEXT,
    companyId INTEGER REFERENCES companies(id),
    emailVerificationStatus TEXT, contactCountry TEXT, networkHeadline TEXT,
    numberOfConnections INTEGER,
    contactCRMId TEXT, leadCRMId TEXT,
    smartFieldExplanations TEXT,
    customFields TEXT NOT NULL DEFAULT '{}',
    emailKey TEXT,                            -- lower-cased professionalEmail
    networkUrlKey TEXT,                       -- normalised networkProfileUrl
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL
    -- The contact as /v1 shows it is built on read (public_api/contacts.py): no generated
    -- column, which SQLite would compute on every insert and update of a contact.
);
CREATE INDEX IF NOT EXISTS contacts_company ON contacts(companyId);
CREATE INDEX IF NOT EXISTS contacts_email ON contacts(emailKey);
CREATE INDEX IF NOT EXISTS contacts_network ON contacts(networkUrlKey);
CREATE INDEX IF NOT EXISTS contacts_updated ON contacts(updatedAt);
CREATE TABLE IF NOT EXISTS campaign_members (
    campaignId INTEGER NOT NULL REFERENCES campaigns(id),
    contactId INTEGER NOT NULL REFERENCES contacts(id),
    stepIndex INTEGER NOT NULL DEFAULT 0,          -- next sequence step to run
    sequenceStatus TEXT NOT NULL DEFAULT 'Not Started',
    engagementStatus TEXT NOT NULL DEFAULT 'Added to Campaign',
    nextActionAt TEXT,
    opens INTEGER NOT NULL DEFAULT 0,
    clicks INTEGER NOT NULL DEFAULT 0,
    replies INTEGER NOT NULL DEFAULT 0,
    addedAt TEXT NOT NULL,
    PRIMARY KEY (campaignId, contactId)
);
CREATE INDEX IF NOT EXISTS campaign_members_contact ON campaign_members(contactId);
CREATE TABLE IF NOT EXISTS lists (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT,
    type TEXT NOT NULL,
    folderId INTEGER,
    createdBy INTEGER NOT NULL,
    createdAt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS list_members (
    listId INTEGER NOT NULL REFERENCES lists(id),
    entityId INTEGER NOT NULL,
    PRIMARY KEY (listId, entityId)
);
CREATE INDEX IF NOT EXISTS list_members_entity ON list_members(entityId);
CREATE TABLE IF NOT EXISTS saved_views (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    view TEXT NOT NULL,                       -- JSON array of column names
    createdBy INTEGER NOT NULL,
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    contactId INTEGER NOT NULL REFERENCES contacts(id),
    campaignId INTEGER NOT NULL REFERENCES campaigns(id),
    identityId INTEGER NOT NULL REFERENCES identities(id)
);
CREATE INDEX IF NOT EXISTS conversations_contact ON conversations(contactId, campaignId);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    conversationId INTEGER NOT NULL REFERENCES conversations(id),
    content TEXT, subject TEXT,
    type TEXT NOT NULL,
    isContactSender INTEGER NOT NULL DEFAULT 0,
    isAutosent INTEGER NOT NULL DEFAULT 0,
    isAudio INTEGER NOT NULL DEFAULT 0,
    url TEXT, attachment TEXT, attachmentName TEXT, contentType TEXT,
    sequenceIndex INTEGER,
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL,
    viewCount INTEGER NOT NULL DEFAULT 0,
    clickCount INTEGER NOT NULL DEFAULT 0,
    crmActivityId TEXT                        -- set once the activity is logged to the CRM
);
CREATE INDEX IF NOT EXISTS messages_conversation ON messages(conversationId);
CREATE TABLE IF NOT EXISTS webhooks (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    secret TEXT,
    events TEXT NOT NULL,                     -- JSON array
    campaignIds TEXT NOT NULL DEFAULT '[]',
    customFields TEXT NOT NULL DEFAULT '[]',
    enabled INTEGER NOT NULL DEFAULT 1,
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id INTEGER PRIMARY KEY,
    webhookId INTEGER NOT NULL,
    eventType TEXT NOT NULL,
    payload TEXT NOT NULL,
    statusCode INTEGER,
    errorMessage TEXT,
    attemptNumber INTEGER NOT NULL,
    durationMs INTEGER,
    createdAt TEXT NOT NULL,
    nextAttemptAt TEXT
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_hook ON webhook_deliveries(webhookId, id);
CREATE TABLE IF NOT EXISTS actions_runs (
    id INTEGER PRIMARY KEY,
    entity TEXT NOT NULL,
    actions TEXT NOT NULL,                    -- JSON array of {type}
    contactIds TEXT NOT NULL,                 -- JSON array
    webhookUrl TEXT,
    overallStatus TEXT NOT NULL,
    statusCounts TEXT NOT NULL,               -- JSON StatusCounts
    createdAt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    contactId INTEGER NOT NULL,
    campaignId INTEGER NOT NULL,
    messageId INTEGER,
    occurredAt TEXT NOT NULL,
    data TEXT NOT NULL DEFAULT '{}',
    crmActivityId TEXT
);
CREATE INDEX IF NOT EXISTS events_contact ON events(contactId);
CREATE TABLE IF NOT EXISTS platform_tasks (
    id INTEGER PRIMARY KEY,
    contactId INTEGER NOT NULL,
    campaignId INTEGER NOT NULL,
    stepIndex INTEGER NOT NULL,
    subject TEXT NOT NULL,
    type TEXT,
    dueDate TEXT,
    completed INTEGER NOT NULL DEFAULT 0,
    completedAt TEXT,
    crmTaskId TEXT,
    crmCompleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS crm_connection (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    settings TEXT NOT NULL,                   -- JSON CrmConnection
    lastHealth TEXT                           -- JSON {ok, status, checkedAt, message}
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
