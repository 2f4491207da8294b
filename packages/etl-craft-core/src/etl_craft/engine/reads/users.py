"""Reads of CFG_USERS: one user by name, for the API's sign-in and `etl-craft user`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.schema.tables import cfg_users


@dataclass(frozen=True)
class UserRow:
    user_id: int
    user_name: str
    password_hash: str
    role: str
    created_by: str
    created_at: datetime
    password_changed_at: datetime
    disabled_at: datetime | None
    last_login_at: datetime | None


def user_by_name(conn: sa.Connection, name: str) -> UserRow | None:
    columns = [cfg_users.c[field] for field in UserRow.__dataclass_fields__]
    row = conn.execute(sa.select(*columns).where(cfg_users.c.user_name == name)).one_or_none()
    return None if row is None else UserRow(**row._mapping)
