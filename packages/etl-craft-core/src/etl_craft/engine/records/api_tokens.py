"""Writes to CFG_API_TOKENS: a new token (its SHA-256 only), a revocation, the time of last use."""

from __future__ import annotations

from datetime import datetime

from etl_craft.core.actor import Actor
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import cfg_api_tokens


def insert_token(
    db: EngineDb, *, name: str, token_sha256: str, role: str, actor: Actor, now: datetime, expires_at: datetime | None
) -> int:
    with db.write() as conn:
        statement = (
            cfg_api_tokens.insert()
            .values(
                name=name,
                token_sha256=token_sha256,
                role=role,
                created_by=actor.name,
                created_at=now,
                expires_at=expires_at,
            )
            .returning(cfg_api_tokens.c.token_id)
        )
        return int(conn.execute(statement).scalar_one())


def revoke_token(db: EngineDb, token_id: int, now: datetime) -> str | None:
    """Revoke the token with this id if it is live; its name, or None when no live token has the id."""
    with db.write() as conn:
        statement = (
            cfg_api_tokens.update()
            .where(cfg_api_tokens.c.token_id == token_id, cfg_api_tokens.c.revoked_at.is_(None))
            .values(revoked_at=now)
            .returning(cfg_api_tokens.c.name)
        )
        return conn.execute(statement).scalar_one_or_none()


def record_use(db: EngineDb, token_id: int, now: datetime) -> None:
    with db.write() as conn:
        conn.execute(cfg_api_tokens.update().where(cfg_api_tokens.c.token_id == token_id).values(last_used_at=now))
