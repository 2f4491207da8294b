"""The contract an ingestion script is written against: what it receives and what it returns.

Scripts import from here (`from etl_craft.scripting import Offset, ScriptResult, ScriptTask`), and
the task process imports it before every PYTHON task, so it loads only the standard library at
import time; SQLAlchemy and the warehouse driver load when a script asks for the warehouse.

Offsets are stored as text beside their declared type, so every value is cast to one exact form:
NUMBER is an int (written without a fraction) or a Decimal, TEXT a str, TIMESTAMP an aware UTC
datetime with microsecond precision (a naive datetime is taken to be UTC). Anything the store
can't keep exactly, such as nanoseconds, is refused instead of silently re-reading rows later.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from etl_craft.core.errors import HandlerError

if TYPE_CHECKING:
    import sqlalchemy as sa

    from etl_craft.config.model import ConnectionProfile, ConnectorConfig
    from etl_craft.engine.database import EngineDb
    from etl_craft.warehouse.dialect import WarehouseDialect

__all__ = ["Offset", "ScriptContractError", "ScriptResult", "ScriptTask"]

OFFSET_TYPES = ("NUMBER", "TEXT", "TIMESTAMP")
# Digits beyond this are refused: int() of such a Decimal would be slow and str() of it refused.
_MAX_NUMBER_DIGITS = 1000
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_TIMESTAMP_TEXT = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?)?"
    r"\s*(?:(?P<utc>[Zz]|UTC)|(?P<sign>[+-])(?P<tzh>\d{2})(?::?(?P<tzm>\d{2}))?)?"
)
TIMESTAMP_EXAMPLE = "2026-01-31 08:15:00.123456+00:00"
WRITER_LOCK_TIMEOUT_SECONDS = 3600.0


class ScriptContractError(HandlerError, ValueError):
    """A script, its parameters or what it returned breaks the script contract.

    Running the same code on the same input fails the same way, so these never retry. It is also a
    ValueError, so a script can catch a refused Offset the way it would catch int("abc").
    """

    retryable = False


def _show(value: object) -> str:
    """A short repr for messages: a script may hand over a whole data frame by mistake."""
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _kind(value: object) -> str:
    return type(value).__name__


def _refuse(value: object, datatype: str, found: str, expected: str, remedy: str) -> ScriptContractError:
    return ScriptContractError(
        f"offset {_show(value)} declared {datatype}", found=found, expected=expected, remedy=remedy
    )


def _datatype(datatype: object) -> str:
    name = datatype.strip().upper() if isinstance(datatype, str) else None
    if name in OFFSET_TYPES:
        return str(name)
    raise ScriptContractError(
        "offset datatype",
        found=_show(datatype),
        expected="NUMBER, TEXT or TIMESTAMP (always declared, never guessed)",
        remedy="write Offset(value, 'NUMBER'), or use Offset.number(v), Offset.text(v) or Offset.timestamp(v)",
    )


def _plain_number(number: Decimal, value: object) -> int | Decimal:
    """An int when the number has no fractional digits, else the Decimal as written."""
    if not number.is_finite():
        raise _refuse(value, "NUMBER", f"{number}, which is not a finite number", "a finite number", "store a number")
    if number.adjusted() > _MAX_NUMBER_DIGITS or len(number.as_tuple().digits) > _MAX_NUMBER_DIGITS:
        raise _refuse(
            value,
            "NUMBER",
            "a number with more than 1000 digits",
            "a number the offset store can keep as text",
            "store a smaller number, or use a TEXT offset",
        )
    exponent = number.as_tuple().exponent
    return int(number) if isinstance(exponent, int) and exponent >= 0 else number


def _cast_number(value: object) -> int | Decimal:
    if isinstance(value, bool):
        raise _refuse(value, "NUMBER", "a bool", "an int, a Decimal or numeric text", "store 1 or 0 if you mean it")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, Decimal):
        return _plain_number(value, value)
    if isinstance(value, float):
        return _plain_number(Decimal(repr(value)), value)
    if isinstance(value, str):
        text = value.strip()
        if not _NUMBER_TEXT.fullmatch(text):
            raise _refuse(
                value,
                "NUMBER",
                "text that is not a number",
                "a number such as 1042, -7 or 10.25 (cast like SQL CAST)",
                "return the number itself, or declare the offset TEXT",
            )
        try:
            return _plain_number(Decimal(text), value)
        except InvalidOperation:  # pragma: no cover - the pattern admits only valid literals
            raise _refuse(value, "NUMBER", "text that is not a number", "a number", "store a number") from None
    if hasattr(type(value), "__index__"):  # numpy and other integer types
        return int(value.__index__())  # type: ignore[attr-defined]
    raise _refuse(
        value,
        "NUMBER",
        f"a {_kind(value)}",
        "an int, a Decimal, a float or numeric text",
        "convert the value to int or Decimal first",
    )


def _cast_text(value: object) -> str:
    if isinstance(value, str):
        text = str(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(int(value))
    elif isinstance(value, Decimal):
        text = format(value, "f")
    else:
        raise _refuse(
            value,
            "TEXT",
            f"a {_kind(value)}",
            "a str (or an int or Decimal, cast to text)",
            "convert the value to text yourself, or declare the offset NUMBER or TIMESTAMP",
        )
    if "\x00" in text:
        raise _refuse(value, "TEXT", "a NUL character", "text without NUL characters", "remove the NUL character")
    return text


def _nanosecond_error(shown: str) -> ScriptContractError:
    return ScriptContractError(
        f"offset {shown} has nanoseconds, which the offset store can't keep; round it to microseconds",
        remedy=(
            "round down so no row is skipped: ts.floor('us') for a pandas Timestamp, "
            "or at most 6 fractional digits in text"
        ),
    )


def _utc(value: datetime, shown: object) -> datetime:
    """The same instant as an aware UTC datetime of the base class (a subclass such as a pandas
    Timestamp is rebuilt, so the stored text and the value read back are plain datetimes)."""
    offset = value.utcoffset()
    plain = datetime(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond)
    try:
        plain = plain - offset if offset is not None else plain
    except OverflowError:
        raise _refuse(
            shown,
            "TIMESTAMP",
            "an instant outside the years 1 to 9999 in UTC",
            "a timestamp between 0001-01-01 and 9999-12-31 UTC",
            "store a timestamp in range",
        ) from None
    return plain.replace(tzinfo=UTC)


def _parse_timestamp(value: str) -> datetime:
    text = value.strip()
    match = _TIMESTAMP_TEXT.fullmatch(text)
    expected = f"ISO 8601 text such as {TIMESTAMP_EXAMPLE} (no zone means UTC)"
    if match is None:
        raise _refuse(value, "TIMESTAMP", "text that is not a timestamp", expected, "return a datetime or ISO text")
    fraction = match["fraction"] or ""
    if len(fraction) > 6 and fraction[6:].strip("0"):
        raise _nanosecond_error(text)
    try:
        day = date.fromisoformat(match["date"])
        moment = datetime(
            day.year,
            day.month,
            day.day,
            int(match["hour"] or 0),
            int(match["minute"] or 0),
            int(match["second"] or 0),
            int(fraction[:6].ljust(6, "0")),
        )
    except ValueError as exc:
        raise _refuse(value, "TIMESTAMP", f"an impossible date or time ({exc})", expected, "correct the text") from None
    if match["sign"]:
        shift = timedelta(hours=int(match["tzh"]), minutes=int(match["tzm"] or 0))
        if shift >= timedelta(hours=24):
            raise _refuse(value, "TIMESTAMP", "a zone offset of 24 hours or more", expected, "correct the zone")
        return _utc(moment.replace(tzinfo=timezone(shift if match["sign"] == "+" else -shift)), value)
    return moment.replace(tzinfo=UTC)


def _cast_timestamp(value: object) -> datetime:
    if isinstance(value, datetime):
        if getattr(value, "nanosecond", 0):
            raise _nanosecond_error(str(value))
        return _utc(value, value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        return _parse_timestamp(value)
    raise _refuse(
        value,
        "TIMESTAMP",
        f"a {_kind(value)}",
        f"a datetime, a date or ISO 8601 text such as {TIMESTAMP_EXAMPLE}",
        "convert the value to a datetime first (for numpy values: pandas.Timestamp(v).to_pydatetime())",
    )


_CASTS = {"NUMBER": _cast_number, "TEXT": _cast_text, "TIMESTAMP": _cast_timestamp}


@dataclass(frozen=True, init=False)
class Offset:
    """Where an incremental script got to, with its type always declared.

    `value` is cast like SQL CAST: Offset("1042", "NUMBER").value == 1042, Offset("abc", "NUMBER")
    raises ScriptContractError. Two offsets are equal when their type and cast value are.
    """

    value: int | Decimal | str | datetime
    datatype: str

    def __init__(self, value: object, datatype: str) -> None:
        kind = _datatype(datatype)
        object.__setattr__(self, "datatype", kind)
        object.__setattr__(self, "value", _CASTS[kind](value))

    @classmethod
    def number(cls, value: object) -> Offset:
        return cls(value, "NUMBER")

    @classmethod
    def text(cls, value: object) -> Offset:
        return cls(value, "TEXT")

    @classmethod
    def timestamp(cls, value: object) -> Offset:
        return cls(value, "TIMESTAMP")

    @property
    def stored_text(self) -> str:
        """The text kept in AUD_TASK_OFFSET_TRACKER.OFFSET_VALUE; Offset(stored_text, datatype) == self.

        Timestamps are UTC ISO 8601 with six fractional digits, e.g. 2026-01-31T08:15:00.000000+00:00.
        """
        value = self.value
        if isinstance(value, datetime):
            return value.isoformat(timespec="microseconds")
        if isinstance(value, Decimal):
            return format(value, "f")
        return str(value)


@dataclass(frozen=True)
class ScriptResult:
    """What `run` returns: rows ingested (recorded as SOURCE, TARGET and INSERT counts), the new
    offset (None keeps the stored one) and variables listed in TASK_LOG as NAME = value."""

    row_count: int
    offset: Offset | None = None
    variables: Mapping[str, object] | None = None


def _missing_warehouse(config: ConnectorConfig, use: str) -> ScriptContractError:
    return ScriptContractError(
        f"{use}: craft-connector.yml ({config.path})",
        found="no Warehouse section",
        expected="a Warehouse section with jdbc_url jdbc:duckdb:<file> or jdbc:postgresql://host[:port]/database",
        remedy="add a Warehouse section to craft-connector.yml (docs/reference/configuration.md)",
    )


def _dialect(config: ConnectorConfig) -> WarehouseDialect:
    from etl_craft.warehouse.dialect import load_dialect

    return load_dialect(config)


@dataclass(frozen=True, eq=False)
class ScriptTask:
    """Everything one attempt of a PYTHON task gives its script's `run(task)`.

    `offset` is None on a first run and in a backfill; `backfill` also means the returned offset
    is not stored. The ids carry the names of the Engine DB columns so scripts can stamp rows.
    """

    task_code: str
    script_name: str
    offset: Offset | None
    input_params: dict[str, Any]
    pipeline_id: int
    pipeline_code: str
    pipeline_run_id: int
    task_run_id: int
    attempt_number: int
    refresh_type: str
    force: bool
    run_date: date
    backfill: bool
    task_params: Mapping[str, str]
    config: ConnectorConfig = field(repr=False)
    logger: logging.Logger = field(repr=False)
    _engine_db: EngineDb | None = field(default=None, repr=False)

    def _warehouse_profile(self, use: str) -> ConnectionProfile:
        if self.config.warehouse is None:
            raise _missing_warehouse(self.config, use)
        return self.config.warehouse

    def table(self, name: str) -> str:
        """`schema.table` qualified with the warehouse database (`database.schema.table` is kept)."""
        self._warehouse_profile(f"task.table({name!r})")
        parts = name.split(".") if isinstance(name, str) else []
        if len(parts) not in (2, 3) or not all(part.strip() for part in parts):
            raise ScriptContractError(
                f"task.table({_show(name)})",
                found="a bare name" if len(parts) == 1 and parts[0].strip() else f"{_show(name)}",
                expected="schema.table or database.schema.table",
                remedy="name the schema, e.g. task.table('lnd.orders')",
            )
        return name if len(parts) == 3 else f"{_dialect(self.config).database_name()}.{name}"

    @contextmanager
    def warehouse(self) -> Iterator[sa.Engine]:
        """A SQLAlchemy engine for the configured warehouse, disposed when the block ends.

        On a single-writer warehouse (a DuckDB file) the block first waits for the Engine DB lock that
        lets one process write at a time (LockTimeoutError, exit 14, after an hour). Warehouse writes
        commit on their own, apart from the Engine DB transaction that records the attempt, so make
        them idempotent.
        """
        self._warehouse_profile("task.warehouse()")
        dialect = _dialect(self.config)
        with self._writer_turn(dialect):
            engine = dialect.script_engine()
            try:
                yield engine
            finally:
                engine.dispose()

    def _writer_turn(self, dialect: WarehouseDialect) -> AbstractContextManager[object]:
        if self._engine_db is None or not dialect.single_writer:
            return nullcontext()
        from etl_craft.engine import locks

        name = dialect.writer_lock_name()
        self.logger.debug("waiting for the %s writer lock %s", dialect.display_name, name)
        return locks.hold(self._engine_db, name, timeout=WRITER_LOCK_TIMEOUT_SECONDS)
