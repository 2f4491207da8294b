"""A SQL task's parameters, read and checked once, and its SELECT text with tokens substituted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath

from etl_craft.core.errors import SqlGuardError
from etl_craft.core.text import close_matches, not_utf8
from etl_craft.handlers.sql.binds import refuse_bind_parameters
from etl_craft.handlers.sql.columns import ACTION_COLUMNS, MERGE_ACTIONS, PLAIN_NAME
from etl_craft.handlers.sql.text import TOKEN_SWITCHES, check_read_only, strip_trailing, substitute

ACTIONS = (
    "CREATE_TABLE",
    "SETUP_TABLE",
    "OVERWRITE_TABLE",
    "APPEND_TABLE",
    "SCD1_MERGE",
    "SCD2_MERGE",
    "DROP_TABLE",
    "DELETE_ROWS",
)
KEYED_ACTIONS = (*MERGE_ACTIONS, "DELETE_ROWS")
EVOLVING_ACTIONS = ("OVERWRITE_TABLE", *MERGE_ACTIONS)
STORAGE_PARAMETERS = ("EXTERNAL_LOCATION", "EXTERNAL_VOLUME", "BASE_LOCATION", "CATALOG")
# Every task parameter a SQL task reads (validate warns about any other name).
SQL_PARAMETERS = (
    "SQL_ACTION",
    "TARGET_OBJECT",
    "SOURCE_SQL",
    "SOURCE_SQL_FILE",
    *TOKEN_SWITCHES.values(),
    "MERGE_KEY",
    "MERGE_COMPARE_COLUMNS",
    "MERGE_DEDUPE_ORDER",
    "SETUP_FOR",
    "SCHEMA_EVOLUTION",
    "PRESERVE_TARGET",
    "HARD_DELETE",
    "DELETE_MISSING_KEYS",
    "TABLE_FORMAT",
    *STORAGE_PARAMETERS,
)


@dataclass(frozen=True)
class TaskIdentity:
    """What tokens and messages need to know about the executing task."""

    task_code: str
    pipeline_id: int
    pipeline_run_id: int
    task_run_id: int
    refresh_type: str
    run_date: date


@dataclass(frozen=True)
class SqlTaskSpec:
    action: str
    target: tuple[str, ...]  # TARGET_OBJECT's parts as written: (schema, table) or (database, schema, table)
    select: str | None  # the SELECT with tokens substituted; None for DROP_TABLE
    source_label: str  # SOURCE_SQL or SOURCE_SQL_FILE 'path', for messages
    merge_key: tuple[str, ...] = ()
    compare_columns: tuple[str, ...] = ()
    dedupe_order: str | None = None
    setup_for: str | None = None
    schema_evolution: bool = False
    preserve_target: bool = False
    hard_delete: bool = False
    delete_missing_keys: bool = False  # SCD2_MERGE only: flag the current version of keys the SELECT lacks
    table_format: str | None = None  # None: the warehouse's Table_format

    @property
    def target_name(self) -> str:
        return ".".join(self.target)


def refuse_source_binds(sql: str, sqlglot_dialect: str, where: str) -> None:
    """A SELECT's bind parameters, refused with the `$$` tokens that give the run's own values."""
    suggestions = {token: f"$${token} (with {switch} = true)" for token, switch in TOKEN_SWITCHES.items()}
    tokens = ", ".join(f"$${token}" for token in TOKEN_SWITCHES)
    refuse_bind_parameters(
        sql,
        sqlglot_dialect,
        where,
        f"for the run's own values use a $$ token with its switch parameter ({tokens}); "
        "write any other value into the SELECT as a literal",
        suggestions,
    )


def _where(task_code: str, parameter: str) -> str:
    return f"task {task_code}: {parameter}"


def yes_no(parameters: Mapping[str, str], name: str, task_code: str) -> bool:
    raw = parameters.get(name)
    if raw is None:
        return False
    if raw not in ("true", "false"):
        raise SqlGuardError(
            _where(task_code, name),
            found=repr(raw),
            expected="exactly true or false",
            remedy=f"set {name} to true or false",
        )
    return raw == "true"


def delete_missing_keys(parameters: Mapping[str, str], action: str, task_code: str) -> bool:
    """DELETE_MISSING_KEYS is read by SCD2_MERGE only; set on another action it would do nothing, so it is refused."""
    wanted = yes_no(parameters, "DELETE_MISSING_KEYS", task_code)
    if wanted and action != "SCD2_MERGE":
        raise SqlGuardError(
            _where(task_code, "DELETE_MISSING_KEYS"),
            found=f"DELETE_MISSING_KEYS=true on a {action} task",
            expected="DELETE_MISSING_KEYS only on SCD2_MERGE",
            remedy="remove it, or write the keys to flag with a DELETE_ROWS task",
        )
    return wanted


def parse_target(raw: str | None, task_code: str, parameter: str = "TARGET_OBJECT") -> tuple[str, ...]:
    where = _where(task_code, parameter)
    if raw is None or not raw.strip():
        raise SqlGuardError(
            where, found="nothing", expected="schema.table or database.schema.table", remedy=f"set {parameter}"
        )
    parts = tuple(raw.strip().split("."))
    if len(parts) not in (2, 3) or not all(PLAIN_NAME.match(p) for p in parts):
        raise SqlGuardError(
            where,
            found=repr(raw),
            expected="schema.table or database.schema.table of plain names (letters, digits and _)",
            remedy="name the table with its schema, e.g. sales.orders",
        )
    return parts


def name_list(parameters: Mapping[str, str], name: str, task_code: str, *, required: bool) -> tuple[str, ...]:
    raw = parameters.get(name)
    where = _where(task_code, name)
    if raw is None or not raw.strip():
        if required:
            raise SqlGuardError(
                where, found="nothing", expected="column names separated by |", remedy=f"set {name}, e.g. id|region"
            )
        return ()
    names = tuple(part.strip() for part in raw.split("|"))
    for part in names:
        if not PLAIN_NAME.match(part):
            raise SqlGuardError(
                where,
                found=repr(raw),
                expected="plain column names separated by |",
                remedy="write the column names as the SELECT returns them, e.g. id|region",
            )
    if len({n.lower() for n in names}) != len(names):
        raise SqlGuardError(where, found=repr(raw), expected="each column once", remedy="remove the repeated name")
    return names


def read_sql_file(sql_files_dir: Path, raw: str, task_code: str) -> str:
    """A SELECT file inside sql_files/: relative, without .., ending .sql, existing."""
    where = _where(task_code, "SOURCE_SQL_FILE")
    path = PurePosixPath(raw.strip())
    if path.is_absolute() or ".." in path.parts or not raw.strip():
        raise SqlGuardError(
            where,
            found=repr(raw),
            expected=f"a relative path inside {sql_files_dir} without ..",
            remedy="name the file relative to sql_files/, e.g. sales/orders.sql",
        )
    if path.suffix != ".sql":
        raise SqlGuardError(where, found=repr(raw), expected="a file ending .sql", remedy="rename the file to .sql")
    full = sql_files_dir.joinpath(*path.parts)
    if not full.is_file():
        known = (
            [p.relative_to(sql_files_dir).as_posix() for p in sql_files_dir.rglob("*.sql")]
            if sql_files_dir.is_dir()
            else []
        )
        matches = close_matches(path.as_posix(), known)
        hint = f"did you mean: {', '.join(matches)}" if matches else "create it, or correct SOURCE_SQL_FILE"
        raise SqlGuardError(
            f"{where}={raw!r}", found=f"no such file {full}", expected="an existing file in sql_files/", remedy=hint
        )
    try:
        data = full.read_bytes()
        return data.decode("utf-8")
    except OSError as exc:
        raise SqlGuardError(
            f"{where}={raw!r}", found=f"{full}, which can't be read ({exc.strerror})", expected="a readable file"
        ) from None
    except UnicodeDecodeError as exc:
        raise SqlGuardError(
            f"{where}={raw!r}",
            found=f"{full}: {not_utf8(data, exc)}",
            expected="SQL text in UTF-8",
            remedy="save it as UTF-8",
        ) from None


def token_values(identity: TaskIdentity) -> dict[str, str]:
    run_filter = "1=1" if identity.refresh_type == "FULL" else f"pipeline_run_id = {identity.pipeline_run_id}"
    return {
        "pipeline_id": str(identity.pipeline_id),
        "pipeline_run_id": str(identity.pipeline_run_id),
        "task_run_id": str(identity.task_run_id),
        "pipeline_run_id_filter": run_filter,
        "run_date": f"DATE '{identity.run_date.isoformat()}'",
    }


def source_text(parameters: Mapping[str, str], sql_files_dir: Path, task_code: str) -> tuple[str, str]:
    """(raw SELECT, label) from exactly one of SOURCE_SQL and SOURCE_SQL_FILE."""
    inline = parameters.get("SOURCE_SQL")
    file_name = parameters.get("SOURCE_SQL_FILE")
    if (inline is None) == (file_name is None):
        raise SqlGuardError(
            _where(task_code, "SOURCE_SQL / SOURCE_SQL_FILE"),
            found="both" if inline is not None else "neither",
            expected="exactly one of SOURCE_SQL and SOURCE_SQL_FILE",
            remedy="keep one of them",
        )
    if inline is not None:
        return inline, "SOURCE_SQL"
    assert file_name is not None
    return read_sql_file(sql_files_dir, file_name, task_code), f"SOURCE_SQL_FILE {file_name!r}"


def parse_spec(
    parameters: Mapping[str, str],
    identity: TaskIdentity,
    sql_files_dir: Path,
    sqlglot_dialect: str,
    storage_parameters: tuple[str, ...] = (),
    state_changing: frozenset[str] = frozenset(),
) -> SqlTaskSpec:
    task = identity.task_code
    action = parameters.get("SQL_ACTION")
    if action not in ACTIONS:
        raise SqlGuardError(
            _where(task, "SQL_ACTION"),
            found=repr(action) if action is not None else "nothing",
            expected="one of " + ", ".join(ACTIONS),
            remedy="set SQL_ACTION to the write this task makes",
        )
    target = parse_target(parameters.get("TARGET_OBJECT"), task)
    for name in STORAGE_PARAMETERS:
        if name in parameters and name not in storage_parameters:
            raise SqlGuardError(
                _where(task, name),
                found=repr(parameters[name]),
                expected="no storage parameter this warehouse does not use",
                remedy=f"remove {name}; it applies to other warehouses",
            )
    table_format = parameters.get("TABLE_FORMAT")  # the dialect checks it (check_warehouse_fit)
    switches = {name: yes_no(parameters, name, task) for name in TOKEN_SWITCHES.values()}
    select: str | None = None
    label = ""
    if action == "DROP_TABLE":
        if "SOURCE_SQL" in parameters or "SOURCE_SQL_FILE" in parameters:
            raise SqlGuardError(
                _where(task, "SOURCE_SQL"),
                found="a SELECT on a DROP_TABLE task",
                expected="no SOURCE_SQL or SOURCE_SQL_FILE",
                remedy="remove the SELECT; DROP_TABLE reads nothing",
            )
    else:
        raw, label = source_text(parameters, sql_files_dir, task)
        substituted = substitute(raw, token_values(identity), switches, f"task {task}: {label}")
        refuse_source_binds(substituted, sqlglot_dialect, f"task {task}: {label}")
        select = strip_trailing(substituted)
        check_read_only(select, sqlglot_dialect, f"task {task}: {label}", state_changing)
    setup_for = parameters.get("SETUP_FOR")
    if setup_for is not None and setup_for not in ACTION_COLUMNS:
        raise SqlGuardError(
            _where(task, "SETUP_FOR"),
            found=repr(setup_for),
            expected="one of " + ", ".join(ACTION_COLUMNS),
            remedy="name the action that writes the target",
        )
    dedupe = (parameters.get("MERGE_DEDUPE_ORDER") or "").strip() or None
    if dedupe is not None and ";" in dedupe:
        raise SqlGuardError(
            _where(task, "MERGE_DEDUPE_ORDER"),
            found=repr(dedupe),
            expected="an ORDER BY list such as updated_at DESC",
            remedy="remove the ;",
        )
    return SqlTaskSpec(
        action=action,
        target=target,
        select=select,
        source_label=label,
        merge_key=name_list(parameters, "MERGE_KEY", task, required=action in KEYED_ACTIONS),
        compare_columns=name_list(parameters, "MERGE_COMPARE_COLUMNS", task, required=action in MERGE_ACTIONS),
        dedupe_order=dedupe,
        setup_for=setup_for,
        schema_evolution=yes_no(parameters, "SCHEMA_EVOLUTION", task),
        preserve_target=yes_no(parameters, "PRESERVE_TARGET", task),
        hard_delete=yes_no(parameters, "HARD_DELETE", task),
        delete_missing_keys=delete_missing_keys(parameters, action, task),
        table_format=table_format,
    )
