-- etl-craft ENGINE migration 0005 (SQLite): CFG_USERS, the people who use the HTTP API (S7.B): a scrypt
-- password hash, a role, and when the account was disabled. Written only by etl-craft user.

CREATE TABLE CFG_USERS (
    USER_ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    USER_NAME TEXT NOT NULL,
    PASSWORD_HASH TEXT NOT NULL,
    ROLE TEXT NOT NULL,
    PROJECT_ID INTEGER,
    CREATED_BY TEXT NOT NULL,
    CREATED_AT TEXT NOT NULL,
    PASSWORD_CHANGED_AT TEXT NOT NULL,
    DISABLED_AT TEXT,
    LAST_LOGIN_AT TEXT,
    CONSTRAINT ck_cfg_users_role CHECK (ROLE IN ('viewer', 'operator', 'developer', 'admin'))
);
CREATE UNIQUE INDEX ux_users_name ON CFG_USERS (USER_NAME);

CREATE TRIGGER tr_cfg_users_guard_insert BEFORE INSERT ON CFG_USERS
BEGIN
    SELECT RAISE(ABORT, 'CFG_USERS is written only by etl-craft; manage users with etl-craft user') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_USERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_cfg_users_guard_update BEFORE UPDATE ON CFG_USERS
BEGIN
    SELECT RAISE(ABORT, 'CFG_USERS is written only by etl-craft; manage users with etl-craft user') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_USERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
CREATE TRIGGER tr_cfg_users_guard_delete BEFORE DELETE ON CFG_USERS
BEGIN
    SELECT RAISE(ABORT, 'CFG_USERS is written only by etl-craft; manage users with etl-craft user') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_USERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
