"""`etl-craft validate` through the real CLI on both Engine DB dialects: text, JSON, exit statuses, scope."""

from __future__ import annotations

from tests.fixtures.harness import Harness, TaskSpec


def test_validate_prints_findings_and_a_summary_and_exits_1_on_a_failure(harness: Harness) -> None:
    harness.pipeline("sales", [TaskSpec("a"), TaskSpec("b", parameters={"RETRIES": "many"})], [("b", "a", "SUCCESS")])
    harness.pipeline("stock", [TaskSpec("a")])
    result = harness.cli("validate")
    assert result.returncode == 1, result
    assert result.stdout.splitlines() == [
        "[FAIL] sales.b: parameter RETRIES: found 'many'; expected a whole number of 0 or more. "
        "Set RETRIES to digits only in a project migration",
        "checked 2 pipeline(s) and 3 task(s): 1 failed, 0 warning(s)",
    ]
    narrowed = harness.cli("validate", "--pipeline_code", "stock", "--format", "json")
    assert narrowed.returncode == 0, narrowed
    assert narrowed.json() == {
        "schema": "etl-craft/validate/1",
        "pipelines_checked": 1,
        "tasks_checked": 1,
        "findings": [],
        "failed": 0,
        "warnings": 0,
        "valid": True,
    }
    failing = harness.cli("validate", "--format", "json").json()
    assert failing["valid"] is False
    assert failing["findings"][0] == {
        "level": "FAIL",
        "pipeline_code": "sales",
        "task_code": "b",
        "message": "parameter RETRIES: found 'many'; expected a whole number of 0 or more. "
        "Set RETRIES to digits only in a project migration",
    }


def test_validate_names_close_matches_for_an_unknown_pipeline(harness: Harness) -> None:
    harness.pipeline("sales", [TaskSpec("a")])
    result = harness.cli("validate", "--pipeline_code", "sale")
    assert result.returncode == 4
    assert "Did you mean sales?" in result.stderr


def test_validate_connects_to_no_warehouse(harness: Harness) -> None:
    harness.project.extra_sections = "Warehouse:\n  jdbc_url: jdbc:postgresql://127.0.0.1:1/nothing\n  schema: public\n"
    harness.project.write_config()
    harness.pipeline(
        "sales",
        [
            TaskSpec(
                "t",
                handler="SQL",
                parameters={"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "m.t", "SOURCE_SQL": "SELECT 1 AS a"},
            )
        ],
    )
    result = harness.cli("validate")
    assert result.returncode == 0, result
    assert result.stdout == "checked 1 pipeline(s) and 1 task(s): 0 failed, 0 warning(s)\n"
