"""Reads of CFG_API_TOKENS: one token by the SHA-256 of its value, or every token for `token list`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.schema.tables import cfg_api_tokens


@dataclass(frozen=True)
class ApiTokenRow:
    token_id: int
    name: str
    token_sha256: str
    role: str
    project_id: int | None
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


def _columns() -> list[sa.Column[object]]:
    return [cfg_api_tokens.c[name] for name in ApiTokenRow.__dataclass_fields__]


def token_by_hash(conn: sa.Connection, token_sha256: str) -> ApiTokenRow | None:
    row = conn.execute(sa.select(*_columns()).where(cfg_api_tokens.c.token_sha256 == token_sha256)).one_or_none()
    return None if row is None else ApiTokenRow(**row._mapping)


def token_by_id(conn: sa.Connection, token_id: int) -> ApiTokenRow | None:
    row = conn.execute(sa.select(*_columns()).where(cfg_api_tokens.c.token_id == token_id)).one_or_none()
    return None if row is None else ApiTokenRow(**row._mapping)


def api_tokens(conn: sa.Connection) -> list[ApiTokenRow]:
    rows = conn.execute(sa.select(*_columns()).order_by(cfg_api_tokens.c.token_id))
    return [ApiTokenRow(**r._mapping) for r in rows]
