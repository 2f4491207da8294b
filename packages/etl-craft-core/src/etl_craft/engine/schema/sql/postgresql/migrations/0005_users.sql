-- etl-craft ENGINE migration 0005 (PostgreSQL): CFG_USERS, the people who use the HTTP API (S7.B): a scrypt
-- password hash, a role, and when the account was disabled. Written only by etl-craft user.

CREATE TABLE CFG_USERS (
    USER_ID BIGSERIAL NOT NULL,
    USER_NAME VARCHAR(128) NOT NULL,
    PASSWORD_HASH VARCHAR(512) NOT NULL,
    ROLE VARCHAR(16) NOT NULL,
    PROJECT_ID BIGINT,
    CREATED_BY VARCHAR(128) NOT NULL,
    CREATED_AT TIMESTAMP NOT NULL,
    PASSWORD_CHANGED_AT TIMESTAMP NOT NULL,
    DISABLED_AT TIMESTAMP,
    LAST_LOGIN_AT TIMESTAMP,
    CONSTRAINT pk_cfg_users PRIMARY KEY (USER_ID),
    CONSTRAINT ck_cfg_users_role CHECK (ROLE IN ('viewer', 'operator', 'developer', 'admin'))
);
CREATE UNIQUE INDEX ux_users_name ON CFG_USERS (USER_NAME);

CREATE TRIGGER tr_cfg_users_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON CFG_USERS FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_guard('manage users with etl-craft user');
