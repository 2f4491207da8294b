"""The PYTHON handler: real script files in a real project, run through `python_script.run(ctx)`."""

from __future__ import annotations

import logging
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from etl_craft.config.loader import load_config
from etl_craft.core.enums import Handler, OffsetType, TriggerKind
from etl_craft.core.errors import EtlCraftError, ExitCode, HandlerError
from etl_craft.core.redaction import URL_LOGGERS
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.handlers import python_script
from etl_craft.handlers.context import Counts, HandlerResult, StoredOffset, TaskContext
from etl_craft.scripting import ScriptContractError

pytestmark = pytest.mark.unit

WAREHOUSE = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"
RETURN_ROWS = "from etl_craft.scripting import ScriptResult\n\ndef run(task):\n    return ScriptResult(row_count=3)\n"


class ScriptProject:
    """A project folder with craft-connector.yml, a SQLite Engine DB file and ingestion_scripts/."""

    def __init__(self, root: Path, sections: str = WAREHOUSE, environ: dict[str, str] | None = None) -> None:
        self.root = root
        config_text = (
            "Secrets:\n  Source_type: environment\n"
            "Orchestration:\n  Mode: local\n"
            "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n" + sections
        )
        (root / "craft-connector.yml").write_text(config_text, encoding="utf-8")
        self.config = load_config(root / "craft-connector.yml", environ or {})
        self.engine_db: EngineDb = open_engine_db(self.config, pooled=False, create=True)

    @property
    def scripts(self) -> Path:
        return self.root / "ingestion_scripts"

    def script(self, body: str, name: str = "job.py") -> Path:
        path = self.scripts / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body), encoding="utf-8")
        return path

    def context(
        self,
        script: str | None = "job.py",
        *,
        stored: StoredOffset | None = None,
        trigger: TriggerKind = TriggerKind.MANUAL,
        **parameters: str,
    ) -> TaskContext:
        params = dict(parameters)
        if script is not None:
            params["SCRIPT_NAME"] = script
        return TaskContext(
            config=self.config,
            engine_db=self.engine_db,
            log=logging.getLogger("etl_craft.task"),
            pipeline_id=4,
            pipeline_code="SALES",
            refresh_type="INCREMENTAL",
            pipeline_run_id=97,
            run_key="2026-01-31",
            run_date=date(2026, 1, 31),
            trigger_kind=trigger,
            task_id=12,
            task_code="load_orders",
            task_type="INGESTION",
            handler=Handler.PYTHON,
            task_run_id=501,
            attempt_id=900,
            attempt_number=2,
            owner_id="test-owner",
            parameters=params,
            stored_offset=stored,
        )

    def run(self, body: str | None = None, name: str = "job.py", **kwargs: object) -> HandlerResult:
        if body is not None:
            self.script(body, name)
        return python_script.run(self.context(name, **kwargs))  # type: ignore[arg-type]

    def refuse(self, body: str | None = None, name: str | None = "job.py", **kwargs: object) -> HandlerError:
        """The HandlerError (exit 15) running the task raises."""
        if body is not None and name is not None:
            self.script(body, name)
        with pytest.raises(HandlerError) as caught:
            python_script.run(self.context(name, **kwargs))  # type: ignore[arg-type]
        assert caught.value.exit_code == ExitCode.HANDLER
        return caught.value


@pytest.fixture
def scripts(tmp_path: Path) -> Iterator[ScriptProject]:
    project = ScriptProject(tmp_path)
    yield project
    project.engine_db.dispose()


@pytest.fixture(autouse=True)
def _clean_interpreter() -> Iterator[None]:
    """Each test starts without earlier scripts' modules and with the library loggers as they were."""
    levels = {name: logging.getLogger(name).level for name in URL_LOGGERS}
    path = list(sys.path)
    yield
    for name in [name for name in sys.modules if name.startswith("etl_craft_script_")]:
        del sys.modules[name]
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    sys.path[:] = path


def stored(kind: str, text: str | None) -> StoredOffset:
    return StoredOffset(OffsetType(kind), text)


# --- Loading scripts as real modules (S2.E.1) -------------------------------------------------


@pytest.mark.parametrize("future", ["", "from __future__ import annotations\n"])
def test_b19_dataclasses_in_scripts_load(scripts, future):
    result = scripts.run(
        future
        + textwrap.dedent(
            """
            from dataclasses import dataclass, field
            from etl_craft.scripting import ScriptResult

            @dataclass
            class Row:
                id: int
                tags: list[str] = field(default_factory=list)

            @dataclass(frozen=True)
            class Batch:
                rows: tuple[Row, ...]

            def run(task):
                batch = Batch((Row(1), Row(2, ["x"])))
                return ScriptResult(row_count=len(batch.rows))
            """
        )
    )
    assert result.counts == Counts(source=2, target=2, inserted=2)


def test_a_script_class_pickles(scripts):
    result = scripts.run(
        """
        import pickle
        from dataclasses import dataclass
        from etl_craft.scripting import ScriptResult

        @dataclass
        class Cursor:
            position: int

        def run(task):
            copy = pickle.loads(pickle.dumps(Cursor(41)))
            assert type(copy) is Cursor
            return ScriptResult(row_count=copy.position + 1)
        """
    )
    assert result.counts.source == 42


def test_an_enum_in_a_script_works_and_pickles(scripts):
    result = scripts.run(
        """
        import enum, pickle
        from etl_craft.scripting import ScriptResult

        class Mode(enum.Enum):
            FULL = "full"
            DELTA = "delta"

        def run(task):
            assert pickle.loads(pickle.dumps(Mode.DELTA)) is Mode.DELTA
            return ScriptResult(row_count=len(Mode))
        """
    )
    assert result.counts.source == 2


def test_typing_get_type_hints_resolves_names_of_the_script(scripts):
    result = scripts.run(
        """
        from __future__ import annotations
        import typing
        from dataclasses import dataclass
        from etl_craft.scripting import ScriptResult, ScriptTask

        @dataclass
        class Page:
            number: int
            next_page: Page | None = None

        def run(task: ScriptTask) -> ScriptResult:
            hints = typing.get_type_hints(Page)
            assert hints["next_page"] == typing.Optional[Page]
            assert typing.get_type_hints(run)["task"] is ScriptTask
            return ScriptResult(row_count=1)
        """
    )
    assert result.counts.source == 1


def test_process_pool_with_the_fork_start_method_runs_script_functions(scripts):
    result = scripts.run(
        """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from dataclasses import dataclass
        from etl_craft.scripting import ScriptResult

        @dataclass
        class Part:
            size: int

        def measure(part):
            return part.size * 2

        def run(task):
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
                sizes = list(pool.map(measure, [Part(1), Part(2), Part(3)]))
            return ScriptResult(row_count=sum(sizes))
        """
    )
    assert result.counts.source == 12


def test_the_loaders_future_flags_do_not_leak_into_scripts(scripts):
    result = scripts.run(
        """
        from etl_craft.scripting import ScriptResult

        def typed(x: int) -> str: ...

        def run():
            assert typed.__annotations__ == {"x": int, "return": str}, typed.__annotations__
            return ScriptResult(row_count=0)
        """
    )
    assert result.counts.source == 0


def test_the_module_is_named_after_the_path_and_has_a_spec(scripts):
    path = scripts.script(
        """
        import inspect, sys
        from etl_craft.scripting import ScriptResult

        def run(task):
            module = sys.modules[__name__]
            assert __name__ == "etl_craft_script_crm_customers_py"
            assert __spec__.name == __name__ and __spec__.origin == __file__
            assert "def run(task)" in inspect.getsource(module)
            return ScriptResult(row_count=1)
        """,
        "crm/customers.py",
    )
    scripts.run(name="./crm//customers.py")
    module = sys.modules["etl_craft_script_crm_customers_py"]
    assert module.__file__ == str(path)


def test_helper_modules_beside_the_script_import(scripts):
    scripts.script("def page_size():\n    return 7\n", "crm/crm_paging_helper.py")
    scripts.script(
        """
        from crm_paging_helper import page_size
        from etl_craft.scripting import ScriptResult

        def run(task):
            return ScriptResult(row_count=page_size())
        """,
        "crm/customers.py",
    )
    before = list(sys.path)
    assert scripts.run(name="crm/customers.py").counts.source == 7
    assert sys.path == before


def test_a_failing_import_is_a_handler_error_and_unregisters_the_module(scripts, caplog):
    error = scripts.refuse("import json\nraise RuntimeError('no API key configured')\n")
    assert "ingestion script job.py" in str(error)
    assert "RuntimeError raised while importing the script: no API key configured" in str(error)
    assert error.retryable
    assert "etl_craft_script_job_py" not in sys.modules
    assert 'job.py", line 2' in caplog.text


def test_a_syntax_error_names_the_line_and_does_not_retry(scripts):
    error = scripts.refuse("def run(task):\n    return (\n")
    assert isinstance(error, ScriptContractError) and not error.retryable
    assert "ingestion script job.py: found SyntaxError at line 2" in str(error)
    assert "python -m py_compile" in str(error)


def test_an_importerror_names_the_missing_module(scripts):
    error = scripts.refuse("import etl_craft_no_such_module\n")
    assert "ModuleNotFoundError raised while importing the script: No module named 'etl_craft_no_such_module'" in str(
        error
    )


# --- run's shape ----------------------------------------------------------------------------------


def test_run_without_a_parameter_is_called_without_the_task(scripts):
    body = "from etl_craft.scripting import ScriptResult\n\ndef run():\n    return ScriptResult(5)\n"
    assert scripts.run(body).counts.source == 5


def test_run_with_an_optional_second_parameter_is_accepted(scripts):
    body = "from etl_craft.scripting import ScriptResult\n\ndef run(task, dry=False):\n    return ScriptResult(1)\n"
    assert scripts.run(body).counts.source == 1


def test_a_script_without_run_is_refused(scripts):
    error = scripts.refuse("def main(task):\n    pass\n")
    assert "ingestion script job.py: found no top-level run" in str(error)
    assert "def run(task: ScriptTask) -> ScriptResult" in str(error)
    assert not error.retryable


def test_a_run_that_is_not_callable_is_refused(scripts):
    assert "found run is a int" in str(scripts.refuse("run = 5\n"))


def test_async_run_is_refused(scripts):
    error = scripts.refuse("async def run(task):\n    return None\n")
    assert "found async def run" in str(error)
    assert "asyncio.run" in str(error)


def test_run_taking_more_than_the_task_is_refused(scripts):
    error = scripts.refuse("def run(task, since):\n    pass\n")
    assert "found run(task, since), which takes more than the task" in str(error)
    assert "task.input_params" in str(error)


def test_an_exception_in_run_fails_with_its_message_and_logs_the_traceback(scripts, caplog):
    error = scripts.refuse(
        """
        def fetch():
            raise ConnectionError("source API answered 503")

        def run(task):
            fetch()
        """
    )
    assert "ingestion script job.py: found ConnectionError raised in run: source API answered 503" in str(error)
    assert error.retryable
    assert isinstance(error.__context__, ConnectionError)
    assert "ingestion script job.py failed while running run" in caplog.text
    assert 'job.py", line 3, in fetch' in caplog.text
    assert f'File "{python_script.__file__}"' not in caplog.text  # the traceback starts in the script


def test_an_exception_without_a_message_is_named_by_its_type(scripts):
    error = scripts.refuse("def run(task):\n    raise TimeoutError()\n")
    assert str(error) == (
        "ingestion script job.py: found TimeoutError raised in run; expected run to finish without an exception "
        "(raising one is how a script fails its task). The script failed the task: see its traceback in the "
        "attempt log, fix the cause, then rerun the task"
    )


@pytest.mark.parametrize(("call", "shown"), [("sys.exit(3)", "sys.exit(3)"), ("sys.exit()", "sys.exit(None)")])
def test_sys_exit_inside_run_is_a_failure(scripts, call, shown):
    error = scripts.refuse(f"import sys\n\ndef run(task):\n    {call}\n")
    assert f"ingestion script job.py: found {shown} inside run" in str(error)
    assert "raise an exception to fail" in str(error)
    assert not error.retryable


def test_sys_exit_while_importing_is_a_failure(scripts):
    error = scripts.refuse("import sys\nsys.exit(0)\n")
    assert "found sys.exit(0) while the script was imported" in str(error)
    assert "etl_craft_script_job_py" not in sys.modules


def test_an_etl_craft_error_raised_in_run_is_kept(scripts):
    error = scripts.refuse(
        """
        from etl_craft.scripting import Offset

        def run(task):
            Offset("abc", "NUMBER")
        """
    )
    assert isinstance(error, ScriptContractError)
    assert str(error).startswith("offset 'abc' declared NUMBER: found text that is not a number")


# --- SCRIPT_NAME ---------------------------------------------------------------------------------


def test_a_missing_script_name_is_refused(scripts):
    error = scripts.refuse(name=None)
    assert str(error).startswith("SCRIPT_NAME: missing: found no value; expected the path of a .py file inside")
    assert "Add SCRIPT_NAME to the task's CFG_TASK_PARAMETERS" in str(error)
    assert not error.retryable


def test_a_blank_script_name_is_refused(scripts):
    assert "SCRIPT_NAME: missing: found '  '" in str(scripts.refuse(name="  "))


def test_an_absolute_script_name_is_refused(scripts, tmp_path):
    path = scripts.script(RETURN_ROWS)
    error = scripts.refuse(name=str(path))
    assert f"SCRIPT_NAME={str(path)!r}: found an absolute path; expected a relative path inside" in str(error)


def test_a_script_name_with_dotdot_is_refused(scripts):
    scripts.script(RETURN_ROWS)
    error = scripts.refuse(name="crm/../job.py")
    assert "SCRIPT_NAME='crm/../job.py': found a path with '..'" in str(error)


def test_a_script_linked_from_outside_the_folder_is_refused(scripts, tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text(RETURN_ROWS, encoding="utf-8")
    scripts.scripts.mkdir()
    (scripts.scripts / "linked.py").symlink_to(outside)
    error = scripts.refuse(name="linked.py")
    assert f"SCRIPT_NAME='linked.py': found a link to {outside}, outside {scripts.scripts}" in str(error)


def test_a_script_name_that_is_not_python_is_refused_with_suggestions(scripts):
    scripts.script(RETURN_ROWS, "sales/orders.py")
    error = scripts.refuse(name="sales/orders.sql")
    assert "SCRIPT_NAME='sales/orders.sql' — did you mean: sales/orders.py: found the suffix '.sql'" in str(error)


def test_a_missing_script_names_the_file_and_close_matches(scripts):
    scripts.script(RETURN_ROWS, "sales/orders.py")
    scripts.script(RETURN_ROWS, "crm/customers.py")
    error = scripts.refuse(name="sales/order.py")
    expected = (
        f"SCRIPT_NAME='sales/order.py': no such file {scripts.scripts}/sales/order.py — did you mean: sales/orders.py"
    )
    assert str(error).startswith(expected)
    assert "or add the file" in str(error)


def test_a_missing_scripts_folder_is_named(scripts):
    error = scripts.refuse(name="job.py")
    assert f"no such file {scripts.scripts}/job.py ({scripts.scripts} does not exist)" in str(error)


def test_a_folder_named_like_a_script_is_refused(scripts):
    (scripts.scripts / "dir.py").mkdir(parents=True)
    assert "which is not a file" in str(scripts.refuse(name="dir.py"))


# --- INPUT_PARAMS --------------------------------------------------------------------------------

ECHO_PARAMS = """
from etl_craft.scripting import ScriptResult

def run(task):
    return ScriptResult(row_count=0, variables={"params": repr(sorted(task.input_params.items()))})
"""


def test_input_params_reach_the_script_as_a_dict(scripts):
    result = scripts.run(ECHO_PARAMS, INPUT_PARAMS='{"since_days": 3, "tables": ["a", "b"]}')
    assert result.variables == (("params", "[('since_days', 3), ('tables', ['a', 'b'])]"),)


def test_no_input_params_gives_an_empty_dict(scripts):
    assert scripts.run(ECHO_PARAMS).variables == (("params", "[]"),)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"api_key": "k-123",}', "found text that is not JSON (Expecting property name enclosed in double quotes"),
        ('["k-123"]', "found a JSON array"),
        ('"k-123"', "found a JSON string"),
        ("12", "found a JSON number"),
        ('{"a": 1, "a": 2}', "found the key 'a' twice"),
        ('{"a": NaN}', "found NaN"),
    ],
)
def test_input_params_must_be_a_json_object(scripts, text, found):
    error = scripts.refuse(ECHO_PARAMS, INPUT_PARAMS=text)
    assert str(error).startswith(f"INPUT_PARAMS: {found}")
    assert 'expected a JSON object, e.g. {"since_days": 3}' in str(error)
    assert "k-123" not in str(error)
    assert not error.retryable


# --- the result ----------------------------------------------------------------------------------


def test_a_valid_result_gives_counts_variables_and_the_offset(scripts):
    result = scripts.run(
        """
        from datetime import date
        from decimal import Decimal
        from etl_craft.scripting import Offset, ScriptResult

        def run(task):
            return ScriptResult(
                row_count=1042,
                offset=Offset("1042", "NUMBER"),
                variables={"pages": 3, "source": "crm", "day": date(2026, 1, 31), "ratio": Decimal("0.5")},
            )
        """
    )
    assert result.counts == Counts(source=1042, target=1042, inserted=1042)
    assert result.offset == StoredOffset(OffsetType.NUMBER, "1042")
    assert result.variables == (("pages", "3"), ("source", "crm"), ("day", "2026-01-31"), ("ratio", "0.5"))


def test_an_integer_like_row_count_is_accepted(scripts):
    result = scripts.run(
        """
        from etl_craft.scripting import ScriptResult

        class Int64:  # like numpy.int64, which is not an int
            def __index__(self):
                return 8

        def run(task):
            return ScriptResult(row_count=Int64())
        """
    )
    assert result.counts.source == 8


@pytest.mark.parametrize(
    ("returned", "found"),
    [
        ("None", "found run returned None"),
        ("{'row_count': 1}", "found run returned {'row_count': 1}"),
        ("3", "found run returned 3"),
    ],
)
def test_run_must_return_a_script_result(scripts, returned, found):
    error = scripts.refuse(f"def run(task):\n    return {returned}\n")
    assert str(error).startswith(f"the result of ingestion script job.py: {found}; expected ScriptResult(row_count=")
    assert "nothing from this attempt was stored" in str(error)
    assert not error.retryable


@pytest.mark.parametrize(
    ("row_count", "found"),
    [
        ("-1", "row_count -1 (negative)"),
        ("True", "row_count True (a bool)"),
        ("'10'", "row_count '10' (a str, not an int)"),
        ("1.0", "row_count 1.0 (a float, not an int)"),
        ("None", "row_count None (a NoneType, not an int)"),
    ],
)
def test_a_bad_row_count_is_refused(scripts, row_count, found):
    body = f"from etl_craft.scripting import ScriptResult\n\ndef run(task):\n    return ScriptResult({row_count})\n"
    assert f"the result of ingestion script job.py: found {found}" in str(scripts.refuse(body))


def test_an_offset_that_is_not_an_offset_is_refused(scripts):
    body = "from etl_craft.scripting import ScriptResult\n\ndef run(task):\n    return ScriptResult(1, offset=1042)\n"
    error = scripts.refuse(body)
    assert "found offset 1042 (a int, not an Offset: wrap it, e.g. Offset.number(v))" in str(error)


def test_an_offset_type_change_is_refused(scripts):
    body = "from etl_craft.scripting import Offset, ScriptResult\n\ndef run(task):\n    return ScriptResult(1, Offset.text('a'))\n"
    error = scripts.refuse(body, stored=stored("NUMBER", "1042"))
    assert "found offset type TEXT, but the stored offset of this task is NUMBER" in str(error)
    assert not error.retryable


@pytest.mark.parametrize(
    ("variables", "found"),
    [
        ("[('pages', 3)]", "variables a list, not a mapping of names to values"),
        ("{'': 1}", "variable name '' (names are non-empty text without spaces or '=')"),
        ("{'a b': 1}", "variable name 'a b'"),
        ("{1: 1}", "variable name 1"),
        ("{'offset': 1}", "variable name 'offset' (reserved for the task's own TASK_LOG lines)"),
        ("{'rows': [1, 2]}", "variable rows a list (values are text, numbers, dates or None)"),
    ],
)
def test_bad_variables_are_refused(scripts, variables, found):
    body = f"from etl_craft.scripting import ScriptResult\n\ndef run(task):\n    return ScriptResult(1, variables={variables})\n"
    assert f"found {found}" in str(scripts.refuse(body))


def test_the_whole_result_is_checked_and_every_problem_named(scripts):
    error = scripts.refuse(
        """
        from etl_craft.scripting import Offset, ScriptResult

        def run(task):
            return ScriptResult(row_count=-5, offset=Offset.timestamp("2026-01-01"), variables=["x"])
        """,
        stored=stored("NUMBER", "7"),
    )
    message = str(error)
    assert "row_count -5 (negative)" in message
    assert "offset type TIMESTAMP, but the stored offset of this task is NUMBER" in message
    assert "variables a list" in message


# --- offsets -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        ("NUMBER", "1042", "1042"),
        ("NUMBER", "10.500001", "Decimal('10.500001')"),
        ("TEXT", "0000012345_orders.json", "'0000012345_orders.json'"),
        ("TIMESTAMP", "2026-01-31T08:15:00.123456+00:00", "datetime(2026, 1, 31, 8, 15, 0, 123456, tzinfo=UTC)"),
        ("TIMESTAMP", "2026-01-31T08:15:00.000001+00:00", "datetime(2026, 1, 31, 8, 15, 0, 1, tzinfo=UTC)"),
    ],
)
def test_offsets_round_trip_at_full_precision(scripts, kind, text, value):
    result = scripts.run(
        f"""
        from datetime import UTC, datetime
        from decimal import Decimal
        from etl_craft.scripting import Offset, ScriptResult

        def run(task):
            assert task.offset == Offset({value}, "{kind}"), task.offset
            assert task.offset.value == {value}
            return ScriptResult(row_count=0, offset=Offset(task.offset.value, "{kind}"))
        """,
        stored=stored(kind, text),
    )
    assert result.offset == StoredOffset(OffsetType(kind), text)


def test_a_timestamp_offset_is_stored_in_utc(scripts):
    result = scripts.run(
        """
        from datetime import datetime, timedelta, timezone
        from etl_craft.scripting import Offset, ScriptResult

        def run(task):
            moment = datetime(2026, 1, 31, 10, 15, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
            return ScriptResult(row_count=0, offset=Offset.timestamp(moment))
        """
    )
    assert result.offset == StoredOffset(OffsetType.TIMESTAMP, "2026-01-31T08:15:00.123456+00:00")


def test_b60_nanosecond_offsets_are_refused(scripts):
    error = scripts.refuse(
        """
        from etl_craft.scripting import Offset, ScriptResult

        def run(task):
            return ScriptResult(row_count=1, offset=Offset.timestamp("2026-01-01 00:00:00.123456789"))
        """
    )
    assert str(error).startswith(
        "offset 2026-01-01 00:00:00.123456789 has nanoseconds, which the offset store can't keep; "
        "round it to microseconds"
    )
    assert not error.retryable


def test_the_first_run_gets_no_offset_and_stores_the_returned_one(scripts):
    body = """
        from etl_craft.scripting import Offset, ScriptResult

        def run(task):
            assert task.offset is None
            return ScriptResult(row_count=1, offset=Offset.text("page-2"))
    """
    assert scripts.run(body).offset == StoredOffset(OffsetType.TEXT, "page-2")
    assert scripts.run(body, stored=stored("TEXT", None)).offset == StoredOffset(OffsetType.TEXT, "page-2")


def test_none_keeps_the_stored_offset(scripts):
    assert scripts.run(RETURN_ROWS, stored=stored("NUMBER", "5")).offset is None


def test_a_backfill_gets_no_offset_and_stores_none(scripts):
    result = scripts.run(
        """
        from etl_craft.scripting import Offset, ScriptResult

        def run(task):
            assert task.backfill and task.offset is None
            return ScriptResult(row_count=1, offset=Offset.text("not kept"))
        """,
        stored=stored("NUMBER", "5"),
        trigger=TriggerKind.BACKFILL,
    )
    assert result.offset is None
    assert result.counts.source == 1


def test_an_unreadable_stored_offset_names_the_tracker_row(scripts):
    error = scripts.refuse(RETURN_ROWS, stored=stored("NUMBER", "ten"))
    assert "the stored offset of task load_orders (AUD_TASK_OFFSET_TRACKER, TASK_ID 12)" in str(error)
    assert "'ten' of type NUMBER" in str(error)


# --- what the script gets ------------------------------------------------------------------------


def test_the_task_carries_the_run_and_its_parameters(scripts):
    result = scripts.run(
        """
        import datetime
        from etl_craft.scripting import ScriptResult

        def run(task):
            try:
                task.task_params["SCRIPT_NAME"] = "other.py"
            except TypeError:
                read_only = True
            return ScriptResult(row_count=0, variables={
                "ids": f"{task.pipeline_id}/{task.pipeline_run_id}/{task.task_run_id}/{task.attempt_number}",
                "codes": f"{task.pipeline_code}.{task.task_code}",
                "refresh": task.refresh_type,
                "force": task.force,
                "backfill": task.backfill,
                "run_date": task.run_date,
                "script": task.script_name,
                "params": ",".join(sorted(task.task_params)),
                "read_only": read_only,
                "logger": task.logger.name,
                "config": task.config.warehouse.jdbc_url.endswith("warehouse.duckdb"),
            })
        """,
        INPUT_PARAMS="{}",
    )
    assert dict(result.variables) == {
        "ids": "4/97/501/2",
        "codes": "SALES.load_orders",
        "refresh": "INCREMENTAL",
        "force": "False",
        "backfill": "False",
        "run_date": "2026-01-31",
        "script": "job.py",
        "params": "INPUT_PARAMS,SCRIPT_NAME",
        "read_only": "True",
        "logger": "etl_craft_script.load_orders",
        "config": "True",
    }


def test_script_logs_go_to_the_attempt_log_under_the_task_name(scripts, caplog):
    caplog.set_level(logging.INFO)
    scripts.run(
        """
        import logging
        from etl_craft.scripting import ScriptResult

        def run(task):
            task.logger.info("fetched %d pages", 3)
            logging.getLogger("urllib3.connectionpool").info("GET /orders?api_key=k-123")
            return ScriptResult(row_count=3)
        """
    )
    records = [(r.name, r.getMessage()) for r in caplog.records]
    assert ("etl_craft_script.load_orders", "fetched 3 pages") in records
    assert "k-123" not in caplog.text
    assert logging.getLogger("urllib3").level == logging.WARNING


def test_library_loggers_speak_at_debug(scripts, caplog):
    caplog.set_level(logging.DEBUG)
    scripts.run(RETURN_ROWS)
    assert {logging.getLogger(name).level for name in URL_LOGGERS} == {logging.DEBUG}


def test_table_qualifies_names_with_the_warehouse_database(scripts):
    result = scripts.run(
        """
        from etl_craft.scripting import ScriptResult

        def run(task):
            return ScriptResult(0, variables={"two": task.table("lnd.orders"), "three": task.table("w.lnd.orders")})
        """
    )
    assert dict(result.variables) == {"two": "warehouse.lnd.orders", "three": "w.lnd.orders"}


def test_table_refuses_a_bare_name(scripts):
    error = scripts.refuse("def run(task):\n    task.table('orders')\n")
    assert "task.table('orders'): found a bare name; expected schema.table or database.schema.table" in str(error)


@pytest.mark.duckdb
def test_the_warehouse_is_a_sqlalchemy_engine_on_the_duckdb_file(scripts):
    result = scripts.run(
        """
        import sqlalchemy as sa
        from etl_craft.scripting import ScriptResult

        def run(task):
            with task.warehouse() as engine, engine.begin() as conn:
                conn.execute(sa.text("CREATE SCHEMA IF NOT EXISTS lnd"))
                conn.execute(sa.text(f"CREATE OR REPLACE TABLE {task.table('lnd.orders')} AS SELECT 1 AS id"))
            with task.warehouse() as engine, engine.connect() as conn:
                count = conn.execute(sa.text("SELECT count(*) FROM warehouse.lnd.orders")).scalar_one()
            return ScriptResult(row_count=count)
        """
    )
    assert result.counts.source == 1
    assert (scripts.root / "warehouse.duckdb").is_file()


@pytest.mark.duckdb
def test_the_duckdb_warehouse_holds_the_writer_lock_sql_tasks_use(scripts):
    result = scripts.run(
        f"""
        from etl_craft.core.errors import LockTimeoutError
        from etl_craft.engine import locks
        from etl_craft.scripting import ScriptResult

        def run(task):
            with task.warehouse():
                try:
                    with locks.hold(task._engine_db, "duckdb-writer:{scripts.root / "warehouse.duckdb"}", timeout=0.05):
                        held = False
                except LockTimeoutError:
                    held = True
            with locks.hold(task._engine_db, "duckdb-writer:{scripts.root / "warehouse.duckdb"}", timeout=0.05):
                released = True
            return ScriptResult(0, variables={{"held": held, "released": released}})
        """
    )
    assert dict(result.variables) == {"held": "True", "released": "True"}


def test_the_warehouse_without_a_warehouse_section_is_refused(tmp_path):
    project = ScriptProject(tmp_path, sections="")
    try:
        error = project.refuse("def run(task):\n    with task.warehouse():\n        pass\n")
    finally:
        project.engine_db.dispose()
    assert f"task.warehouse(): craft-connector.yml ({tmp_path / 'craft-connector.yml'})" in str(error)
    assert "found no Warehouse section" in str(error)
    assert "Add a Warehouse section" in str(error)


@pytest.mark.warehouse_postgres
def test_the_warehouse_on_postgresql_keeps_the_secret_out_of_the_url(tmp_path, pg_database):
    from tests.fixtures import postgres as pg

    sections = (
        f"Warehouse:\n  jdbc_url: {pg.jdbc_url(pg_database)}\n  schema: public\n"
        f"  user: {pg.PG_USER}\n  secret: WAREHOUSE_SECRET\n"
    )
    project = ScriptProject(tmp_path, sections, {"WAREHOUSE_SECRET": "s3cret-value"})
    try:
        result = project.run(
            """
            import sqlalchemy as sa
            from etl_craft.scripting import ScriptResult

            def run(task):
                with task.warehouse() as engine, engine.connect() as conn:
                    database = conn.execute(sa.text("SELECT current_database()")).scalar_one()
                    shown = str(engine.url)
                return ScriptResult(0, variables={"database": database, "url": shown, "table": task.table("s.t")})
            """
        )
    finally:
        project.engine_db.dispose()
    variables = dict(result.variables)
    assert variables["database"] == pg_database
    assert variables["url"].startswith("postgresql+psycopg://")
    assert "s3cret" not in variables["url"]
    assert variables["table"] == f"{pg_database}.s.t"


def test_handler_errors_name_their_exit_code():
    assert issubclass(ScriptContractError, HandlerError) and issubclass(ScriptContractError, ValueError)
    assert ScriptContractError("x").exit_code == ExitCode.HANDLER
    assert isinstance(ScriptContractError("x"), EtlCraftError)


def test_replace_keeps_the_context_usable(scripts):
    # A forced, FULL refresh reaches the script as is.
    ctx = replace(scripts.context(), force=True, refresh_type="FULL")
    scripts.script(
        """
        from etl_craft.scripting import ScriptResult

        def run(task):
            return ScriptResult(0, variables={"mode": f"{task.refresh_type}/{task.force}"})
        """
    )
    assert python_script.run(ctx).variables == (("mode", "FULL/True"),)


def test_the_public_names_of_the_scripting_module():
    from etl_craft import scripting

    assert set(scripting.__all__) == {"Offset", "ScriptContractError", "ScriptResult", "ScriptTask"}
