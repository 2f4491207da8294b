-- Project migrations write metadata only: the guards refuse their writes to etl-craft's own tables,
-- and (where a superuser migrates) an event trigger refuses their DDL.

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
            AND upper(TG_TABLE_NAME) NOT IN ('CFG_PIPELINES', 'CFG_PIPELINE_DEPENDENCY', 'CFG_TASKS', 'CFG_TASK_DEPENDENCY', 'CFG_TASK_PARAMETERS', 'CFG_BUSINESS_RULES') THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%s is written only by etl-craft: a project migration writes only the metadata'
                             ' tables (CFG_PIPELINES, CFG_TASKS, ...)', upper(TG_TABLE_NAME));
    END IF;
    RETURN NULL;
END
$fn$;

CREATE FUNCTION etl_craft_ddl_guard() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('etl_craft.purpose', true) = 'project-sql' THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%s refused: a project migration writes rows of the metadata tables only',
                             tg_tag);
    END IF;
END
$fn$;

DO $do$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('CREATE EVENT TRIGGER %I ON ddl_command_start EXECUTE FUNCTION %I.etl_craft_ddl_guard()',
                       'etl_craft_ddl_guard_' || current_schema(), current_schema());
    END IF;
END
$do$;
