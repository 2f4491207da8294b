-- The warehouse a team prepares before etl-craft runs: its schemas, the landing tables the
-- ingestion scripts write, the reference tables the seeds are loaded into, and the table the
-- rejected tickets are published to. etl-craft never creates schemas; the tables of the other
-- layers (dim, prs, cdc, stg, dm) are created by the SETUP_TABLE tasks of support_setup.
-- `etl-craft demo` runs this file once, against warehouse.duckdb, when it writes the project.

CREATE SCHEMA ref;  -- reference data as delivered (seeds/)
CREATE SCHEMA dim;  -- dimensions: SCD1 copies of the reference data
CREATE SCHEMA lnd;  -- landing: source records as the clients deliver them
CREATE SCHEMA prs;  -- persisted: every version of every ticket (SCD2)
CREATE SCHEMA cdc;  -- change capture: the versions opened by the latest run
CREATE SCHEMA stg;  -- staging: the latest state of each ticket, joined to the dimensions
CREATE SCHEMA dq;   -- data quality: tickets the business rules reject
CREATE SCHEMA dm;   -- the data mart: one fact table for every client

CREATE TABLE ref.agents (agent_id VARCHAR, agent_name VARCHAR, team VARCHAR, hired_on DATE);
CREATE TABLE ref.products (product_code VARCHAR, product_name VARCHAR, product_line VARCHAR);
CREATE TABLE ref.categories (category_code VARCHAR, category_name VARCHAR, support_area VARCHAR);

-- Each landing row keeps where it came from (source_file and the position in it) and which run,
-- task run and pipeline wrote it; a retry of the task run replaces its own rows.
CREATE TABLE lnd.alpha_documents (
    doc_id VARCHAR,
    customer_id VARCHAR,
    customer_tier VARCHAR,
    assignee VARCHAR,
    product VARCHAR,
    topic VARCHAR,
    channel VARCHAR,
    priority VARCHAR,
    state VARCHAR,
    opened_at TIMESTAMPTZ,
    resolved_at TIMESTAMPTZ,
    csat INTEGER,
    updated_at TIMESTAMPTZ,
    source_file VARCHAR,
    source_position INTEGER,
    PIPELINE_ID BIGINT,
    PIPELINE_RUN_ID BIGINT,
    TASK_RUN_ID BIGINT,
    LOADED_AT TIMESTAMPTZ
);

CREATE TABLE lnd.beta_events (
    event_offset BIGINT,
    event_id VARCHAR,
    event_type VARCHAR,
    emitted_at TIMESTAMPTZ,
    ticket_id BIGINT,
    customer VARCHAR,
    tier VARCHAR,
    agent VARCHAR,
    sku VARCHAR,
    category VARCHAR,
    channel VARCHAR,
    priority INTEGER,
    status VARCHAR,
    opened_at TIMESTAMPTZ,
    resolved_at TIMESTAMPTZ,
    rating INTEGER,
    source_file VARCHAR,
    source_position INTEGER,
    PIPELINE_ID BIGINT,
    PIPELINE_RUN_ID BIGINT,
    TASK_RUN_ID BIGINT,
    LOADED_AT TIMESTAMPTZ
);

CREATE TABLE lnd.gamma_rows (
    ticket_number VARCHAR,
    customer_ref VARCHAR,
    customer_tier VARCHAR,
    agent_code VARCHAR,
    product_sku VARCHAR,
    category VARCHAR,
    channel VARCHAR,
    priority_level VARCHAR,
    status VARCHAR,
    opened_local TIMESTAMPTZ,
    closed_local TIMESTAMPTZ,
    satisfaction INTEGER,
    last_modified_local TIMESTAMPTZ,
    source_file VARCHAR,
    source_position INTEGER,
    PIPELINE_ID BIGINT,
    PIPELINE_RUN_ID BIGINT,
    TASK_RUN_ID BIGINT,
    LOADED_AT TIMESTAMPTZ
);

-- The tickets each client's business rules reject, republished after every check so the fact
-- table's merge can leave them out.
CREATE TABLE dq.rejected_tickets (
    ticket_key VARCHAR,
    checked_table VARCHAR,
    rules VARCHAR,
    PIPELINE_ID BIGINT,
    PIPELINE_RUN_ID BIGINT,
    TASK_RUN_ID BIGINT,
    LOADED_AT TIMESTAMPTZ
);
