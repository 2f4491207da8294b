-- etl-craft ENGINE migration 0006 (SQLite): the cluster (S5.C). Attempts carry the pool they
-- wait in, their slot kind and their priority; workers register in AUD_WORKERS. Written only by
-- etl-craft (the pool providers and etl-craft worker).

ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN POOL TEXT;
ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN SLOT_KIND TEXT;
ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN PRIORITY INTEGER NOT NULL DEFAULT 0;
CREATE INDEX ix_attempt_pool_queue ON AUD_TASK_ATTEMPTS (POOL, SLOT_KIND, PRIORITY, QUEUED_AT) WHERE STATUS = 'QUEUED';
CREATE INDEX ix_attempt_owner ON AUD_TASK_ATTEMPTS (OWNER_ID) WHERE STATUS IN ('CLAIMED','RUNNING');

CREATE TABLE AUD_WORKERS (
    WORKER_ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    OWNER_ID TEXT NOT NULL,
    POOL TEXT NOT NULL,
    HOST TEXT NOT NULL,
    PID INTEGER NOT NULL,
    VERSION TEXT NOT NULL,
    INGESTION_SLOTS INTEGER NOT NULL,
    WAREHOUSE_SLOTS INTEGER NOT NULL,
    STARTED_AT TEXT NOT NULL,
    HEARTBEAT_AT TEXT NOT NULL,
    STATUS TEXT NOT NULL,
    STOPPED_AT TEXT,
    STATUS_REASON TEXT,
    UPDATED_AT TEXT NOT NULL,
    CONSTRAINT ck_aud_workers_status CHECK (STATUS IN ('ACTIVE', 'DRAINING', 'GONE'))
);
CREATE UNIQUE INDEX ux_workers_owner ON AUD_WORKERS (OWNER_ID);
CREATE INDEX ix_workers_live ON AUD_WORKERS (POOL, HEARTBEAT_AT) WHERE STATUS IN ('ACTIVE','DRAINING');

CREATE TRIGGER tr_aud_workers_guard_insert BEFORE INSERT ON AUD_WORKERS
BEGIN
    SELECT RAISE(ABORT, 'AUD_WORKERS is written only by etl-craft; start and stop workers with etl-craft worker') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_WORKERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_aud_workers_guard_update BEFORE UPDATE ON AUD_WORKERS
BEGIN
    SELECT RAISE(ABORT, 'AUD_WORKERS is written only by etl-craft; start and stop workers with etl-craft worker') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_WORKERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_aud_workers_guard_delete BEFORE DELETE ON AUD_WORKERS
BEGIN
    SELECT RAISE(ABORT, 'AUD_WORKERS is written only by etl-craft; start and stop workers with etl-craft worker') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_WORKERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
