-- etl-craft ENGINE migration 0011 (SQLite): cancellation across the cluster (S5.D). The columns exist on
-- SQLite too, so one schema serves both; only the queue pool (PostgreSQL) ever sets them.

ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN CANCEL_REQUESTED_AT TEXT;
ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN CANCEL_ACKNOWLEDGED_AT TEXT;
