-- The demo's five pipelines and the order they run in.
--
-- Every CFG_ row of the demo is written by a numbered migration like this one and applied with
-- `etl-craft migrate`, as a team would. Rows refer to each other by code, never by id, so the
-- files load into any Engine DB; a misspelt code joins to NULL and the NOT NULL columns refuse the
-- whole file. Applied files never change: a change goes into a new file.

INSERT INTO CFG_PIPELINES
    (PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, REFRESH_TYPE, RUN_SCHEDULE, SCHEDULE_TIMEZONE, SLA_IN_HOURS,
     PIPELINE_PARAMETERS)
VALUES
    ('support_setup', 'Support Insights: tables',
     'Creates the tables of every warehouse layer with SETUP_TABLE. Run it by hand once, and after a change of shape.',
     'FULL', NULL, NULL, NULL, '{"TAGS": ["support", "setup"]}'),
    ('support_reference', 'Support Insights: reference data',
     'Loads agents, products and ticket categories from seeds/ and merges them into the dimensions.',
     'FULL', '0 6 * * *', 'Europe/Paris', 1, '{"TAGS": ["support", "reference"]}'),
    ('client_alpha', 'Client Alpha tickets',
     'The CRM''s ticket documents (JSON exports) through landing, persisted, change capture and staging into the ticket fact.',
     'INCREMENTAL', '*/15 * * * *', 'Europe/Paris', 1, '{"TAGS": ["support", "client"]}'),
    ('client_beta', 'Client Beta tickets',
     'The chat platform''s ticket events (newline-delimited JSON) through the same layers into the ticket fact.',
     'INCREMENTAL', '5,35 * * * *', 'America/New_York', 1, '{"TAGS": ["support", "client"]}'),
    ('client_gamma', 'Client Gamma tickets',
     'The call centre''s gzipped CSV exports through the same layers into the ticket fact.',
     'INCREMENTAL', '0 * * * *', 'Asia/Singapore', 2, '{"TAGS": ["support", "client"]}');

-- The clients wait for the reference data: a client run starts only after a reference run it has
-- not consumed yet ended SUCCESS.
INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)
SELECT d.PIPELINE_ID, u.PIPELINE_ID, 'SUCCESS'
FROM (VALUES ('client_alpha'), ('client_beta'), ('client_gamma')) v
LEFT JOIN CFG_PIPELINES d ON d.PIPELINE_CODE = v.column1 AND d.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_PIPELINES u ON u.PIPELINE_CODE = 'support_reference' AND u.ACTIVE_FLAG = 'Y';
