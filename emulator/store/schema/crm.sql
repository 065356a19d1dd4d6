-- The reference CRM behind /crm: what a customer's CRM server would hold.
-- Records keep the JSON of every field they were sent (unknown ones included), plus
-- normalised match keys in indexed columns so a batch sync is a few indexed lookups.
CREATE TABLE IF NOT EXISTS crm_settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    settings TEXT NOT NULL                    -- JSON CrmSettings
);
CREATE TABLE IF NOT EXISTS crm_counters (
    kind TEXT PRIMARY KEY,                    -- id prefix: crm-co-, crm-ct-, crm-act-, crm-task-
    next INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS crm_users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT
);
CREATE TABLE IF NOT EXISTS crm_companies (
    crmId TEXT PRIMARY KEY,
    externalId TEXT,
    record TEXT NOT NULL,                     -- JSON object: every field stored
    domainKey TEXT,                           -- normalise.domain_key(domain or website)
    networkUrlKey TEXT,                       -- normalise.url_key(companyNetworkUrl)
    nameKey TEXT,                             -- normalise.name_key(name)
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS crm_companies_domain ON crm_companies(domainKey);
CREATE INDEX IF NOT EXISTS crm_companies_network ON crm_companies(networkUrlKey);
CREATE INDEX IF NOT EXISTS crm_companies_name ON crm_companies(nameKey);
CREATE INDEX IF NOT EXISTS crm_companies_external ON crm_companies(externalId);
CREATE TABLE IF NOT EXISTS crm_contacts (
    crmId TEXT PRIMARY KEY,
    externalId TEXT,
    record TEXT NOT NULL,
    emailKey TEXT,                            -- normalise.email_key(email)
    networkUrlKey TEXT,                       -- normalise.url_key(networkUrl)
    phoneKey TEXT,                            -- normalise.phone_key(phone or mobilePhone)
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS crm_contacts_email ON crm_contacts(emailKey);
CREATE INDEX IF NOT EXISTS crm_contacts_network ON crm_contacts(networkUrlKey);
CREATE INDEX IF NOT EXISTS crm_contacts_phone ON crm_contacts(phoneKey);
CREATE INDEX IF NOT EXISTS crm_contacts_external ON crm_contacts(externalId);
CREATE TABLE IF NOT EXISTS crm_associations (
    contactCRMId TEXT NOT NULL,
    companyCRMId TEXT NOT NULL,
    createdAt TEXT NOT NULL,
    PRIMARY KEY (contactCRMId, companyCRMId)
);
CREATE INDEX IF NOT EXISTS crm_associations_company ON crm_associations(companyCRMId);
CREATE TABLE IF NOT EXISTS crm_activities (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL,                     -- JSON object: every field sent
    createdAt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS crm_tasks (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL,                     -- JSON object: every field sent but the state
    completed INTEGER NOT NULL DEFAULT 0,
    completedAt TEXT,                         -- set iff completed
    createdAt TEXT NOT NULL,
    updatedAt TEXT NOT NULL
);
