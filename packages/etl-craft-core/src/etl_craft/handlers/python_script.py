"""The PYTHON handler: run an ingestion script inside the task's process and check what it returns.

The handler never writes the Engine DB. It returns the script's counts, variables and offset, and
the task process stores the offset in the transaction that records the attempt SUCCESS (S3.F), so
an offset is kept if and only if the attempt succeeded. Everything the script returned is checked
before anything is returned (S2.E.3): a result with any problem fails the attempt as a whole.
"""

from __future__ import annotations

import json
import logging
import operator
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, SupportsIndex

from etl_craft.core.enums import OffsetType
from etl_craft.core.errors import EtlCraftError, HandlerError
from etl_craft.core.redaction import quiet_url_loggers
from etl_craft.core.text import one_line
from etl_craft.handlers.context import Counts, HandlerResult, StoredOffset, TaskContext
from etl_craft.handlers.script_loader import find_run, folder_on_path, load_script
from etl_craft.handlers.task_files import resolve_task_file
from etl_craft.scripting import Offset, ScriptContractError, ScriptResult, ScriptTask

SCRIPT_LOGGER_PREFIX = "etl_craft_script."
# TASK_LOG lines the task process writes itself; a variable may not shadow them.
RESERVED_VARIABLES = frozenset(
    {"SOURCE_COUNT", "TARGET_COUNT", "INSERT_COUNT", "UPDATE_COUNT", "DELETE_COUNT", "OFFSET"}
)
VARIABLE_TYPES = (str, int, float, Decimal, bool, date, datetime, type(None))
VARIABLE_TEXT_LIMIT = 1000
RESULT_SHAPE = (
    "ScriptResult(row_count=<int ≥ 0>, offset=<Offset or None>, variables=<mapping of names to values or None>)"
)
# The two steps a script's exception can interrupt, and where each says the exception was raised.
IMPORTING, RUNNING = "importing the script", "running run"
_FAILURE_PLACES = {IMPORTING: "while importing the script", RUNNING: "in run"}


def input_params(text: str | None) -> dict[str, Any]:
    """INPUT_PARAMS as a dict; the text itself never reaches a message, since it may hold a key."""
    if text is None or not text.strip():
        return {}
    expected = 'a JSON object, e.g. {"since_days": 3}'
    remedy = "correct INPUT_PARAMS in the task's CFG_TASK_PARAMETERS"

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in pairs]
        doubled = sorted({name for name in names if names.count(name) > 1})
        if doubled:
            found = f"the key {doubled[0]!r} twice" if len(doubled) == 1 else f"repeated keys {doubled}"
            raise ScriptContractError("INPUT_PARAMS", found=found, expected=expected, remedy=remedy)
        return dict(pairs)

    def constant(name: str) -> object:
        raise ScriptContractError(
            "INPUT_PARAMS", found=name, expected=f"{expected}, with finite numbers", remedy=remedy
        )

    try:
        value = json.loads(text, object_pairs_hook=unique, parse_constant=constant)
    except json.JSONDecodeError as exc:
        found = f"text that is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        raise ScriptContractError("INPUT_PARAMS", found=found, expected=expected, remedy=remedy) from None
    if not isinstance(value, dict):
        kinds = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean", type(None): "null"}
        found = kinds.get(type(value), "a JSON number")
        raise ScriptContractError("INPUT_PARAMS", found=found, expected=expected, remedy=remedy)
    return value


def stored_offset(ctx: TaskContext) -> Offset | None:
    """The offset the script starts from: none in a backfill, none before the first stored one."""
    stored = ctx.stored_offset
    if ctx.backfill or stored is None or stored.value is None:
        return None
    try:
        return Offset(stored.value, stored.type.value)
    except ScriptContractError as exc:
        raise ScriptContractError(
            f"the stored offset of task {ctx.task_code} (AUD_TASK_OFFSET_TRACKER, TASK_ID {ctx.task_id})",
            found=f"{stored.value!r} of type {stored.type.value}, which can't be read ({exc})",
            expected=f"text that casts to {stored.type.value}",
            remedy="have an operator correct or remove the stored offset",
        ) from None


def _row_count_problem(row_count: object) -> str | None:
    if isinstance(row_count, bool):
        return f"row_count {row_count} (a bool)"
    if not isinstance(row_count, SupportsIndex):  # an int, or an integer type such as numpy.int64
        return f"row_count {one_line(repr(row_count), 80)} (a {type(row_count).__name__}, not an int)"
    count = operator.index(row_count)
    return f"row_count {count} (negative)" if count < 0 else None


def _offset_problem(offset: object, ctx: TaskContext) -> str | None:
    if offset is None:
        return None
    if not isinstance(offset, Offset):
        shown = one_line(repr(offset), 80)
        return f"offset {shown} (a {type(offset).__name__}, not an Offset: wrap it, e.g. Offset.number(v))"
    stored = ctx.stored_offset
    if not ctx.backfill and stored is not None and stored.type.value != offset.datatype:
        return (
            f"offset type {offset.datatype}, but the stored offset of this task is {stored.type.value} "
            f"(an offset keeps its type: return Offset(..., '{stored.type.value}'))"
        )
    return None


def _variable_problems(variables: object) -> list[str]:
    if variables is None:
        return []
    if not isinstance(variables, Mapping):
        return [f"variables a {type(variables).__name__}, not a mapping of names to values"]
    problems = []
    for name, value in variables.items():
        if not isinstance(name, str) or not name.strip() or any(ch.isspace() or ch == "=" for ch in name):
            problems.append(f"variable name {name!r} (names are non-empty text without spaces or '=')")
        elif name.upper() in RESERVED_VARIABLES:
            problems.append(f"variable name {name!r} (reserved for the task's own TASK_LOG lines)")
        elif not isinstance(value, VARIABLE_TYPES):
            problems.append(f"variable {name} a {type(value).__name__} (values are text, numbers, dates or None)")
    return problems


def check_result(result: object, ctx: TaskContext, relative: str) -> HandlerResult:
    """Check every part of what `run` returned, then turn it into the handler's result.

    All problems are reported together; none of the result is used unless all of it is valid.
    """
    subject = f"the result of ingestion script {relative}"
    remedy = "fix what run returns; nothing from this attempt was stored"
    if not isinstance(result, ScriptResult):
        raise ScriptContractError(
            subject, found=f"run returned {one_line(repr(result), 80)}", expected=RESULT_SHAPE, remedy=remedy
        )
    problems = [
        problem
        for problem in (_row_count_problem(result.row_count), _offset_problem(result.offset, ctx))
        if problem is not None
    ]
    problems += _variable_problems(result.variables)
    if problems:
        raise ScriptContractError(subject, found="; ".join(problems), expected=RESULT_SHAPE, remedy=remedy)
    count = operator.index(result.row_count)
    offset = None
    if result.offset is not None:
        if ctx.backfill:
            ctx.log.info("backfill: the returned offset %s is not stored", result.offset.stored_text)
        else:
            offset = StoredOffset(OffsetType(result.offset.datatype), result.offset.stored_text)
    variables = tuple(
        (name, one_line(str(value), VARIABLE_TEXT_LIMIT)) for name, value in (result.variables or {}).items()
    )
    return HandlerResult(counts=Counts(source=count, target=count, inserted=count), offset=offset, variables=variables)


def _script_traceback(
    exc: BaseException, path: Path
) -> tuple[type[BaseException], BaseException, TracebackType | None]:
    """The exception's traceback from the script's first frame on, without the handler's frames."""
    tb = exc.__traceback__
    while tb is not None and Path(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    return type(exc), exc, tb or exc.__traceback__


def _exit_error(exc: SystemExit, relative: str, where: str) -> ScriptContractError:
    return ScriptContractError(
        f"ingestion script {relative}",
        found=f"sys.exit({exc.code!r}) {where}",
        expected="run to return a ScriptResult, or to raise an exception to fail the task",
        remedy="replace sys.exit: return ScriptResult(...) to succeed, raise an exception to fail",
    )


def _failure(exc: Exception, ctx: TaskContext, path: Path, relative: str, step: str) -> EtlCraftError:
    """Log the script's traceback; the error to fail the attempt with (an etl-craft error is kept).

    The caller raises it `from None`: the traceback that matters, from the script's frames on, is
    already in the attempt log, so the task process's own traceback stays short.
    """
    ctx.log.error("ingestion script %s failed while %s", relative, step, exc_info=_script_traceback(exc, path))
    if isinstance(exc, EtlCraftError):
        return exc
    message = one_line(str(exc), 1000)
    found = f"{type(exc).__name__} raised {_FAILURE_PLACES[step]}" + (f": {message}" if message else "")
    if step == IMPORTING:
        return HandlerError(
            f"ingestion script {relative}",
            found=found,
            expected="the script to import without an exception",
            remedy="see the traceback in the attempt log, fix the script or what it imports, then rerun the task",
        )
    # Raising is how a script fails its task on purpose: say so, rather than that it broke the contract.
    return HandlerError(
        f"ingestion script {relative}",
        found=found,
        expected="run to finish without an exception (raising one is how a script fails its task)",
        remedy="the script failed the task: see its traceback in the attempt log, fix the cause, then rerun the task",
    )


def _refuse_awaitable(result: object, relative: str) -> None:
    if not hasattr(result, "__await__"):
        return
    close = getattr(result, "close", None)
    if close is not None:
        close()  # never awaited: close it so Python doesn't warn
    raise ScriptContractError(
        f"ingestion script {relative}",
        found="run returned an awaitable",
        expected="a plain def run that returns a ScriptResult",
        remedy="call asyncio.run(...) inside run instead of making it async",
    )


def script_file(script_name: str | None, folder: Path) -> tuple[Path, str]:
    """The script SCRIPT_NAME names inside ingestion_scripts/, and its normalised relative path."""
    return resolve_task_file("SCRIPT_NAME", script_name, folder, ".py", "crm/customers.py")


def run(ctx: TaskContext) -> HandlerResult:
    """Load the task's script, call its `run` and return the checked result."""
    path, relative = script_file(ctx.parameters.get("SCRIPT_NAME"), ctx.config.scripts_dir)
    params = input_params(ctx.parameters.get("INPUT_PARAMS"))
    offset = stored_offset(ctx)
    with folder_on_path(path.parent):
        try:
            module = load_script(path, relative)
        except SystemExit as exc:
            raise _exit_error(exc, relative, "while the script was imported") from None
        except Exception as exc:
            raise _failure(exc, ctx, path, relative, IMPORTING) from None
        script_run, takes_task = find_run(module, relative)
        quiet_url_loggers()  # again: the script's imports may have set a library's level (S2.G.9)
        task = ScriptTask(
            task_code=ctx.task_code,
            script_name=relative,
            offset=offset,
            input_params=params,
            pipeline_id=ctx.pipeline_id,
            pipeline_code=ctx.pipeline_code,
            pipeline_run_id=ctx.pipeline_run_id,
            task_run_id=ctx.task_run_id,
            attempt_number=ctx.attempt_number,
            refresh_type=ctx.refresh_type,
            force=ctx.force,
            run_date=ctx.run_date,
            backfill=ctx.backfill,
            task_params=MappingProxyType(dict(ctx.parameters)),
            config=ctx.config,
            logger=logging.getLogger(SCRIPT_LOGGER_PREFIX + ctx.task_code),
            _engine_db=ctx.engine_db,
        )
        shown = "none" if offset is None else f"{offset.stored_text} ({offset.datatype})"
        ctx.log.info("running ingestion script %s from offset %s", relative, shown)
        try:
            result = script_run(task) if takes_task else script_run()
        except SystemExit as exc:
            raise _exit_error(exc, relative, "inside run") from None
        except Exception as exc:
            raise _failure(exc, ctx, path, relative, RUNNING) from None
    _refuse_awaitable(result, relative)
    return check_result(result, ctx, relative)
