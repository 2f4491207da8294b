-- etl-craft ENGINE migration 0004 (PostgreSQL): CFG_API_TOKENS gets the developer role (S7.B) and
-- LAST_USED_AT, the last time the HTTP API accepted the token.

ALTER TABLE CFG_API_TOKENS DROP CONSTRAINT ck_cfg_api_tokens_role;
ALTER TABLE CFG_API_TOKENS ADD CONSTRAINT ck_cfg_api_tokens_role CHECK (ROLE IN ('viewer', 'operator', 'developer', 'admin'));
ALTER TABLE CFG_API_TOKENS ADD COLUMN LAST_USED_AT TIMESTAMP;
