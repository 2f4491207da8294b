"""The task-parameter tables of the guides say what the code does: which parameters each handler reads,
which are required, and what an absent one means.

Each guide's table has `Parameter`, `Required` and `Default` columns (the SQL one also `Actions`).
The code is not read for declarations but asked: each parameter is left out of a valid set (or set to
a probe value) and the handler's own parsing says whether it refuses, and what it takes instead.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from etl_craft.config.model import OrchestrationSettings
from etl_craft.core.enums import Handler, RunCondition
from etl_craft.core.errors import EtlCraftError
from etl_craft.execution.graph import TaskNode
from etl_craft.execution.settings import COMMON_PARAMETERS, task_settings
from etl_craft.handlers.email_alert.template import OUTCOMES, parse_parameters
from etl_craft.handlers.python_script import input_params, script_file
from etl_craft.handlers.sql.spec import ACTIONS, SQL_PARAMETERS, TaskIdentity, parse_spec
from etl_craft.handlers.sql.text import TOKEN_SWITCHES
from etl_craft.services.validate.email_alerts import EMAIL_PARAMETERS

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[3] / "docs" / "guides"
GUIDES = {
    "all": "running.md",
    "SQL": "sql-tasks.md",
    "EMAIL_ALERT": "email-alerts.md",
    "PYTHON": "ingestion-scripts.md",
}
NO_DEFAULT = "-"


@dataclasses.dataclass(frozen=True)
class Row:
    guide: str
    names: tuple[str, ...]
    required: str
    default: str
    actions: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.guide}: {', '.join(self.names)} (Required {self.required!r}, Default {self.default!r})"


def _cells(row: list[str]) -> list[str]:
    return [" ".join(cell.split()) for cell in row]


def _tables(text: str) -> list[list[list[str]]]:
    """Every table of a page as rows of cell texts (inline code keeps its backticks)."""
    tables, current, row = [], [], []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type == "table_open":
            current = []
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and token.children is not None and current is not None:
            row.append("".join(f"`{c.content}`" if c.type == "code_inline" else c.content for c in token.children))
        elif token.type == "tr_close":
            current.append(_cells(row))
        elif token.type == "table_close":
            tables.append(current)
    return tables


def _actions(cell: str) -> tuple[str, ...]:
    if cell == "all":
        return ACTIONS
    if cell.startswith("all but "):
        left_out = {a.strip() for a in cell.removeprefix("all but ").split(",")}
        return tuple(a for a in ACTIONS if a not in left_out)
    if cell.startswith("none"):
        return ()
    return tuple(a.strip() for a in cell.split(","))


def _names(cell: str) -> tuple[str, ...]:
    names = re.findall(r"`([A-Z_<>]+)`", cell)
    return tuple(n.replace("<OUTCOME>", o) for n in names for o in (OUTCOMES if "<OUTCOME>" in n else ("",)))


def documented(handler: str) -> list[Row]:
    """The rows of the guide's parameter table: the one whose header has Parameter, Required and Default."""
    guide = GUIDES[handler]
    for table in _tables((DOCS / guide).read_text(encoding="utf-8")):
        header = table[0]
        if header[0] == "Parameter" and "Required" in header and "Default" in header:
            at = {name: header.index(name) for name in header}
            return [
                Row(
                    guide,
                    _names(cells[0]),
                    cells[at["Required"]],
                    cells[at["Default"]],
                    _actions(cells[at["Actions"]]) if "Actions" in at else (),
                )
                for cells in table[1:]
            ]
    raise AssertionError(f"{guide} has no table with Parameter, Required and Default columns")


def _refusal(parse: Callable[[Mapping[str, str]], object], parameters: Mapping[str, str]) -> str | None:
    try:
        parse(parameters)
    except EtlCraftError as error:
        return error.message
    return None


def _check_required(row: Row, name: str, refusal: Callable[[dict[str, str]], str | None], full: dict[str, str]) -> None:
    """The Required claim, for one parameter of the row, against the parsing of a valid set without it."""
    without = {k: v for k, v in full.items() if k != name}
    if row.required == "no":
        assert refusal(without) is None, f"{row}: {name} left out is refused: {refusal(without)}"
        return
    refused = refusal(without)
    assert refused is not None and name in refused, f"{row}: {name} left out is not refused ({refused})"
    unless = row.required.partition("unless")[2]
    for alternative in re.findall(r"`([A-Z_<>]+)`", unless):
        given = {n: "ALL" if n == "EMAIL_PIPELINES" else "x" for n in _names(f"`{alternative}`")}
        assert refusal({**without, **given}) is None, f"{row}: {name} is still refused with {alternative} set"


# --- SQL ------------------------------------------------------------------------------------------


def _sql_full(action: str) -> dict[str, str]:
    full = {
        "SQL_ACTION": action,
        "TARGET_OBJECT": "mart.orders",
        "MERGE_KEY": "id",
        "MERGE_COMPARE_COLUMNS": "id",
        "MERGE_DEDUPE_ORDER": "id DESC",
        "SETUP_FOR": "SCD1_MERGE",
        "SCHEMA_EVOLUTION": "false",
        "PRESERVE_TARGET": "false",
        "HARD_DELETE": "false",
        "TABLE_FORMAT": "native",
        **dict.fromkeys(TOKEN_SWITCHES.values(), "false"),
    }
    return full if action == "DROP_TABLE" else {**full, "SOURCE_SQL": "SELECT 1 AS id"}


@pytest.fixture
def sql_parse(tmp_path: Path) -> Callable[[Mapping[str, str]], object]:
    (tmp_path / "orders.sql").write_text("SELECT 1 AS id")
    identity = TaskIdentity("t", 1, 1, 1, "FULL", date(2026, 10, 1))
    return lambda parameters: parse_spec(parameters, identity, tmp_path, "duckdb")


def test_the_sql_table_lists_every_parameter_the_sql_handler_reads() -> None:
    names = [name for row in documented("SQL") for name in row.names]
    assert sorted(names) == sorted(SQL_PARAMETERS)


def test_the_sql_table_says_which_parameters_each_action_requires(sql_parse) -> None:
    for row in documented("SQL"):
        for action in ACTIONS:
            full = _sql_full(action)
            refusal = lambda p: _refusal(sql_parse, p)  # noqa: E731
            assert refusal(full) is None
            if row.required == "one of them":
                # Exactly one of the names: each can stand in for the others, none at all is refused.
                alone = {k: v for k, v in full.items() if k not in row.names}
                if action in row.actions:
                    assert refusal({**alone, "SOURCE_SQL_FILE": "orders.sql"}) is None, row
                    assert " / ".join(row.names) in (refusal(alone) or ""), f"{row}: {action} without any"
                else:
                    assert refusal(alone) is None, f"{row}: {action} without any is refused"
                continue
            for name in row.names:
                claim = row if action in row.actions else dataclasses.replace(row, required="no")
                _check_required(claim, name, refusal, full)


def test_the_sql_table_gives_each_optional_parameter_s_default(sql_parse) -> None:
    for row in documented("SQL"):
        assert (row.default == NO_DEFAULT) == (row.required != "no"), f"{row}: a default exactly when optional"
        for name in row.names:
            action = row.actions[0] if row.actions else "CREATE_TABLE"
            full = _sql_full(action)
            yes_no = "exactly true or false" in (_refusal(sql_parse, {**full, name: "maybe"}) or "")
            assert yes_no == (row.default == "`false`"), f"{row}: {name} is {'' if yes_no else 'not '}yes/no"
            if yes_no:
                without = {k: v for k, v in full.items() if k != name}
                assert sql_parse(without) == sql_parse({**without, name: "false"}), f"{row}: absent is not false"
            if row.default == "`Warehouse.Table_format`":
                # None: the dialect applies the Warehouse section's Table_format.
                assert sql_parse({k: v for k, v in full.items() if k != name}).table_format is None  # type: ignore[attr-defined]


# --- every task -----------------------------------------------------------------------------------


def _node(**parameters: str) -> TaskNode:
    return TaskNode(1, "t", Handler.PYTHON, "ETL", RunCondition.ALL, None, parameters=parameters)


def test_the_common_table_lists_every_parameter_every_task_takes() -> None:
    rows = documented("all")
    assert sorted(name for row in rows for name in row.names) == sorted(COMMON_PARAMETERS)
    assert {row.required for row in rows} == {"no"}


def test_the_common_table_gives_each_setting_s_default() -> None:
    default = OrchestrationSettings()
    plain = task_settings(_node(), default)  # nothing required: no parameter at all is fine
    for row in documented("all"):
        (name,) = row.names
        moved = [
            f.name
            for f in dataclasses.fields(plain)
            if getattr(task_settings(_node(**{name: "7"}), default), f.name) != getattr(plain, f.name)
        ]
        if not moved:
            assert row.default == "none", f"{row}: the engine does not act on {name}"
            continue
        (field,) = moved
        from_config = re.fullmatch(r"`Orchestration\.(\w+)` \(([\d,.]+)\)", row.default)
        if from_config:
            key, value = from_config.group(1).lower(), float(from_config.group(2).replace(",", ""))
            assert getattr(default, key) == value == getattr(plain, field), row
            changed = dataclasses.replace(default, **{key: 5})
            assert getattr(task_settings(_node(), changed), field) == 5, f"{row}: not taken from Orchestration"
        else:
            assert getattr(plain, field) == float(row.default), row


# --- EMAIL_ALERT ----------------------------------------------------------------------------------


def test_the_email_table_lists_every_email_parameter() -> None:
    names = [name for row in documented("EMAIL_ALERT") for name in row.names]
    assert sorted(names) == sorted(EMAIL_PARAMETERS)


def test_the_email_table_says_what_is_required_and_the_defaults() -> None:
    full = {"EMAIL_TO": "data@example.com", "EMAIL_SUBJECT": "$$status", "EMAIL_BODY": "done"}
    parse = lambda p: parse_parameters("alert", p)  # noqa: E731
    for row in documented("EMAIL_ALERT"):
        assert (row.default == NO_DEFAULT) == (row.required != "no"), f"{row}: a default exactly when optional"
        for name in row.names:
            _check_required(row, name, lambda p: _refusal(parse, p), full)
    defaults = {name: row.default for row in documented("EMAIL_ALERT") for name in row.names}
    assert parse(full).on_status == tuple(re.findall(r"[A-Z_]+", defaults["EMAIL_ON_STATUS"]))
    assert parse(full).pipelines is None and defaults["EMAIL_PIPELINES"].startswith("none")


# --- PYTHON ---------------------------------------------------------------------------------------


def test_the_script_table_says_what_is_required_and_the_defaults(tmp_path: Path) -> None:
    rows = {name: row for row in documented("PYTHON") for name in row.names}
    assert {"SCRIPT_NAME", "INPUT_PARAMS"} <= rows.keys()
    (tmp_path / "job.py").write_text("def run(task):\n    pass\n")
    assert script_file("job.py", tmp_path)[1] == "job.py"
    with pytest.raises(EtlCraftError, match="SCRIPT_NAME: missing"):
        script_file(None, tmp_path)
    assert (rows["SCRIPT_NAME"].required, rows["SCRIPT_NAME"].default) == ("yes", NO_DEFAULT)
    # The handler reads nothing else but INPUT_PARAMS, whose absence is an empty object.
    assert input_params(None) == {} and rows["INPUT_PARAMS"].default == "`{}`"
    assert {row.required for name, row in rows.items() if name != "SCRIPT_NAME"} == {"no"}
