-- etl-craft ENGINE migration 0008 (PostgreSQL): AUD_UI_SESSIONS, the web UI's sign-in sessions: the SHA-256
-- of the cookie's value, the user, the client address, and when the session expires or ended.

CREATE TABLE AUD_UI_SESSIONS (
    SESSION_ID BIGSERIAL NOT NULL,
    SESSION_SHA256 VARCHAR(64) NOT NULL,
    USER_ID BIGINT NOT NULL,
    ADDRESS VARCHAR(64) NOT NULL,
    CREATED_AT TIMESTAMP NOT NULL,
    EXPIRES_AT TIMESTAMP NOT NULL,
    LAST_SEEN_AT TIMESTAMP NOT NULL,
    ENDED_AT TIMESTAMP,
    CONSTRAINT pk_aud_ui_sessions PRIMARY KEY (SESSION_ID),
    CONSTRAINT fk_aud_ui_sessions_user_id FOREIGN KEY (USER_ID) REFERENCES CFG_USERS (USER_ID)
);
CREATE UNIQUE INDEX ux_ui_sessions_sha256 ON AUD_UI_SESSIONS (SESSION_SHA256);
CREATE INDEX ix_ui_sessions_user ON AUD_UI_SESSIONS (USER_ID);

CREATE TRIGGER tr_aud_ui_sessions_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON AUD_UI_SESSIONS FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_guard('sign in and out through the web UI (etl-craft server)');
