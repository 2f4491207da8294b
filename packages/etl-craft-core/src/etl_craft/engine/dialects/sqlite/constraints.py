"""What a SQLite CHECK or foreign key failure was about: the constraint and the rows that break it.

SQLite names a failed CHECK but not the row, and a failed foreign key not even the constraint
(PostgreSQL names both). So the failed statement is run again in a savepoint with that kind of
constraint relaxed (`ignore_check_constraints`, `defer_foreign_keys`), the rows that break it are
read (`WHERE NOT (<the CHECK>)`, `PRAGMA foreign_key_check`), and the savepoint is rolled back:
nothing of the second run remains, and the caller rolls back its transaction anyway.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import sqlalchemy as sa

from etl_craft.core.text import one_line

SHOWN_ROWS = 3
_VALUE_LIMIT = 60
_STAMPS = frozenset({"CREATED_BY", "CREATE_DATE", "UPDATED_BY", "UPDATED_DATE"})
_FOREIGN_KEY = re.compile(r"CONSTRAINT\s+(\w+)\s+FOREIGN\s+KEY\s*\(\s*(\w+)\s*\)", re.I)


def explain(conn: sa.Connection, statement: str, error: BaseException) -> str | None:
    """The constraint a failed statement broke and the values of the rows that break it, or None
    when the failure was not a CHECK or a foreign key (the database's own message says enough)."""
    kind = getattr(error, "sqlite_errorname", None)
    if not isinstance(error, sqlite3.IntegrityError) or kind not in (
        "SQLITE_CONSTRAINT_CHECK",
        "SQLITE_CONSTRAINT_FOREIGNKEY",
    ):
        return None
    try:
        if kind == "SQLITE_CONSTRAINT_CHECK":
            return _check(conn, statement, str(error).rpartition(": ")[2].strip())
        return _foreign_key(conn, statement)
    except sa.exc.DBAPIError:  # the second run failed otherwise: keep the first message alone
        return None


def _check(conn: sa.Connection, statement: str, name: str) -> str | None:
    found = _check_expression(conn, name)
    if found is None:
        return None
    table, expression = found
    with _relaxed(conn, "ignore_check_constraints"):
        conn.exec_driver_sql(statement)
        rows = conn.exec_driver_sql(f'SELECT * FROM "{table}" WHERE NOT ({expression})').mappings().all()
    return f"CHECK constraint {name} ({expression}) on {table}" + _rows(table, [dict(r) for r in rows])


def _check_expression(conn: sa.Connection, name: str) -> tuple[str, str] | None:
    """The table holding the named CHECK constraint and its expression, read from its CREATE TABLE."""
    tables = conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL")
    for table, sql in tables:
        start = re.search(rf"CONSTRAINT\s+{re.escape(name)}\s+CHECK\s*\(", sql, re.I)
        if start is not None:
            return table, _parenthesised(sql, start.end())
    return None


def _parenthesised(sql: str, start: int) -> str:
    """The text from `start` to the parenthesis that closes the one just before it (quotes respected)."""
    depth, quote = 1, None
    for position in range(start, len(sql)):
        char = sql[position]
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return sql[start:position].strip()
    return sql[start:].strip()


def _foreign_key(conn: sa.Connection, statement: str) -> str | None:
    with _relaxed(conn, "defer_foreign_keys"):
        conn.exec_driver_sql(statement)
        broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
        if not broken:
            return None
        table, _rowid, parent, key = broken[0]
        rule = _foreign_key_rule(conn, table, parent, key)
        rows = [
            dict(conn.exec_driver_sql(f'SELECT * FROM "{t}" WHERE rowid = ?', (rowid,)).mappings().one())
            for t, rowid, _parent, k in broken
            if (t, k) == (table, key)
        ]
    return f"FOREIGN KEY constraint {rule}" + _rows(table, rows)


def _foreign_key_rule(conn: sa.Connection, table: str, parent: str, key: int) -> str:
    """`fk_name (TABLE.COLUMN references PARENT.COLUMN)` for PRAGMA foreign_key_check's key id."""
    pairs = [(r[3], r[4]) for r in conn.exec_driver_sql(f'PRAGMA foreign_key_list("{table}")') if r[0] == key]
    sql = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).scalar()
    names = {column.upper(): name for name, column in _FOREIGN_KEY.findall(sql or "")}
    columns = ", ".join(f"{table}.{child} references {parent}.{target or '(its key)'}" for child, target in pairs)
    name = names.get(pairs[0][0].upper()) if len(pairs) == 1 else None
    return f"{name} ({columns})" if name else f"({columns})"


class _relaxed:
    """A savepoint with one constraint pragma on; both are undone on the way out."""

    def __init__(self, conn: sa.Connection, pragma: str) -> None:
        self.conn, self.pragma = conn, pragma

    def __enter__(self) -> None:
        self.conn.exec_driver_sql("SAVEPOINT etl_craft_explain")
        self.conn.exec_driver_sql(f"PRAGMA {self.pragma} = ON")

    def __exit__(self, *exc: object) -> None:
        self.conn.exec_driver_sql("ROLLBACK TO etl_craft_explain")
        self.conn.exec_driver_sql("RELEASE etl_craft_explain")
        self.conn.exec_driver_sql(f"PRAGMA {self.pragma} = OFF")


def _rows(table: str, rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    shown = "; ".join(_values(row) for row in rows[:SHOWN_ROWS])
    more = f" and {len(rows) - SHOWN_ROWS} more" if len(rows) > SHOWN_ROWS else ""
    return f", broken by the {table} row{'s' if len(rows) > 1 else ''} {shown}{more}"


def _values(row: dict[str, Any]) -> str:
    """A row's values as compact JSON, stamps left out and long values cut."""
    shown = {
        k.upper(): one_line(v, _VALUE_LIMIT) if isinstance(v, str) else v
        for k, v in row.items()
        if k.upper() not in _STAMPS
    }
    return json.dumps(shown, ensure_ascii=False, default=str, separators=(", ", ": "))
