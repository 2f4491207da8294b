-- etl-craft ENGINE migration 0002 (PostgreSQL): AUD_ALERT_DELIVERIES, one row per alert channel delivery.
-- Append-only: the guard trigger refuses connections without an etl-craft actor, and rows never change.

CREATE TABLE AUD_ALERT_DELIVERIES (
    ALERT_DELIVERY_ID BIGINT GENERATED ALWAYS AS IDENTITY NOT NULL,
    PIPELINE_RUN_ID BIGINT NOT NULL,
    ATTEMPT_ID BIGINT,
    CHANNEL VARCHAR NOT NULL,
    EVENT VARCHAR NOT NULL,
    STATUS VARCHAR NOT NULL,
    TRIES INT NOT NULL,
    HTTP_STATUS INT,
    ERROR_MESSAGE VARCHAR,
    DELIVERED_AT TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT pk_aud_alert_deliveries PRIMARY KEY (ALERT_DELIVERY_ID),
    CONSTRAINT ck_aud_alert_deliveries_event CHECK (EVENT IN ('run_failed', 'sla_breached', 'attempt_lost', 'gate_waiting')),
    CONSTRAINT ck_aud_alert_deliveries_status CHECK (STATUS IN ('DELIVERED', 'FAILED')),
    CONSTRAINT ck_alert_delivery_tries CHECK (TRIES >= 1),
    CONSTRAINT fk_aud_alert_deliveries_pipeline_run_id FOREIGN KEY (PIPELINE_RUN_ID) REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    CONSTRAINT fk_aud_alert_deliveries_attempt_id FOREIGN KEY (ATTEMPT_ID) REFERENCES AUD_TASK_ATTEMPTS (ATTEMPT_ID)
);
CREATE INDEX ix_alert_deliveries_run ON AUD_ALERT_DELIVERIES (PIPELINE_RUN_ID, EVENT);

CREATE TRIGGER tr_aud_alert_deliveries_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON AUD_ALERT_DELIVERIES FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_guard('alert deliveries are recorded by etl-craft itself');
CREATE TRIGGER tr_aud_alert_deliveries_immutable BEFORE UPDATE OR DELETE ON AUD_ALERT_DELIVERIES FOR EACH ROW EXECUTE FUNCTION etl_craft_append_only();
CREATE TRIGGER tr_aud_alert_deliveries_immutable_truncate BEFORE TRUNCATE ON AUD_ALERT_DELIVERIES FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_append_only();
