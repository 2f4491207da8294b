-- etl-craft ENGINE migration 0002 (SQLite): AUD_ALERT_DELIVERIES, one row per alert channel delivery.
-- Append-only: the guard triggers refuse connections without an etl-craft actor, and rows never change.

CREATE TABLE AUD_ALERT_DELIVERIES (
    ALERT_DELIVERY_ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    PIPELINE_RUN_ID INTEGER NOT NULL,
    ATTEMPT_ID INTEGER,
    CHANNEL TEXT NOT NULL,
    EVENT TEXT NOT NULL,
    STATUS TEXT NOT NULL,
    TRIES INTEGER NOT NULL,
    HTTP_STATUS INTEGER,
    ERROR_MESSAGE TEXT,
    DELIVERED_AT TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'),
    CONSTRAINT ck_aud_alert_deliveries_event CHECK (EVENT IN ('run_failed', 'sla_breached', 'attempt_lost', 'gate_waiting')),
    CONSTRAINT ck_aud_alert_deliveries_status CHECK (STATUS IN ('DELIVERED', 'FAILED')),
    CONSTRAINT ck_alert_delivery_tries CHECK (TRIES >= 1),
    CONSTRAINT fk_aud_alert_deliveries_pipeline_run_id FOREIGN KEY (PIPELINE_RUN_ID) REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    CONSTRAINT fk_aud_alert_deliveries_attempt_id FOREIGN KEY (ATTEMPT_ID) REFERENCES AUD_TASK_ATTEMPTS (ATTEMPT_ID)
);
CREATE INDEX ix_alert_deliveries_run ON AUD_ALERT_DELIVERIES (PIPELINE_RUN_ID, EVENT);

CREATE TRIGGER tr_aud_alert_deliveries_guard_insert BEFORE INSERT ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft; alert deliveries are recorded by etl-craft itself') WHERE etl_craft_actor() IS NULL;
END;
CREATE TRIGGER tr_aud_alert_deliveries_guard_update BEFORE UPDATE ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft; alert deliveries are recorded by etl-craft itself') WHERE etl_craft_actor() IS NULL;
END;
CREATE TRIGGER tr_aud_alert_deliveries_guard_delete BEFORE DELETE ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft; alert deliveries are recorded by etl-craft itself') WHERE etl_craft_actor() IS NULL;
END;
CREATE TRIGGER tr_aud_alert_deliveries_immutable_update BEFORE UPDATE ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is append-only: its rows are never changed or removed (UPDATE refused)') WHERE etl_craft_actor() IS NOT NULL AND etl_craft_purpose() IS NOT 'retention';
END;
CREATE TRIGGER tr_aud_alert_deliveries_immutable_delete BEFORE DELETE ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is append-only: its rows are never changed or removed (DELETE refused)') WHERE etl_craft_actor() IS NOT NULL AND etl_craft_purpose() IS NOT 'retention';
END;
