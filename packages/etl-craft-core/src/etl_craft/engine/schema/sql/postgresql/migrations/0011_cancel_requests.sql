-- etl-craft ENGINE migration 0011 (PostgreSQL): cancellation across the cluster (S5.D). A cancel of a run
-- requests the stop of an attempt a remote worker holds (CANCEL_REQUESTED_AT); the worker stops its task
-- process at its next heartbeat and records the attempt CANCELLED with CANCEL_ACKNOWLEDGED_AT.

ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN CANCEL_REQUESTED_AT TIMESTAMPTZ;
ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN CANCEL_ACKNOWLEDGED_AT TIMESTAMPTZ;
