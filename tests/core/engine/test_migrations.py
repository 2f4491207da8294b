"""init-db and project migrations on both dialects: metadata written by code, checksums, audit rows."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.enums import ActorKind
from etl_craft.core.errors import EngineDbError, MigrationError
from etl_craft.engine.database import writing_for
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema import tables as t
from tests.fixtures.catalog import read_catalog

# A team's first migration: every row found by code, never by id, so it loads on both dialects.
CREATE_SALES = """\
-- The sales pipeline: load orders, then publish them; a rule rejects orders without a customer.
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, RUN_SCHEDULE)
VALUES ('sales', 'Sales', 'INCREMENTAL', '0 6 * * *');

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column2, v.column3, p.PIPELINE_ID, v.column4
FROM (VALUES ('sales', 'load_orders', 'INGESTION', 'PYTHON'),
             ('sales', 'publish', 'ETL', 'SQL'),
             ('sales', 'check_orders', 'ETL', 'BUSINESS_RULES')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = v.column1 AND p.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.column3, v.column4
FROM (VALUES ('sales', 'load_orders', 'SCRIPT_NAME', 'sales/orders.py'),
             ('sales', 'publish', 'SQL_ACTION', 'SCD1_MERGE'),
             ('sales', 'publish', 'TARGET_OBJECT', 'sales.orders')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = v.column1 AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column2 AND t.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, v.column4
FROM (VALUES ('sales', 'publish', 'load_orders', 'SUCCESS'),
             ('sales', 'check_orders', 'publish', 'SUCCESS')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = v.column1 AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column2 AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = v.column3 AND u.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
                                BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)
SELECT v.column3, p.PIPELINE_ID, t.TASK_ID, v.column4, 'REJECT', 'order_id', 'sales.orders', 1
FROM (VALUES ('sales', 'check_orders', 'order_has_customer',
              'SELECT 1 WHERE t.customer_id IS NULL')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = v.column1 AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column2 AND t.ACTIVE_FLAG = 'Y';
"""

RETUNE_AND_RETIRE = """\
UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = 'SCD2_MERGE'
WHERE PARAMETER_NAME = 'SQL_ACTION' AND ACTIVE_FLAG = 'Y'
  AND TASK_ID = (SELECT t.TASK_ID FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID
                 WHERE p.PIPELINE_CODE = 'sales' AND t.TASK_CODE = 'publish' AND t.ACTIVE_FLAG = 'Y');
UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_CODE = 'sales' AND ACTIVE_FLAG = 'Y';
"""


@pytest.fixture
def migrations_dir(project) -> Path:
    folder = project.root / "migrations"
    folder.mkdir()
    return folder


def _write(folder: Path, name: str, sql: str) -> None:
    (folder / name).write_text(sql, encoding="utf-8")


def test_a_migration_written_by_code_creates_a_whole_pipeline(engine_db, migrations_dir: Path) -> None:
    _write(migrations_dir, "0001_create_sales.sql", CREATE_SALES)
    result = migrations.migrate(engine_db, migrations_dir)
    assert result.project_applied == ("0001_create_sales.sql",)
    with engine_db.read() as conn:
        pipeline = conn.execute(sa.select(t.cfg_pipelines)).one()
        tasks = conn.execute(
            sa.select(t.cfg_tasks.c.task_code, t.cfg_tasks.c.handler, t.cfg_tasks.c.pipeline_id).order_by(
                t.cfg_tasks.c.task_id
            )
        ).all()
        params = conn.execute(
            sa.select(
                t.cfg_tasks.c.task_code,
                t.cfg_task_parameters.c.parameter_name,
                t.cfg_task_parameters.c.parameter_value,
            )
            .join(t.cfg_tasks, t.cfg_tasks.c.task_id == t.cfg_task_parameters.c.task_id)
            .order_by(t.cfg_task_parameters.c.task_parameter_id)
        ).all()
        up = t.cfg_tasks.alias("up")
        deps = conn.execute(
            sa.select(t.cfg_tasks.c.task_code, up.c.task_code, t.cfg_task_dependency.c.dependency_type)
            .join(t.cfg_tasks, t.cfg_tasks.c.task_id == t.cfg_task_dependency.c.task_id)
            .join(up, up.c.task_id == t.cfg_task_dependency.c.depends_on_task_id)
            .order_by(t.cfg_task_dependency.c.task_dependency_id)
        ).all()
        rules = conn.execute(
            sa.select(
                t.cfg_business_rules.c.business_rule_name,
                t.cfg_business_rules.c.task_id,
                t.cfg_business_rules.c.target_table,
            )
        ).all()
        recorded = conn.execute(
            sa.select(
                t.schema_migrations.c.source, t.schema_migrations.c.version, t.schema_migrations.c.checksum
            ).where(t.schema_migrations.c.source == "PROJECT")
        ).all()
    assert (pipeline.pipeline_code, pipeline.refresh_type, pipeline.run_schedule) == (
        "sales",
        "INCREMENTAL",
        "0 6 * * *",
    )
    assert [(r[0], r[1], r[2]) for r in tasks] == [
        ("load_orders", "PYTHON", pipeline.pipeline_id),
        ("publish", "SQL", pipeline.pipeline_id),
        ("check_orders", "BUSINESS_RULES", pipeline.pipeline_id),
    ]
    assert [tuple(r) for r in params] == [
        ("load_orders", "SCRIPT_NAME", "sales/orders.py"),
        ("publish", "SQL_ACTION", "SCD1_MERGE"),
        ("publish", "TARGET_OBJECT", "sales.orders"),
    ]
    assert [tuple(r) for r in deps] == [
        ("publish", "load_orders", "SUCCESS"),
        ("check_orders", "publish", "SUCCESS"),
    ]
    check_orders_id = next(i for i, r in enumerate(tasks) if r[0] == "check_orders")
    assert [(r[0], r[2]) for r in rules] == [("order_has_customer", "sales.orders")]
    assert rules[0][1] is not None and check_orders_id == 2
    assert len(recorded) == 1 and recorded[0].version == "0001_create_sales.sql" and len(recorded[0].checksum) == 64


def test_a_misspelt_code_fails_the_file_and_changes_nothing(engine_db, migrations_dir: Path) -> None:
    _write(
        migrations_dir,
        "0001_create_sales.sql",
        CREATE_SALES.replace("('sales', 'publish', 'SQL_ACTION'", "('sales', 'publsh', 'SQL_ACTION'"),
    )
    with pytest.raises(MigrationError) as caught:
        migrations.migrate(engine_db, migrations_dir)
    assert "0001_create_sales.sql" in caught.value.message
    assert "rolled back" in caught.value.message
    with engine_db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.cfg_pipelines)).scalar() == 0
        assert (
            conn.execute(
                sa.select(sa.func.count())
                .select_from(t.schema_migrations)
                .where(t.schema_migrations.c.source == "PROJECT")
            ).scalar()
            == 0
        )


def test_changing_a_parameter_and_retiring_a_pipeline_records_both_changes(engine_db, migrations_dir: Path) -> None:
    _write(migrations_dir, "0001_create_sales.sql", CREATE_SALES)
    migrations.migrate(engine_db, migrations_dir)
    _write(migrations_dir, "0002_retune_and_retire.sql", RETUNE_AND_RETIRE)
    with acting_as(Actor("dana@laptop", ActorKind.HUMAN)):
        migrations.migrate(engine_db, migrations_dir)
    with engine_db.read() as conn:
        changes = conn.execute(
            sa.select(t.aud_metadata_changes)
            .where(t.aud_metadata_changes.c.migration == "0002_retune_and_retire.sql")
            .order_by(t.aud_metadata_changes.c.change_id)
        ).all()
        param = conn.execute(
            sa.select(t.cfg_task_parameters).where(t.cfg_task_parameters.c.parameter_name == "SQL_ACTION")
        ).one()
    assert [(c.table_name, c.operation, c.actor, c.actor_kind) for c in changes] == [
        ("CFG_TASK_PARAMETERS", "UPDATE", "dana@laptop", "HUMAN"),
        ("CFG_PIPELINES", "UPDATE", "dana@laptop", "HUMAN"),
    ]
    parameter_change, pipeline_change = changes
    assert parameter_change.before_json["PARAMETER_VALUE"] == "SCD1_MERGE"
    assert parameter_change.after_json["PARAMETER_VALUE"] == "SCD2_MERGE"
    assert parameter_change.row_key == str(param.task_parameter_id)
    assert (pipeline_change.before_json["ACTIVE_FLAG"], pipeline_change.after_json["ACTIVE_FLAG"]) == (
        "Y",
        "N",
    )
    assert param.updated_by == "dana@laptop" and param.updated_date is not None
    assert param.created_by != "dana@laptop"


def test_editing_an_applied_migration_is_refused_naming_the_file(engine_db, migrations_dir: Path) -> None:
    _write(migrations_dir, "0001_create_sales.sql", CREATE_SALES)
    migrations.migrate(engine_db, migrations_dir)
    _write(migrations_dir, "0001_create_sales.sql", CREATE_SALES + "\n-- an innocent comment\n")
    _write(migrations_dir, "0002_retune_and_retire.sql", RETUNE_AND_RETIRE)
    with pytest.raises(MigrationError) as caught:
        migrations.migrate(engine_db, migrations_dir)
    message = caught.value.message
    assert "applied project migration '0001_create_sales.sql' has changed since it was applied" in message
    assert "new numbered migration" in message
    with engine_db.read() as conn:
        versions = (
            conn.execute(sa.select(t.schema_migrations.c.version).where(t.schema_migrations.c.source == "PROJECT"))
            .scalars()
            .all()
        )
    assert versions == ["0001_create_sales.sql"]


def _recorded(engine_db) -> dict[tuple[str, str], str]:
    with engine_db.read() as conn:
        rows = conn.execute(
            sa.select(t.schema_migrations.c.source, t.schema_migrations.c.version, t.schema_migrations.c.checksum)
        ).all()
    return {(r.source, r.version): r.checksum for r in rows}


def test_a_crlf_checkout_of_an_applied_migration_matches_its_record(engine_db, migrations_dir: Path) -> None:
    lf = CREATE_SALES.encode()
    (migrations_dir / "0001_create_sales.sql").write_bytes(lf)
    migrations.migrate(engine_db, migrations_dir)
    # The record is what it always was for an LF file: the SHA-256 of its bytes.
    assert _recorded(engine_db)[("PROJECT", "0001_create_sales.sql")] == hashlib.sha256(lf).hexdigest()

    # The same file from a Windows clone (git's autocrlf): not a change.
    (migrations_dir / "0001_create_sales.sql").write_bytes(lf.replace(b"\n", b"\r\n"))
    (migrations_dir / "0002_retune_and_retire.sql").write_bytes(RETUNE_AND_RETIRE.encode().replace(b"\n", b"\r\n"))
    done = migrations.migrate(engine_db, migrations_dir)
    assert done.project_applied == ("0002_retune_and_retire.sql",)
    # A file applied from a CRLF checkout is recorded by its LF form, the checksum an LF clone computes.
    assert _recorded(engine_db)[("PROJECT", "0002_retune_and_retire.sql")] == (
        hashlib.sha256(RETUNE_AND_RETIRE.encode()).hexdigest()
    )

    # Anything but line endings is still a change.
    (migrations_dir / "0001_create_sales.sql").write_bytes(lf.replace(b"\n", b"\r\n").replace(b"'Sales'", b"'Sale'"))
    with pytest.raises(MigrationError, match=r"'0001_create_sales\.sql' has changed since it was applied"):
        migrations.migrate(engine_db, migrations_dir)


def test_a_record_a_crlf_checkout_made_before_the_rule_still_matches(engine_db, migrations_dir: Path) -> None:
    crlf = CREATE_SALES.encode().replace(b"\n", b"\r\n")
    (migrations_dir / "0001_create_sales.sql").write_bytes(crlf)
    migrations.migrate(engine_db, migrations_dir)
    # An Engine DB where the file was recorded by the SHA-256 of its CRLF bytes (the rule before).
    with writing_for("retention"), engine_db.write() as conn:
        conn.execute(
            t.schema_migrations.update()
            .where(t.schema_migrations.c.version == "0001_create_sales.sql")
            .values(checksum=hashlib.sha256(crlf).hexdigest())
        )
    for checkout in (crlf, CREATE_SALES.encode()):
        (migrations_dir / "0001_create_sales.sql").write_bytes(checkout)
        assert migrations.migrate(engine_db, migrations_dir).project_applied == ()


def test_a_packaged_migration_recorded_from_a_crlf_checkout_is_current(engine_db) -> None:
    [first, *_] = migrations.packaged_migrations(engine_db.dialect.name)
    assert first.checksum != first.crlf_checksum
    with writing_for("retention"), engine_db.write() as conn:
        conn.execute(
            t.schema_migrations.update()
            .where(t.schema_migrations.c.source == "ENGINE", t.schema_migrations.c.version == first.version)
            .values(checksum=first.crlf_checksum)
        )
    assert migrations.schema_state(engine_db).current
    with writing_for("retention"), engine_db.write() as conn:
        conn.execute(
            t.schema_migrations.update()
            .where(t.schema_migrations.c.source == "ENGINE", t.schema_migrations.c.version == first.version)
            .values(checksum="0" * 64)
        )
    assert migrations.schema_state(engine_db).changed_engine == (first.version,)


def test_removing_an_applied_migration_is_refused(engine_db, migrations_dir: Path) -> None:
    _write(migrations_dir, "0001_create_sales.sql", CREATE_SALES)
    migrations.migrate(engine_db, migrations_dir)
    (migrations_dir / "0001_create_sales.sql").unlink()
    with pytest.raises(MigrationError) as caught:
        migrations.migrate(engine_db, migrations_dir)
    assert "'0001_create_sales.sql'" in caught.value.message and "no such file" in caught.value.message


def test_a_badly_named_file_is_refused(engine_db, migrations_dir: Path) -> None:
    _write(migrations_dir, "create_sales.sql", CREATE_SALES)
    with pytest.raises(MigrationError) as caught:
        migrations.migrate(engine_db, migrations_dir)
    assert "NNNN_description.sql" in caught.value.message and "create_sales.sql" in caught.value.message


@pytest.mark.parametrize("code", ["load $(touch x); echo", "__init__", "9lives", "x" * 129, "naïve"])
def test_unsafe_pipeline_and_task_codes_are_refused_by_the_database(engine_db, code: str) -> None:
    with pytest.raises(sa.exc.IntegrityError), engine_db.write() as conn:
        conn.execute(t.cfg_pipelines.insert().values(pipeline_code=code, pipeline_name="x", refresh_type="FULL"))
    with engine_db.write() as conn:
        pipeline_id = conn.execute(
            t.cfg_pipelines.insert()
            .values(pipeline_code="ok", pipeline_name="x", refresh_type="FULL")
            .returning(t.cfg_pipelines.c.pipeline_id)
        ).scalar_one()
    with pytest.raises(sa.exc.IntegrityError), engine_db.write() as conn:
        conn.execute(
            t.cfg_tasks.insert().values(task_code=code, task_type="ETL", pipeline_id=pipeline_id, handler="SQL")
        )


def test_the_longest_allowed_code_is_accepted(engine_db) -> None:
    with engine_db.write() as conn:
        conn.execute(
            t.cfg_pipelines.insert().values(pipeline_code="a" + "_9" * 63 + "z", pipeline_name="x", refresh_type="FULL")
        )


def test_init_db_twice_changes_nothing(empty_project, dialect: str) -> None:
    db = empty_project.open_db(create=True)
    first = migrations.init_db(db)
    with db.read() as conn:
        before = read_catalog(conn, dialect)
        rows_before = conn.execute(sa.select(t.schema_migrations)).all()
    second = migrations.init_db(db)
    with db.read() as conn:
        after = read_catalog(conn, dialect)
        rows_after = conn.execute(sa.select(t.schema_migrations)).all()
    assert first.created and not second.created
    assert "already initialised" in second.message
    assert before == after and rows_before == rows_after


def test_init_db_refuses_a_database_holding_other_tables_unless_forced(empty_project) -> None:
    db = empty_project.open_db(create=True)
    with db.write() as conn:
        conn.exec_driver_sql("CREATE TABLE customer_notes (id INTEGER)")
    with pytest.raises(EngineDbError) as caught:
        migrations.init_db(db)
    assert "CUSTOMER_NOTES" in caught.value.message and "--force" in caught.value.message
    assert migrations.init_db(db, force=True).created
    assert migrations.schema_state(db).current


def test_commands_refuse_an_engine_db_with_pending_engine_migrations(engine_db) -> None:
    with writing_for("retention"), engine_db.write() as conn:
        conn.execute(t.schema_migrations.delete().where(t.schema_migrations.c.source == "ENGINE"))
    with pytest.raises(MigrationError) as caught:
        migrations.require_current(engine_db)
    assert "0001_initial.sql" in caught.value.message and "etl-craft migrate" in caught.value.message


def test_commands_refuse_an_engine_db_without_tables(empty_project) -> None:
    db = empty_project.open_db(create=True)
    with pytest.raises(EngineDbError) as caught:
        migrations.require_current(db)
    assert "etl-craft init-db" in caught.value.message
