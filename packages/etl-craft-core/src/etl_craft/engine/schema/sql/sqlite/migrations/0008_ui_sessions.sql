-- etl-craft ENGINE migration 0008 (SQLite): AUD_UI_SESSIONS, the web UI's sign-in sessions: the SHA-256
-- of the cookie's value, the user, the client address, and when the session expires or ended.

CREATE TABLE AUD_UI_SESSIONS (
    SESSION_ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    SESSION_SHA256 TEXT NOT NULL,
    USER_ID INTEGER NOT NULL,
    ADDRESS TEXT NOT NULL,
    CREATED_AT TEXT NOT NULL,
    EXPIRES_AT TEXT NOT NULL,
    LAST_SEEN_AT TEXT NOT NULL,
    ENDED_AT TEXT,
    CONSTRAINT fk_aud_ui_sessions_user_id FOREIGN KEY (USER_ID) REFERENCES CFG_USERS (USER_ID)
);
CREATE UNIQUE INDEX ux_ui_sessions_sha256 ON AUD_UI_SESSIONS (SESSION_SHA256);
CREATE INDEX ix_ui_sessions_user ON AUD_UI_SESSIONS (USER_ID);

CREATE TRIGGER tr_aud_ui_sessions_guard_insert BEFORE INSERT ON AUD_UI_SESSIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_UI_SESSIONS is written only by etl-craft; sign in and out through the web UI (etl-craft server)') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_UI_SESSIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_aud_ui_sessions_guard_update BEFORE UPDATE ON AUD_UI_SESSIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_UI_SESSIONS is written only by etl-craft; sign in and out through the web UI (etl-craft server)') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_UI_SESSIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_aud_ui_sessions_guard_delete BEFORE DELETE ON AUD_UI_SESSIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_UI_SESSIONS is written only by etl-craft; sign in and out through the web UI (etl-craft server)') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_UI_SESSIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
