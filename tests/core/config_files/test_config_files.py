"""config export|plan|apply through the real CLI, on both Engine DB dialects where the Engine DB is involved."""

from __future__ import annotations

import csv
import io
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.fixtures.cli import Result, run_cli
from tests.fixtures.harness import TASK_SCRIPT, TaskSpec, cross_dependency, pipeline_dependency, pipeline_sql
from tests.fixtures.project import Project

WAREHOUSE = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"
CFG_TABLES = (
    t.cfg_pipelines,
    t.cfg_tasks,
    t.cfg_task_parameters,
    t.cfg_task_dependency,
    t.cfg_pipeline_dependency,
    t.cfg_business_rules,
)


def cli(project: Project, *args: str) -> Result:
    return run_cli(*args, env=project.env(), cwd=project.root)


def snapshot(project: Project) -> dict[str, list[Any]]:
    """Every CFG_ row (stamps included) and every metadata change, to prove nothing was written."""
    db = project.open_db()
    with db.read() as conn:
        found = {
            table.name: [tuple(r) for r in conn.execute(sa.select(table).order_by(*table.primary_key))]
            for table in CFG_TABLES
        }
        found["aud_metadata_changes"] = [tuple(r) for r in conn.execute(sa.select(t.aud_metadata_changes))]
    return found


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def write_csv(path: Path, rows: list[dict[str, str]], header: list[str] | None = None) -> None:
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=header or list(rows[0]), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def migrate(project: Project, sql: str) -> None:
    folder = project.root / "migrations"
    folder.mkdir(exist_ok=True)
    number = len(list(folder.glob("*.sql"))) + 1
    (folder / f"{number:04d}_test.sql").write_text(sql)
    result = cli(project, "migrate")
    assert result.returncode == 0, result


@pytest.fixture
def small(project: Project) -> Project:
    """Two pipelines: PYTHON and SQL tasks, a business rule, task and pipeline dependencies."""
    project.extra_sections = WAREHOUSE
    project.write_config()
    (project.root / "ingestion_scripts").mkdir()
    (project.root / "ingestion_scripts" / "task.py").write_text(TASK_SCRIPT)
    sql = pipeline_sql(
        "sales",
        [
            TaskSpec("load"),
            TaskSpec(
                "orders",
                handler="SQL",
                parameters={
                    "SQL_ACTION": "CREATE_TABLE",
                    "TARGET_OBJECT": "mart.orders",
                    "SOURCE_SQL": "SELECT id, amount, 'a,b' AS note\nFROM raw.orders",
                },
            ),
            TaskSpec("checks", handler="BUSINESS_RULES"),
        ],
        [("orders", "load", "SUCCESS"), ("checks", "orders", "SUCCESS")],
    )
    sql += pipeline_sql("stock", [TaskSpec("load")], [])
    sql += pipeline_dependency("stock", "sales") + cross_dependency("stock", "load", "sales", "orders")
    sql += (
        "INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,"
        " BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)"
        " SELECT 'negative', t.PIPELINE_ID, t.TASK_ID, 'SELECT 1 WHERE t.amount < 0', 'REJECT', 'id', 'mart.orders', 1"
        " FROM CFG_TASKS t WHERE t.TASK_CODE = 'checks';\n"
        'UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = \'{"RETRIES": 2, "TAGS": ["daily"]}\', SLA_IN_HOURS = 2.5,'
        " RUN_SCHEDULE = '0 6 * * MON-FRI', SCHEDULE_TIMEZONE = 'Europe/Paris' WHERE PIPELINE_CODE = 'sales';\n"
    )
    migrate(project, sql)
    return project


def test_export_then_apply_changes_nothing_and_a_reformatted_folder_plans_nothing(small: Project) -> None:
    before = snapshot(small)
    exported = cli(small, "config", "export")
    assert exported.returncode == 0, exported
    folder = small.root / "config"
    assert exported.stdout == f"config export: wrote 18 row(s) in 6 file(s) to {folder}\n"
    assert read_csv(folder / "pipelines.csv")[0]["PIPELINE_PARAMETERS"] == '{"RETRIES": 2, "TAGS": ["daily"]}'
    plan = cli(small, "config", "plan")
    assert plan.returncode == 0, plan
    lines = plan.stdout.splitlines()
    assert lines[0].startswith("config ") and lines[0].endswith(f" from {folder}: 0 change(s)")
    assert lines[-1] == "config plan: the Engine DB already holds what the files say"
    applied = cli(small, "config", "apply")
    assert applied.returncode == 0, applied
    assert (
        applied.stdout.splitlines()[-1]
        == "config apply: the Engine DB already holds what the files say; nothing changed"
    )
    # Columns in another order, rows shuffled, defaults left out: still the same metadata.
    pipelines = read_csv(folder / "pipelines.csv")
    header = ["REFRESH_TYPE", "PIPELINE_CODE", "PIPELINE_NAME", "SLA_IN_HOURS", "RUN_SCHEDULE", "SCHEDULE_TIMEZONE"]
    header += ["PIPELINE_PARAMETERS"]
    for row in pipelines:
        row["SLA_IN_HOURS"] = row["SLA_IN_HOURS"] and "2.50"
    write_csv(folder / "pipelines.csv", list(reversed(pipelines)), header)
    again = cli(small, "config", "plan")
    assert again.returncode == 0 and " 0 change(s)" in again.stdout.splitlines()[0], again
    assert snapshot(small) == before


def test_edits_are_planned_then_applied_in_place_and_export_back(small: Project) -> None:
    assert cli(small, "config", "export").returncode == 0
    folder = small.root / "config"
    parameters = read_csv(folder / "task_parameters.csv")
    for row in parameters:
        if row["PARAMETER_NAME"] == "INPUT_PARAMS" and row["PIPELINE_CODE"] == "stock":
            row["PARAMETER_VALUE"] = '{"rows": 5}'
    parameters.append(
        {
            "PIPELINE_CODE": "stock",
            "TASK_CODE": "publish",
            "PARAMETER_NAME": "SCRIPT_NAME",
            "PARAMETER_VALUE": "task.py",
        }
    )
    write_csv(folder / "task_parameters.csv", parameters)
    tasks = read_csv(folder / "tasks.csv")
    tasks.append({"PIPELINE_CODE": "stock", "TASK_CODE": "publish", "TASK_TYPE": "ETL", "HANDLER": "PYTHON"})
    write_csv(folder / "tasks.csv", tasks)
    deps = read_csv(folder / "task_dependencies.csv")
    deps.append(
        {"PIPELINE_CODE": "stock", "TASK_CODE": "publish", "DEPENDS_ON_TASK_CODE": "load", "DEPENDENCY_TYPE": "SUCCESS"}
    )
    for row in deps:
        if row["PIPELINE_CODE"] == "stock" and row["TASK_CODE"] == "load":
            row["ACTIVE_FLAG"] = "N"
    write_csv(folder / "task_dependencies.csv", deps)
    db = small.open_db()
    with db.read() as conn:
        param_id = (
            conn.execute(
                sa.select(t.cfg_task_parameters.c.task_parameter_id).where(
                    t.cfg_task_parameters.c.parameter_name == "INPUT_PARAMS",
                    t.cfg_task_parameters.c.parameter_value == "{}",
                )
            )
            .scalars()
            .all()
        )
    plan = cli(small, "config", "plan")
    assert plan.returncode == 0, plan
    lines = plan.stdout.splitlines()
    assert lines[0].endswith(": 5 change(s)")
    assert lines[1:6] == [
        "insert  tasks.csv  stock.publish  (TASK_TYPE=ETL, HANDLER=PYTHON)",
        'update  task_parameters.csv  stock.load.INPUT_PARAMS  (PARAMETER_VALUE: {} -> {"rows": 5})',
        "insert  task_parameters.csv  stock.publish.SCRIPT_NAME  (PARAMETER_VALUE=task.py)",
        "retire  task_dependencies.csv  stock.load->sales.orders:SUCCESS  (ACTIVE_FLAG N in the file)",
        "insert  task_dependencies.csv  stock.publish->stock.load:SUCCESS  (CONSUME_REPAIRS=Y)",
    ]
    assert lines[-1] == "config plan: 5 change(s) would be applied; nothing was changed"
    revision = lines[0].split()[1]
    applied = cli(small, "config", "apply", "--format", "json")
    assert applied.returncode == 0, applied
    doc = applied.json()
    assert doc["schema"] == "etl-craft/config-sync/1" and doc["applied"] is True and doc["revision"] == revision
    assert doc["message"] == f"applied 5 change(s) as config@{revision}"
    with db.read() as conn:
        changes = conn.execute(
            sa.select(t.aud_metadata_changes.c.table_name, t.aud_metadata_changes.c.operation).where(
                t.aud_metadata_changes.c.migration == f"config@{revision}"
            )
        ).all()
        kept = (
            conn.execute(
                sa.select(t.cfg_task_parameters.c.parameter_value).where(
                    t.cfg_task_parameters.c.task_parameter_id.in_(param_id)
                )
            )
            .scalars()
            .all()
        )
        request = conn.execute(sa.select(t.aud_actions).where(t.aud_actions.c.command == "config apply")).one()
    assert sorted(changes) == sorted(
        [
            ("CFG_TASKS", "INSERT"),
            ("CFG_TASK_PARAMETERS", "UPDATE"),
            ("CFG_TASK_PARAMETERS", "INSERT"),
            ("CFG_TASK_DEPENDENCY", "UPDATE"),
            ("CFG_TASK_DEPENDENCY", "INSERT"),
        ]
    )
    assert sorted(kept) == sorted(["{}", '{"rows": 5}'])  # updated in place: same TASK_PARAMETER_ID
    assert request.arguments["revision"] == revision
    edited = {p.name: p.read_text() for p in folder.glob("*.csv")}
    back = small.root / "back"
    assert cli(small, "config", "export", "--config-dir", str(back)).returncode == 0
    assert read_csv(back / "tasks.csv")[-1] == {
        "PIPELINE_CODE": "stock",
        "TASK_CODE": "publish",
        "TASK_TYPE": "ETL",
        "HANDLER": "PYTHON",
        "RUN_CONDITION": "",
        "RUN_CONDITION_COUNT": "",
        "ACTIVE_FLAG": "Y",
    }
    assert cli(small, "config", "plan", "--config-dir", str(back)).stdout.splitlines()[0].endswith(": 0 change(s)")
    assert edited  # the edited folder still holds the retired row; the export holds live rows only
    assert "stock,load,sales,orders" not in (back / "task_dependencies.csv").read_text()


def test_a_plan_with_a_cycle_is_refused_and_nothing_is_written(small: Project) -> None:
    assert cli(small, "config", "export").returncode == 0
    folder = small.root / "config"
    deps = read_csv(folder / "task_dependencies.csv")
    deps.append(
        {"PIPELINE_CODE": "sales", "TASK_CODE": "load", "DEPENDS_ON_TASK_CODE": "checks", "DEPENDENCY_TYPE": "SUCCESS"}
    )
    write_csv(folder / "task_dependencies.csv", deps)
    before = snapshot(small)
    plan = cli(small, "config", "plan")
    assert plan.returncode == 1, plan
    lines = plan.stdout.splitlines()
    assert "insert  task_dependencies.csv  sales.load->sales.checks:SUCCESS  (CONSUME_REPAIRS=Y)" in lines
    assert any(line.startswith("[FAIL] sales: found a dependency cycle: ") for line in lines), plan.stdout
    assert lines[-1].startswith("config plan: validate failed the result")
    applied = cli(small, "config", "apply")
    assert applied.returncode == 1, applied
    assert applied.stdout.splitlines()[-1] == "config apply: validate failed the result, so nothing was changed"
    assert snapshot(small) == before


def test_retiring_and_bringing_back_a_task_keeps_its_id(small: Project) -> None:
    assert cli(small, "config", "export").returncode == 0
    folder = small.root / "config"
    db = small.open_db()
    query = sa.select(t.cfg_tasks.c.task_id, t.cfg_tasks.c.active_flag).where(t.cfg_tasks.c.task_code == "checks")
    with db.read() as conn:
        ((task_id, _),) = conn.execute(query).all()
    originals = {
        name: (folder / name).read_text() for name in ("tasks.csv", "task_dependencies.csv", "business_rules.csv")
    }
    for name in originals:
        rows = read_csv(folder / name)
        for row in rows:
            if row.get("TASK_CODE") == "checks":
                row["ACTIVE_FLAG"] = "N"
        write_csv(folder / name, rows)
    retired = cli(small, "config", "apply")
    assert retired.returncode == 0, retired
    assert "retire  tasks.csv  sales.checks  (ACTIVE_FLAG N in the file)" in retired.stdout
    for name, text in originals.items():
        (folder / name).write_text(text)
    back = cli(small, "config", "apply")
    assert back.returncode == 0, back
    assert "update  tasks.csv  sales.checks  (ACTIVE_FLAG: N -> Y)" in back.stdout
    assert "update  business_rules.csv  sales.checks.negative  (ACTIVE_FLAG: N -> Y)" in back.stdout
    with db.read() as conn:
        assert conn.execute(query).all() == [(task_id, "Y")]


def test_export_refuses_to_overwrite_without_force_and_json_names_the_files(small: Project) -> None:
    first = cli(small, "config", "export", "--format", "json")
    assert first.returncode == 0, first
    doc = first.json()
    assert doc["schema"] == "etl-craft/config-export/1"
    assert [(f["file"], f["rows"]) for f in doc["files"]] == [
        ("pipelines.csv", 2),
        ("tasks.csv", 4),
        ("task_parameters.csv", 7),
        ("task_dependencies.csv", 3),
        ("pipeline_dependencies.csv", 1),
        ("business_rules.csv", 1),
    ]
    again = cli(small, "config", "export")
    assert again.returncode == 25
    assert "6 file(s) already there" in again.stderr and "Pass --force" in again.stderr
    assert cli(small, "config", "export", "--force").returncode == 0


def test_export_to_a_folder_that_cant_be_written_names_it(small: Project) -> None:
    result = cli(small, "config", "export", "--config-dir", "craft-connector.yml", "--format", "json")
    assert result.returncode == 25, result
    folder = small.root / "craft-connector.yml"
    assert result.json()["message"] == (
        f"the configuration folder {folder}: found a folder that can't be written (File exists: {folder}); "
        "expected a folder (or a place for a new one) you can write. Choose another --config-dir, or correct "
        "the permissions"
    )
    assert folder.read_text(encoding="utf-8").startswith("Secrets:")  # the file it named is untouched


def test_the_demo_round_trips_with_no_change(project: Project) -> None:
    demo = resources.files("etl_craft") / "demo" / "project"
    with resources.as_file(demo) as source:
        for item in Path(source).iterdir():
            if item.name != "craft-connector.yml":
                (shutil.copytree if item.is_dir() else shutil.copy)(item, project.root / item.name)
    project.orchestration = "  Mode: local\n  Timezone: Europe/Paris\n"
    project.extra_sections = WAREHOUSE
    project.write_config()
    assert cli(project, "migrate").returncode == 0
    validated = cli(project, "validate")
    assert validated.returncode == 0, validated
    before = snapshot(project)
    assert cli(project, "config", "export").returncode == 0
    plan = cli(project, "config", "plan")
    assert plan.returncode == 0 and plan.stdout.splitlines()[0].endswith(": 0 change(s)"), plan
    applied = cli(project, "config", "apply")
    assert applied.returncode == 0, applied
    assert snapshot(project) == before


@pytest.mark.sqlite
@pytest.mark.parametrize(
    ("file", "edit", "parts"),
    [
        (
            "tasks.csv",
            lambda text: text.replace("HANDLER", "HANDLR"),
            ("header: found the column 'HANDLR'", "did you mean HANDLER"),
        ),
        (
            "tasks.csv",
            lambda text: text.replace(",PYTHON,", ",PYTON,", 1),
            ("column HANDLER: found 'PYTON'", "did you mean PYTHON"),
        ),
        (
            "tasks.csv",
            lambda text: text + text.splitlines()[1] + "\n",
            ("found the key sales.checks again (first on line 2)",),
        ),
        (
            "task_parameters.csv",
            lambda text: text + "sales,nothere,X,1,Y\n",
            ("column TASK_CODE: found task sales.nothere",),
        ),
        ("pipelines.csv", lambda text: text.replace("INCREMENTAL", ""), ("column REFRESH_TYPE: found an empty cell",)),
        ("pipelines.csv", lambda text: text.replace("2.5", "two"), ("column SLA_IN_HOURS: found 'two'",)),
    ],
)
def test_a_bad_file_stops_with_exit_25_naming_file_line_and_column(
    small: Project, file: str, edit: Any, parts: tuple[str, ...]
) -> None:
    assert cli(small, "config", "export").returncode == 0
    path = small.root / "config" / file
    path.write_text(edit(path.read_text()))
    before = snapshot(small)
    for command in ("plan", "apply"):
        result = cli(small, "config", command)
        assert result.returncode == 25, result
        assert f"config file {path}" in result.stderr
        for part in parts:
            assert part in result.stderr, result.stderr
    assert snapshot(small) == before


@pytest.mark.sqlite
def test_missing_and_unreadable_files_exit_25(small: Project) -> None:
    assert cli(small, "config", "export").returncode == 0
    folder = small.root / "config"
    (folder / "business_rules.csv").unlink()
    missing = cli(small, "config", "plan")
    assert missing.returncode == 25 and f"{folder / 'business_rules.csv'}" in missing.stderr, missing
    (folder / "business_rules.csv").write_bytes(b"PIPELINE_CODE,TASK_CODE\n\xff\xfe\n")
    broken = cli(small, "config", "plan")
    assert broken.returncode == 25 and "bytes that are not UTF-8" in broken.stderr, broken
    nowhere = cli(small, "config", "plan", "--config-dir", str(small.root / "nowhere"))
    assert nowhere.returncode == 25 and "no such folder" in nowhere.stderr
