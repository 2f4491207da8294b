-- etl-craft ENGINE migration 0010 (PostgreSQL): slots, limits and priorities (S5.E). Named pools in
-- CFG_POOLS (metadata: a project migration writes them) with pool-wide slot counts by kind; each
-- pipeline's PRIORITY (the queue's order) and MAX_PARALLEL_TASKS (the most attempts of one run
-- claimed or running at once). Claims honour them in their one statement (transitions/queue.py).

ALTER TABLE CFG_PIPELINES ADD COLUMN PRIORITY INT NOT NULL DEFAULT 0;
ALTER TABLE CFG_PIPELINES ADD COLUMN MAX_PARALLEL_TASKS INT;

CREATE TABLE CFG_POOLS (
    POOL_ID BIGINT GENERATED ALWAYS AS IDENTITY NOT NULL,
    POOL_NAME VARCHAR NOT NULL,
    DESCRIPTION VARCHAR,
    INGESTION_SLOTS INT,
    WAREHOUSE_SLOTS INT,
    ACTIVE_FLAG VARCHAR NOT NULL DEFAULT 'Y',
    CREATED_BY VARCHAR,
    CREATE_DATE TIMESTAMPTZ,
    UPDATED_BY VARCHAR,
    UPDATED_DATE TIMESTAMPTZ,
    CONSTRAINT pk_cfg_pools PRIMARY KEY (POOL_ID),
    CONSTRAINT ck_cfg_pools_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N')),
    CONSTRAINT ck_pools_slots CHECK (COALESCE(INGESTION_SLOTS, 0) >= 0 AND COALESCE(WAREHOUSE_SLOTS, 0) >= 0)
);
CREATE UNIQUE INDEX ux_pools_name_active ON CFG_POOLS (POOL_NAME) WHERE ACTIVE_FLAG = 'Y';

-- CFG_POOLS joins the metadata tables a project migration may write.
CREATE OR REPLACE FUNCTION etl_craft_guard() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    -- Only connections that carry an etl-craft actor may write; see docs/engine-db.md.
    IF coalesce(current_setting('etl_craft.actor', true), '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%s is written only by etl-craft; %s', upper(TG_TABLE_NAME), TG_ARGV[0]);
    END IF;
    -- A project migration's own statements (depth 1) write metadata only; the rows the metadata
    -- triggers record on their behalf (depth 2) are etl-craft's.
    IF current_setting('etl_craft.purpose', true) = 'project-sql' AND pg_trigger_depth() = 1
            AND upper(TG_TABLE_NAME) NOT IN ('CFG_PIPELINES', 'CFG_PIPELINE_DEPENDENCY', 'CFG_TASKS', 'CFG_TASK_DEPENDENCY', 'CFG_TASK_PARAMETERS', 'CFG_BUSINESS_RULES', 'CFG_POOLS') THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%s is written only by etl-craft: a project migration writes only the metadata'
                             ' tables (CFG_PIPELINES, CFG_TASKS, ...)', upper(TG_TABLE_NAME));
    END IF;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER tr_cfg_pools_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON CFG_POOLS FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_guard('change metadata with a project migration (etl-craft migrate) or etl-craft config apply');
CREATE TRIGGER tr_cfg_pools_stamp BEFORE INSERT OR UPDATE ON CFG_POOLS FOR EACH ROW EXECUTE FUNCTION etl_craft_stamp();
CREATE TRIGGER tr_cfg_pools_record_change AFTER INSERT OR UPDATE OR DELETE ON CFG_POOLS FOR EACH ROW EXECUTE FUNCTION etl_craft_record_change('POOL_ID');
