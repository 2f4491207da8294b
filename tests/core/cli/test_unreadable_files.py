"""Project files that are not UTF-8 (a SQL file, an ingestion script): validate, lineage and run name
the file, the line and column and the byte, and the task fails with that message; no traceback."""

from __future__ import annotations

import pytest

from tests.fixtures.harness import Harness, TaskSpec

SQL_FILE = b"SELECT 'caf\xe9' AS name\n"  # Latin-1, as an editor on another system saved it
SCRIPT = b"from etl_craft.scripting import ScriptResult\nNAME = 'caf\xe9'\n\ndef run():\n    return ScriptResult(row_count=1)\n"


@pytest.fixture
def latin(harness: Harness) -> Harness:
    harness.project.extra_sections = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"
    harness.project.write_config()
    (harness.root / "sql_files").mkdir()
    (harness.root / "sql_files" / "latin.sql").write_bytes(SQL_FILE)
    (harness.root / "ingestion_scripts" / "latin.py").write_bytes(SCRIPT)
    sql = {"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.names", "SOURCE_SQL_FILE": "latin.sql"}
    harness.pipeline(
        "P",
        [TaskSpec("s", handler="SQL", parameters=sql), TaskSpec("y", parameters={"SCRIPT_NAME": "latin.py"})],
    )
    return harness


def test_files_that_are_not_utf8_are_named_with_line_column_and_byte(latin: Harness) -> None:
    where = f"{latin.root / 'sql_files' / 'latin.sql'}: bytes that are not UTF-8 at line 1, column 12 (byte 0xe9)"
    validated = latin.cli("validate")
    assert validated.returncode == 1, validated
    assert f"[FAIL] P.s: SOURCE_SQL_FILE='latin.sql': found {where}; expected SQL text in UTF-8" in validated.stdout
    assert "[FAIL] P.y: ingestion script latin.py: found SyntaxError at line 2" in validated.stdout

    traced = latin.cli("lineage")
    assert traced.returncode == 0, traced
    assert f"not traced: P.s: {where}" in traced.stdout

    ran = latin.cli("run", "--pipeline_code", "P")
    assert ran.returncode == 1, ran
    assert "Traceback" not in ran.stderr
    runs = latin.task_runs()
    assert {code: r.status for code, r in runs.items()} == {"s": "FAILED", "y": "FAILED"}
    assert runs["s"].error_message == (
        f"task s: SOURCE_SQL_FILE='latin.sql': found {where}; expected SQL text in UTF-8. Save it as UTF-8"
    )
    assert runs["y"].error_message.startswith("ingestion script latin.py: found SyntaxError at line 2")
    assert [r.status for r in latin.runs()] == ["FAILED"]
