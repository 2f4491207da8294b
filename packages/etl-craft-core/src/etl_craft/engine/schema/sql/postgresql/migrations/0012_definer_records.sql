-- etl-craft ENGINE migration 0012 (PostgreSQL): the project login writes no history of its own.
-- The metadata triggers record AUD_METADATA_CHANGES rows with their owner's rights, and a project
-- file is recorded in SCHEMA_MIGRATIONS through etl_craft_record_project_migration, so the login a
-- project migration runs on needs no INSERT on either table (docs/guides/security.md).
-- The search_path of both functions is fixed to pg_catalog, the Engine DB's schema, then pg_temp
-- (last, so no temporary table or function can stand in for one of etl-craft's); the schema is
-- current_schema(), where the tables are, whatever the Engine DB's schema is called.

CREATE FUNCTION etl_craft_record_project_migration(migration_version text, migration_checksum text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $fn$
BEGIN
    -- One file per transaction: a row the file's own SQL recorded makes the runner's call fail.
    IF EXISTS (SELECT 1 FROM schema_migrations WHERE source = 'PROJECT' AND applied_at = now()) THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('SCHEMA_MIGRATIONS already records a project migration in this transaction;'
                             ' %s is not recorded (a project migration records only its own file)',
                             migration_version);
    END IF;
    INSERT INTO schema_migrations (source, version, checksum, applied_at)
    VALUES ('PROJECT', migration_version, migration_checksum, now());
END
$fn$;
REVOKE ALL ON FUNCTION etl_craft_record_project_migration(text, text) FROM PUBLIC;

DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION %I.etl_craft_record_change() SECURITY DEFINER'
                   ' SET search_path = pg_catalog, %I, pg_temp', current_schema(), current_schema());
    EXECUTE format('ALTER FUNCTION %I.etl_craft_record_project_migration(text, text)'
                   ' SET search_path = pg_catalog, %I, pg_temp', current_schema(), current_schema());
END
$do$;
