"""A project migration that fails says where and why: a file that is not UTF-8 is refused before any
statement runs, and on SQLite a failing statement is named by number and line, with the CHECK or
foreign key it broke and the values of the rows that break it. Nothing of a failed file remains."""

from __future__ import annotations

import pytest

from etl_craft.engine.dialects.sqlite import split_script as split_sqlite_script
from etl_craft.engine.schema import tables as t
from etl_craft.engine.schema.scripts import Statement
from tests.fixtures.cli import Result
from tests.fixtures.harness import Harness

PIPELINE = "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('p', 'P', 'FULL');\n"
TASKS = """\
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column1, 'ETL', p.PIPELINE_ID, 'PYTHON' FROM (VALUES ('a'), ('b')) v
JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'p';
"""
# Statement 3 starts on line 7, after a comment: task b would need a count with RUN_CONDITION N.
BROKEN_CHECK = (
    PIPELINE
    + TASKS
    + """
-- b starts once N of its upstreams are done
UPDATE CFG_TASKS
   SET RUN_CONDITION = 'N'
 WHERE TASK_CODE = 'b';
"""
)
# Statement 2 (line 3) names a pipeline id that does not exist.
BROKEN_FOREIGN_KEY = (
    PIPELINE
    + "\n"
    + "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('orphan', 'ETL', 4242, 'PYTHON');\n"
)


def migrate(harness: Harness, name: str, data: bytes) -> Result:
    (harness.root / "migrations" / name).write_bytes(data)
    return harness.cli("migrate", "--format", "json")


def nothing_applied(harness: Harness) -> None:
    """The failed file left no row: no metadata, no metadata change, no applied project migration."""
    for table in (t.cfg_pipelines, t.cfg_tasks, t.aud_metadata_changes):
        assert harness.rows(table) == [], table.name
    assert harness.rows(t.schema_migrations, t.schema_migrations.c.source == "PROJECT") == []


def error_line(result: Result) -> str:
    assert result.returncode == 13, str(result)
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error: ")]
    assert result.json()["message"] == line.removeprefix("error: ")
    return line


def test_a_migration_that_is_not_utf8_is_refused_before_any_file_runs(harness: Harness) -> None:
    (harness.root / "migrations" / "0001_first.sql").write_text(PIPELINE, encoding="utf-8")
    path = harness.root / "migrations" / "0002_latin1.sql"
    line = error_line(
        migrate(harness, path.name, b"-- the second file\nUPDATE CFG_PIPELINES SET PIPELINE_NAME = 'caf\xe9';\n")
    )
    assert line == (
        f"error: project migration {path}: found bytes that are not UTF-8 at line 2, column 46 (byte 0xe9); "
        "expected SQL text in UTF-8. Save the file as UTF-8 (nothing of it was applied)"
    )
    nothing_applied(harness)  # not even 0001, which comes first


@pytest.mark.sqlite
@pytest.mark.parametrize("dialect", ["sqlite"], indirect=True)
def test_a_sqlite_check_failure_names_the_statement_line_constraint_and_row(harness: Harness) -> None:
    line = error_line(migrate(harness, "0001_tasks.sql", BROKEN_CHECK.encode()))
    assert line.startswith(
        "error: project migration '0001_tasks.sql', statement 3 (line 7: UPDATE CFG_TASKS SET RUN_CONDITION = 'N' "
        "WHERE TASK_CODE = …), failed and was rolled back: found CHECK constraint ck_tasks_run_condition_count "
        "((COALESCE(RUN_CONDITION, '') = 'N' AND COALESCE(RUN_CONDITION_COUNT, 0) >= 1) OR "
        "(COALESCE(RUN_CONDITION, '') <> 'N' AND RUN_CONDITION_COUNT IS NULL)) on CFG_TASKS, broken by the "
        'CFG_TASKS row {"TASK_ID": 2, "TASK_CODE": "b", "TASK_TYPE": "ETL", "PIPELINE_ID": 1, "HANDLER": "PYTHON", '
        '"RUN_CONDITION": "N", "RUN_CONDITION_COUNT": null, '
    )
    assert line.endswith(
        "; expected every statement of the file to succeed. Fix the file (it was not recorded as applied) and run etl-craft migrate again"
    )
    nothing_applied(harness)


@pytest.mark.sqlite
@pytest.mark.parametrize("dialect", ["sqlite"], indirect=True)
def test_a_sqlite_foreign_key_failure_names_the_statement_line_constraint_and_row(harness: Harness) -> None:
    line = error_line(migrate(harness, "0001_orphan.sql", BROKEN_FOREIGN_KEY.encode()))
    assert line.startswith(
        "error: project migration '0001_orphan.sql', statement 2 (line 3: INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, "
        "PIPELINE_ID, H…), failed and was rolled back: found FOREIGN KEY constraint fk_cfg_tasks_pipeline_id "
        "(CFG_TASKS.PIPELINE_ID references CFG_PIPELINES.PIPELINE_ID), broken by the CFG_TASKS row "
        '{"TASK_ID": 1, "TASK_CODE": "orphan", "TASK_TYPE": "ETL", "PIPELINE_ID": 4242, '
    )
    nothing_applied(harness)


@pytest.mark.sqlite
@pytest.mark.parametrize("dialect", ["sqlite"], indirect=True)
def test_deleting_a_referenced_row_names_the_rows_that_still_refer_to_it(harness: Harness) -> None:
    harness.migrate(PIPELINE + TASKS)
    before = harness.rows(t.aud_metadata_changes)
    line = error_line(migrate(harness, "0002_delete.sql", b"DELETE FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'p';\n"))
    assert "statement 1 (line 1: DELETE FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'p';)" in line
    assert (
        "FOREIGN KEY constraint fk_cfg_tasks_pipeline_id (CFG_TASKS.PIPELINE_ID references CFG_PIPELINES.PIPELINE_ID)"
        in line
    )
    assert 'broken by the CFG_TASKS rows {"TASK_ID": 1, "TASK_CODE": "a"' in line and '"TASK_CODE": "b"' in line
    assert [p.pipeline_code for p in harness.rows(t.cfg_pipelines)] == ["p"]
    assert harness.rows(t.aud_metadata_changes) == before  # the explaining second run left nothing


@pytest.mark.sqlite
@pytest.mark.parametrize("dialect", ["sqlite"], indirect=True)
def test_any_other_sqlite_failure_names_the_statement_and_line(harness: Harness) -> None:
    typo = PIPELINE + "\n\nINSERT INTO CFG_TASKS (TASK_CODEE) VALUES ('a');\n"
    line = error_line(migrate(harness, "0001_typo.sql", typo.encode()))
    assert line.startswith(
        "error: project migration '0001_typo.sql', statement 2 (line 4: INSERT INTO CFG_TASKS (TASK_CODEE) VALUES "
        "('a');), failed and was rolled back: found table CFG_TASKS has no column named TASK_CODEE; expected"
    ), line
    nothing_applied(harness)


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_postgresql_names_the_constraint_and_row_itself_on_one_line(harness: Harness) -> None:
    check = error_line(migrate(harness, "0001_tasks.sql", BROKEN_CHECK.encode()))
    assert 'violates check constraint "ck_tasks_run_condition_count"; DETAIL:  Failing row contains' in check
    (harness.root / "migrations" / "0001_tasks.sql").unlink()
    key = error_line(migrate(harness, "0001_orphan.sql", BROKEN_FOREIGN_KEY.encode()))
    assert 'violates foreign key constraint "fk_cfg_tasks_pipeline_id"; DETAIL:  Key (pipeline_id)=(4242)' in key
    nothing_applied(harness)


@pytest.mark.unit
def test_statements_are_numbered_with_the_line_they_start_on() -> None:
    script = (
        "-- a header\nINSERT INTO a VALUES (1);\n\n/* a block\ncomment */ INSERT INTO b VALUES ('x;y');\n"
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\nEND;\n-- the end\nUPDATE c SET x = 1"
    )
    assert list(split_sqlite_script(script)) == [
        Statement(1, 2, "INSERT INTO a VALUES (1);"),
        Statement(2, 5, "INSERT INTO b VALUES ('x;y');"),
        Statement(3, 6, "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\nEND;"),
        Statement(4, 10, "UPDATE c SET x = 1"),
    ]
    assert list(split_sqlite_script("-- only a comment\n;\n")) == []
