"""Project migrations write metadata, nothing else: every statement is read before any runs.

A project migration may INSERT, UPDATE or DELETE rows of CFG_ tables, reading any table on the way
(CTEs, sub-selects, joins), and call pure functions from a short list. Anything else (DDL, writes to
AUD_ tables, SCHEMA_MIGRATIONS or CFG_API_TOKENS, PRAGMA, ATTACH, COPY, CALL, DO, SET, transaction control, other
functions) is refused with the file, the statement's number and line, what was found and what is
allowed. This check is the first fence; the database is the second (the guard triggers refuse AUD_
writes from project SQL, and on SQLite an authorizer refuses everything else).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from etl_craft.core.errors import MigrationError
from etl_craft.engine.schema.tables import METADATA_TABLES

ALLOWED = (
    "INSERT, UPDATE or DELETE of CFG_ rows (the metadata tables: "
    + ", ".join(METADATA_TABLES)
    + "), reading any table in CTEs and sub-selects"
)
REMEDY = (
    "keep only INSERT, UPDATE and DELETE statements on CFG_ tables in the file; etl-craft creates and "
    "changes its own tables, and the warehouse's tables belong in SQL tasks"
)

# Pure functions a metadata statement may call, as sqlglot parses them, and by name for the ones it
# does not know. Anything else (set_config, pg_read_file, load_extension, nextval, ...) is refused.
_ALLOWED_FUNCTIONS: tuple[type[exp.Func], ...] = (
    exp.Abs, exp.Avg, exp.Case, exp.Cast, exp.Ceil, exp.Coalesce, exp.Concat, exp.ConcatWs, exp.Count,
    exp.CurrentDate, exp.CurrentTimestamp, exp.Date, exp.DateTrunc, exp.Extract, exp.Floor, exp.Greatest,
    exp.GroupConcat, exp.Hex, exp.If, exp.JSONObject, exp.Least, exp.Length, exp.Lower, exp.LowerHex, exp.Max,
    exp.MD5, exp.Min, exp.Nullif, exp.Pad, exp.Rand, exp.Replace, exp.Round, exp.RowNumber, exp.SplitPart,
    exp.StrPosition, exp.StrToDate, exp.StrToTime, exp.Substring, exp.Sum, exp.TimestampTrunc, exp.TimeToStr,
    exp.Trim, exp.TryCast, exp.TsOrDsToTimestamp, exp.Typeof, exp.Upper, exp.Uuid,
)  # fmt: skip
_ALLOWED_NAMES = frozenset(
    {"DATETIME", "JSON", "JSON_BUILD_OBJECT", "JSONB_BUILD_OBJECT", "PRINTF", "RANDOMBLOB", "TO_JSON", "TO_JSONB"}
)
_WRITES = (exp.Insert, exp.Update, exp.Delete, exp.Merge)
# sqlglot models AND, OR, NOT and friends as functions too; they are operators, always allowed.
_OPERATORS = (exp.Binary, exp.Connector, exp.Unary)


@dataclass(frozen=True)
class Statement:
    number: int  # 1-based, in the file
    line: int  # where it starts
    text: str


def statements(sql: str, dialect: str, file: str) -> Iterator[Statement]:
    """The statements of a script with where each starts, split on the dialect's own tokens."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except SqlglotError as error:
        raise MigrationError(
            f"project migration {file}",
            found=f"text etl-craft cannot read as SQL ({_first_line(error)})",
            expected="SQL statements separated by semicolons",
            remedy="fix the quoting or the statement the message names",
        ) from None
    chunk: list = []
    number = 0
    for token in [*tokens, None]:
        if token is not None and token.token_type is not TokenType.SEMICOLON:
            chunk.append(token)
            continue
        if chunk:
            number += 1
            start = min(t.start for t in chunk)
            # A token's comments precede it; a dollar-quoted body ends past its last token's end.
            yield Statement(number, chunk[0].line, sql[start : chunk[-1].end + 1])
        chunk = []


def check_project_migration(sql: str, dialect: str, file: str) -> None:
    """Refuse the file unless every statement writes CFG_ rows only; nothing has run yet."""
    for statement in statements(sql, dialect, file):
        problem = _problem(statement, dialect)
        if problem:
            raise MigrationError(
                f"project migration {file}, statement {statement.number} (line {statement.line})",
                found=problem,
                expected=ALLOWED,
                remedy=REMEDY,
            )


def _problem(statement: Statement, dialect: str) -> str | None:
    quiet = logging.getLogger("sqlglot")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # statements it can't parse are refused below, with its reason
    try:
        tree = sqlglot.parse_one(statement.text, read=dialect)
    except SqlglotError as error:
        return f"{_kind(None, statement.text)} ..., which etl-craft cannot check ({_first_line(error)})"
    finally:
        quiet.setLevel(level)
    if not isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
        return f"{_kind(tree, statement.text)}, which is not a metadata write"
    for write in tree.find_all(*_WRITES):
        target = _target(write)
        if target is None or target.upper() not in METADATA_TABLES:
            return f"a {write.key.upper()} of {target or 'an unnamed target'}, which is not a metadata table"
    for function in tree.find_all(exp.Func):
        if not isinstance(function, _OPERATORS) and not _allowed(function):
            return f"a call of {_function_name(function)}(), which is not on the list of functions a migration may call"
    return None


def _target(write: exp.Expression) -> str | None:
    table = write.this
    if isinstance(table, exp.Schema):  # INSERT INTO t (columns)
        table = table.this
    if not isinstance(table, exp.Table):
        return None
    return ".".join(part.name for part in table.parts)


def _allowed(function: exp.Func) -> bool:
    if isinstance(function, exp.Anonymous):
        return function.name.upper() in _ALLOWED_NAMES
    return isinstance(function, _ALLOWED_FUNCTIONS)


def _function_name(function: exp.Func) -> str:
    if isinstance(function, exp.Anonymous):
        return function.name
    return function.sql_names()[0] if function.sql_names() else function.key.upper()


def _kind(tree: exp.Expr | None, text: str) -> str:
    """What a refused statement is, in the words its author wrote (its first two keywords)."""
    words = " ".join(line.split("--", 1)[0] for line in text.splitlines()).split()
    if words or tree is None:
        return " ".join(words[:2]).upper()
    return tree.key.upper()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
