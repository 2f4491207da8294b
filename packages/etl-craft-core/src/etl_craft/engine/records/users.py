"""Writes to CFG_USERS: a new user, a new password hash, a disabled account, the last sign-in."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from etl_craft.core.actor import Actor
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import cfg_users


def insert_user(db: EngineDb, *, name: str, password_hash: str, role: str, actor: Actor, now: datetime) -> int:
    with db.write() as conn:
        statement = (
            cfg_users.insert()
            .values(
                user_name=name,
                password_hash=password_hash,
                role=role,
                created_by=actor.name,
                created_at=now,
                password_changed_at=now,
            )
            .returning(cfg_users.c.user_id)
        )
        return int(conn.execute(statement).scalar_one())


def update_user(db: EngineDb, name: str, **values: Any) -> int:
    """Change the named user's columns; the number of rows changed (0: no such user)."""
    with db.write() as conn:
        return int(conn.execute(cfg_users.update().where(cfg_users.c.user_name == name).values(**values)).rowcount)
