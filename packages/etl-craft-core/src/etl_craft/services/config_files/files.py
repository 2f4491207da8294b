"""The six CSV files of `config/`: their columns, how a cell is read and written, and reading a folder.

Each file is one CFG_ table with codes in place of ids, so rows refer to each other by code. A cell
is read into the value the Engine DB stores (empty means NULL or the column's default); any cell,
header or file that can't be read is a ConfigFilesError (exit 25) naming file, line and column.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from etl_craft.core.errors import ConfigFilesError
from etl_craft.core.text import CODE_RULE, did_you_mean, is_valid_code
from etl_craft.engine.schema import tables as t
from etl_craft.engine.schema.tables import DEPENDENCY_TYPES

YES_NO = ("Y", "N")


@dataclass(frozen=True)
class Column:
    name: str  # the CSV header and the Engine DB column (upper case)
    kind: str  # code | text | int | decimal | date | json | choice
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()

    @property
    def db(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class FileSpec:
    file: str
    table: sa.Table
    key: tuple[str, ...]  # the merge key, as CSV columns
    values: tuple[Column, ...]  # the columns written to the table, besides references and ACTIVE_FLAG

    @property
    def key_columns(self) -> tuple[Column, ...]:
        return tuple(KEY_COLUMNS[name] for name in self.key)

    @property
    def columns(self) -> tuple[Column, ...]:
        """Every CSV column in export order: the key, the values, then ACTIVE_FLAG."""
        return (*self.key_columns, *self.values, ACTIVE)


ACTIVE = Column("ACTIVE_FLAG", "choice", default="Y", choices=YES_NO)
KEY_COLUMNS = {
    "PIPELINE_CODE": Column("PIPELINE_CODE", "code", required=True),
    "TASK_CODE": Column("TASK_CODE", "code", required=True),
    "PARAMETER_NAME": Column("PARAMETER_NAME", "text", required=True),
    "DEPENDS_ON_PIPELINE_CODE": Column("DEPENDS_ON_PIPELINE_CODE", "code"),
    "DEPENDS_ON_TASK_CODE": Column("DEPENDS_ON_TASK_CODE", "code", required=True),
    "DEPENDENCY_TYPE": Column("DEPENDENCY_TYPE", "choice", required=True, choices=DEPENDENCY_TYPES),
    "BUSINESS_RULE_NAME": Column("BUSINESS_RULE_NAME", "text", required=True),
}
CONSUME_REPAIRS = Column("CONSUME_REPAIRS", "choice", default="Y", choices=YES_NO)

FILES: tuple[FileSpec, ...] = (
    FileSpec(
        "pipelines.csv",
        t.cfg_pipelines,
        ("PIPELINE_CODE",),
        (
            Column("PIPELINE_NAME", "text", required=True),
            Column("DESCRIPTION", "text"),
            Column("REFRESH_TYPE", "choice", required=True, choices=("FULL", "INCREMENTAL")),
            Column("RUN_SCHEDULE", "text"),
            Column("SCHEDULE_TIMEZONE", "text"),
            Column("SCHEDULE_START_DATE", "date"),
            Column("CATCHUP", "choice", default="N", choices=YES_NO),
            Column("MAX_CATCHUP_RUNS", "int", default=1),
            Column("OVERLAP_POLICY", "choice", default="SKIP", choices=("SKIP", "QUEUE")),
            Column("SLA_IN_HOURS", "decimal"),
            Column("PIPELINE_PARAMETERS", "json"),
        ),
    ),
    FileSpec(
        "tasks.csv",
        t.cfg_tasks,
        ("PIPELINE_CODE", "TASK_CODE"),
        (
            Column("TASK_TYPE", "choice", required=True, choices=("INGESTION", "ETL")),
            Column("HANDLER", "choice", required=True, choices=("PYTHON", "SQL", "BUSINESS_RULES", "EMAIL_ALERT")),
            Column("RUN_CONDITION", "choice", choices=("ALL", "ANY", "N")),
            Column("RUN_CONDITION_COUNT", "int"),
        ),
    ),
    FileSpec(
        "task_parameters.csv",
        t.cfg_task_parameters,
        ("PIPELINE_CODE", "TASK_CODE", "PARAMETER_NAME"),
        (Column("PARAMETER_VALUE", "text"),),
    ),
    FileSpec(
        "task_dependencies.csv",
        t.cfg_task_dependency,
        ("PIPELINE_CODE", "TASK_CODE", "DEPENDS_ON_PIPELINE_CODE", "DEPENDS_ON_TASK_CODE", "DEPENDENCY_TYPE"),
        (CONSUME_REPAIRS,),
    ),
    FileSpec(
        "pipeline_dependencies.csv",
        t.cfg_pipeline_dependency,
        ("PIPELINE_CODE", "DEPENDS_ON_PIPELINE_CODE", "DEPENDENCY_TYPE"),
        (CONSUME_REPAIRS,),
    ),
    FileSpec(
        "business_rules.csv",
        t.cfg_business_rules,
        ("PIPELINE_CODE", "TASK_CODE", "BUSINESS_RULE_NAME"),
        (
            Column("BUSINESS_RULE_TYPE", "choice", required=True, choices=("INCOMPLETE", "REJECT", "REPORT")),
            Column("BUSINESS_RULE_KEY_COLUMN", "text", required=True),
            Column("TARGET_TABLE", "text", required=True),
            Column("SEQUENCE_NUMBER", "int", required=True),
            Column("BUSINESS_RULE_SQL", "text", required=True),
        ),
    ),
)
SPECS = {spec.file: spec for spec in FILES}
# pipeline_dependencies.csv needs the upstream pipeline; in task_dependencies.csv empty means "the same pipeline".
_REQUIRED_IN = {("pipeline_dependencies.csv", "DEPENDS_ON_PIPELINE_CODE")}


@dataclass(frozen=True)
class CsvRow:
    spec: FileSpec
    line: int
    key: tuple[str | None, ...]
    values: dict[str, Any]  # by lower-case Engine DB column
    active: bool

    @property
    def label(self) -> str:
        return key_label(self.spec, self.key)


def key_label(spec: FileSpec, key: tuple[str | None, ...]) -> str:
    """How plan lines name a row: sales, sales.load, sales.load.SQL_ACTION, sales.report->sales.load:SUCCESS."""
    parts = dict(zip(spec.key, key, strict=True))
    own = ".".join(p for p in (parts.get("PIPELINE_CODE"), parts.get("TASK_CODE")) if p)
    if spec.file == "task_dependencies.csv":
        upstream = f"{parts['DEPENDS_ON_PIPELINE_CODE'] or parts['PIPELINE_CODE']}.{parts['DEPENDS_ON_TASK_CODE']}"
        return f"{own}->{upstream}:{parts['DEPENDENCY_TYPE']}"
    if spec.file == "pipeline_dependencies.csv":
        return f"{own}->{parts['DEPENDS_ON_PIPELINE_CODE']}:{parts['DEPENDENCY_TYPE']}"
    last = parts.get("PARAMETER_NAME") or parts.get("BUSINESS_RULE_NAME")
    return f"{own}.{last}" if last else own


@dataclass(frozen=True)
class ConfigFolder:
    directory: Path
    revision: str  # the first 12 hex digits of the SHA-256 of the six files
    rows: Mapping[str, tuple[CsvRow, ...]] = field(default_factory=dict)


def _error(where: str, **parts: str) -> ConfigFilesError:
    return ConfigFilesError(where, **parts)


def parse_cell(column: Column, text: str, where: str) -> Any:
    """The stored value of a non-empty cell."""
    if column.kind == "code":
        if not is_valid_code(text):
            raise _error(where, found=repr(text), expected=f"a code matching {CODE_RULE}", remedy="correct the code")
        return text
    if column.kind == "choice":
        if text not in column.choices:
            raise _error(
                where,
                found=repr(text),
                expected="one of " + ", ".join(column.choices),
                remedy="correct the value" + did_you_mean(text, column.choices),
            )
        return text
    if column.kind == "int":
        if not re.fullmatch(r"-?[0-9]+", text.strip()):
            raise _error(where, found=repr(text), expected="a whole number", remedy="correct the number")
        return int(text)
    if column.kind == "decimal":
        try:
            value = Decimal(text.strip())
        except InvalidOperation:
            value = Decimal("NaN")
        if not value.is_finite():
            raise _error(where, found=repr(text), expected="a number such as 2.5", remedy="correct the number")
        return value
    if column.kind == "date":
        try:
            return date.fromisoformat(text.strip())
        except ValueError:
            raise _error(where, found=repr(text), expected="a date YYYY-MM-DD", remedy="correct the date") from None
    if column.kind == "json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise _error(
                where, found=f"text that is not JSON ({exc})", expected="a JSON object", remedy="correct the JSON"
            ) from None
    return text


def format_cell(column: Column, value: Any) -> str:
    """The CSV text of a stored value (the inverse of parse_cell)."""
    if value is None:
        return ""
    if column.kind == "json":
        try:
            return json.dumps(
                json.loads(value) if isinstance(value, str) else value, ensure_ascii=False, sort_keys=True
            )
        except ValueError:
            return str(value)  # kept as stored; validate reports it
    if column.kind == "date":
        return value.isoformat() if isinstance(value, date) else str(value)
    if column.kind == "decimal":
        return format(Decimal(str(value)).normalize(), "f")
    return str(value)


def revision(directory: Path) -> tuple[str, dict[str, bytes]]:
    """The content of the six files and their revision (missing or unreadable files are refused)."""
    if not directory.is_dir():
        raise _error(
            f"the configuration folder {directory}",
            found="no such folder",
            expected=f"a folder holding {', '.join(SPECS)}",
            remedy="create it with etl-craft config export, or name it with --config-dir",
        )
    contents: dict[str, bytes] = {}
    digest = hashlib.sha256()
    for spec in FILES:
        path = directory / spec.file
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise _error(
                f"config file {path}",
                found=f"a file that can't be read ({exc.strerror})",
                expected="all six files, each with its header (an empty file set has headers only)",
                remedy="run etl-craft config export to write them, or restore the file",
            ) from None
        contents[spec.file] = data
        digest.update(spec.file.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:12], contents


def _header(spec: FileSpec, header: list[str], path: Path) -> list[str]:
    names = [h.strip() for h in header]
    known = {c.name for c in spec.columns}
    for name in names:
        if name not in known:
            raise _error(
                f"config file {path}, header",
                found=f"the column {name!r}",
                expected="columns among " + ", ".join(c.name for c in spec.columns),
                remedy="correct or remove the column" + did_you_mean(name, known),
            )
        if names.count(name) > 1:
            raise _error(f"config file {path}, header", found=f"the column {name} twice", expected="each column once")
    for column in spec.columns:
        needed = column.required or (spec.file, column.name) in _REQUIRED_IN
        if needed and column.name not in names:
            raise _error(
                f"config file {path}, header",
                found=f"no {column.name} column",
                expected=f"the columns {', '.join(c.name for c in spec.columns if c.required)} at least",
                remedy=f"add the {column.name} column",
            )
    return names


def parse_file(spec: FileSpec, data: bytes, path: Path) -> tuple[CsvRow, ...]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _error(
            f"config file {path}", found=f"bytes that are not UTF-8 (at byte {exc.start})", expected="UTF-8 text"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        records = [(reader.line_num, record) for record in reader]
    except csv.Error as exc:
        raise _error(f"config file {path}, line {reader.line_num}", found=str(exc), expected="CSV text") from None
    if not records:
        raise _error(f"config file {path}", found="an empty file", expected="a header line at least")
    names = _header(spec, records[0][1], path)
    rows: list[CsvRow] = []
    seen: dict[tuple[str | None, ...], int] = {}
    by_name = {c.name: c for c in spec.columns}
    for line, record in records[1:]:
        if not any(cell.strip() for cell in record):
            continue
        if len(record) > len(names):
            raise _error(
                f"config file {path}, line {line}",
                found=f"{len(record)} cells",
                expected=f"at most {len(names)}, one per header column",
                remedy="quote cells that hold commas",
            )
        cells = dict(zip(names, record, strict=False))
        values: dict[str, Any] = {}
        for column in spec.columns:
            where = f"config file {path}, line {line}, column {column.name}"
            raw = cells.get(column.name, "")
            text = raw if column.name in ("PARAMETER_VALUE", "BUSINESS_RULE_SQL", "DESCRIPTION") else raw.strip()
            if text == "":
                if column.required or (spec.file, column.name) in _REQUIRED_IN:
                    raise _error(where, found="an empty cell", expected="a value", remedy=f"fill in {column.name}")
                values[column.db] = column.default
            else:
                values[column.db] = parse_cell(by_name[column.name], text, where)
        key = tuple(values.pop(c.db) for c in spec.key_columns)
        if key in seen:
            raise _error(
                f"config file {path}, line {line}",
                found=f"the key {key_label(spec, key)} again (first on line {seen[key]})",
                expected="one row per " + ", ".join(spec.key),
                remedy="keep one of the rows",
            )
        seen[key] = line
        rows.append(CsvRow(spec, line, key, values, values.pop("active_flag") == "Y"))
    return tuple(rows)


def read_folder(directory: Path) -> ConfigFolder:
    """Read and check the six files; the first problem is a ConfigFilesError."""
    rev, contents = revision(directory)
    rows = {spec.file: parse_file(spec, contents[spec.file], directory / spec.file) for spec in FILES}
    return ConfigFolder(directory, rev, rows)


def write_file(path: Path, spec: FileSpec, rows: list[dict[str, Any]]) -> None:
    """One file with its header and the rows (values by lower-case column), written whole or not at all."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([c.name for c in spec.columns])
    for row in rows:
        writer.writerow([format_cell(c, row.get(c.db)) for c in spec.columns])
    partial = path.with_name(path.name + ".partial")
    partial.write_text(buffer.getvalue(), encoding="utf-8")
    partial.replace(path)
