-- etl-craft ENGINE migration 0004 (SQLite): CFG_API_TOKENS gets the developer role (S7.B) and
-- LAST_USED_AT, the last time the HTTP API accepted the token. SQLite can't change a CHECK
-- constraint in place, so the table is rebuilt (its rows copied) with its index and guards.

CREATE TABLE CFG_API_TOKENS_0004 (
    TOKEN_ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    NAME TEXT NOT NULL,
    TOKEN_SHA256 TEXT NOT NULL,
    ROLE TEXT NOT NULL,
    PROJECT_ID INTEGER,
    CREATED_BY TEXT NOT NULL,
    CREATED_AT TEXT NOT NULL,
    EXPIRES_AT TEXT,
    REVOKED_AT TEXT,
    LAST_USED_AT TEXT,
    CONSTRAINT ck_cfg_api_tokens_role CHECK (ROLE IN ('viewer', 'operator', 'developer', 'admin'))
);
INSERT INTO CFG_API_TOKENS_0004 (TOKEN_ID, NAME, TOKEN_SHA256, ROLE, PROJECT_ID, CREATED_BY, CREATED_AT, EXPIRES_AT, REVOKED_AT)
SELECT TOKEN_ID, NAME, TOKEN_SHA256, ROLE, PROJECT_ID, CREATED_BY, CREATED_AT, EXPIRES_AT, REVOKED_AT FROM CFG_API_TOKENS;
DROP TABLE CFG_API_TOKENS;
ALTER TABLE CFG_API_TOKENS_0004 RENAME TO CFG_API_TOKENS;
CREATE UNIQUE INDEX ux_api_tokens_sha256 ON CFG_API_TOKENS (TOKEN_SHA256);
CREATE TRIGGER tr_cfg_api_tokens_guard_insert BEFORE INSERT ON CFG_API_TOKENS
BEGIN
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft; manage API tokens with etl-craft token') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_cfg_api_tokens_guard_update BEFORE UPDATE ON CFG_API_TOKENS
BEGIN
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft; manage API tokens with etl-craft token') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_cfg_api_tokens_guard_delete BEFORE DELETE ON CFG_API_TOKENS
BEGIN
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft; manage API tokens with etl-craft token') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
