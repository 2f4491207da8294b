"""The canonical change hash, version 2 (S3.G.1), and the Engine DB record of each target's version.

Each compare column becomes `N` when NULL, else `V<length>:<canonical text>`, in the configured order,
and the digest is the MD5 of their concatenation. The length prefix makes NULL, empty text and
separator characters unambiguous; the canonical text (UTC ISO timestamps with six fractional digits,
dates as YYYY-MM-DD, decimals at their declared scale, booleans as true/false) makes the digest the
same on every warehouse and in every session time zone.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from etl_craft.core.clock import utc_now
from etl_craft.core.errors import SqlGuardError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import aud_target_hash_version
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Column

HASH_VERSION = 2


def _part(dialect: WarehouseDialect, expr: str, text: str) -> str:
    length = f"CAST(LENGTH({text}) AS {dialect.text_type()})"
    return f"CASE WHEN {expr} IS NULL THEN 'N' ELSE 'V' || {length} || ':' || {text} END"


def canonical_text(dialect: WarehouseDialect, expr: str, column: str, type_text: str, where: str) -> str:
    """The canonical text of one compare column, refusing types that have none."""
    if dialect.is_float(type_text):
        raise SqlGuardError(
            where,
            found=f"MERGE_COMPARE_COLUMNS includes {column} ({type_text.upper()})",
            expected="compare columns of text, integer, DECIMAL(p,s), boolean, date, time or timestamp types",
            remedy="floats have no stable text form; cast to DECIMAL in the SELECT",
        )
    text = dialect.canonical_text(expr, type_text)
    if text is None:
        raise SqlGuardError(
            where,
            found=f"MERGE_COMPARE_COLUMNS includes {column} ({type_text.upper()}), which has no canonical text form",
            expected="compare columns of text, integer, DECIMAL(p,s), boolean, date, time or timestamp types",
            remedy="cast it in the SELECT, e.g. to DECIMAL(18,4) or VARCHAR, or leave it out of the compare list",
        )
    return text


def hash_sql(dialect: WarehouseDialect, values: Sequence[tuple[str, str, str]], where: str) -> str:
    """MD5 over (expression, column name, type) triples in order: the version-2 HASH_KEY expression."""
    parts = [
        _part(dialect, expr, canonical_text(dialect, expr, column, type_, where)) for expr, column, type_ in values
    ]
    return dialect.md5_sql(" || ".join(parts))


def row_digest_sql(dialect: WarehouseDialect, alias: str, columns: Sequence[Column]) -> str:
    """A digest of every column of a row, for telling identical duplicates from differing ones."""
    parts = []
    for column in columns:
        expr = f"{alias}.{dialect.quote(column.name)}"
        text = dialect.canonical_text(expr, column.type) or f"CAST({expr} AS {dialect.text_type()})"
        parts.append(_part(dialect, expr, text))
    return dialect.md5_sql(" || ".join(parts))


def recorded_version(engine_db: EngineDb, target_key: str) -> int | None:
    with engine_db.read() as conn:
        found = conn.execute(
            sa.select(aud_target_hash_version.c.hash_version).where(
                aud_target_hash_version.c.target_object == target_key
            )
        ).scalar_one_or_none()
    return None if found is None else int(found)


def publish_version(conn: sa.Connection, target_key: str, version: int = HASH_VERSION) -> None:
    """Record the target's hash version; call only after the warehouse update has committed."""
    clear_version(conn, target_key)
    conn.execute(
        aud_target_hash_version.insert().values(target_object=target_key, hash_version=version, recomputed_at=utc_now())
    )


def clear_version(conn: sa.Connection, target_key: str) -> None:
    conn.execute(aud_target_hash_version.delete().where(aud_target_hash_version.c.target_object == target_key))


def require_version(engine_db: EngineDb, target_key: str, action: str, target: str) -> None:
    found = recorded_version(engine_db, target_key)
    if found != HASH_VERSION:
        raise SqlGuardError(
            f"{action} {target}",
            found=f"HASH_KEY version {found if found is not None else 'unknown'}",
            expected=f"version {HASH_VERSION}, recorded in AUD_TARGET_HASH_VERSION",
            remedy=f"run etl-craft rehash --target {target}",
        )
