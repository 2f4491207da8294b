"""The runs every inspection test reads, made once per dialect through the real CLI.

Five pipelines:

- `daily`: one task; a run that succeeds, then a run recorded skipped; paused at the end.
- `sales`: a feed that fails (and fails again when rerun) and holds back two later tasks, an ANY task
  that starts early, a dependency on `daily`'s task, and a pipeline dependency on `daily`.
- `report`: waits for `sales` (pipeline dependency), never run.
- `loop`: a dependency cycle.
- `repair`: two failing feeds, each loaded by a later task; feed_a is fixed and rerun, which reopens the
  run and resets load_a, so the run is unfinished while load_b is still held back by feed_b.
"""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind
from etl_craft.engine.schema import tables as t
from tests.core.inspect.scene import FLAKY_SCRIPT, OK_SCRIPT, Scene


def pipeline(code: str) -> str:
    return f"(SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = '{code}' AND ACTIVE_FLAG = 'Y')"


def task(code: str, task_code: str) -> str:
    return (
        f"(SELECT TASK_ID FROM CFG_TASKS WHERE PIPELINE_ID = {pipeline(code)}"
        f" AND TASK_CODE = '{task_code}' AND ACTIVE_FLAG = 'Y')"
    )


TASKS = [  # pipeline, task, type, run condition, script
    ("daily", "snapshot", "INGESTION", None, "ok.py"),
    ("sales", "extract", "INGESTION", None, "ok.py"),
    ("sales", "flaky", "INGESTION", None, "flaky.py"),
    ("sales", "combine", "ETL", "ANY", "ok.py"),
    ("sales", "transform", "ETL", None, "ok.py"),
    ("sales", "publish", "ETL", None, "ok.py"),
    ("report", "mail", "ETL", None, "ok.py"),
    ("loop", "a", "ETL", None, "ok.py"),
    ("loop", "b", "ETL", None, "ok.py"),
]
TASK_DEPENDENCIES = [  # pipeline, task, upstream pipeline, upstream task, type
    ("sales", "combine", "sales", "extract", "SUCCESS"),
    ("sales", "combine", "sales", "flaky", "SUCCESS"),
    ("sales", "transform", "sales", "flaky", "SUCCESS"),
    ("sales", "transform", "daily", "snapshot", "SUCCESS"),
    ("sales", "publish", "sales", "transform", "SUCCESS"),
    ("loop", "a", "loop", "b", "SUCCESS"),
    ("loop", "b", "loop", "a", "SUCCESS"),
]


def create_pipelines() -> str:
    def text(value: str | None) -> str:
        return "NULL" if value is None else f"'{value}'"

    tasks = ",\n".join(
        f"('{code}', '{kind}', {pipeline(p)}, 'PYTHON', {text(condition)})" for p, code, kind, condition, _ in TASKS
    )
    parameters = ",\n".join(f"({task(p, code)}, 'SCRIPT_NAME', '{script}')" for p, code, _, _, script in TASKS)
    dependencies = ",\n".join(
        f"({pipeline(p)}, {task(p, code)}, {'NULL' if up_p == p else pipeline(up_p)}, {task(up_p, up)}, '{kind}')"
        for p, code, up_p, up, kind in TASK_DEPENDENCIES
    )
    return f"""\
-- Four pipelines, their tasks, parameters and dependencies, referred to by code.
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, RUN_SCHEDULE, SCHEDULE_TIMEZONE, SLA_IN_HOURS)
VALUES ('daily', 'Daily snapshot', 'FULL', NULL, NULL, NULL),
       ('sales', 'Sales', 'INCREMENTAL', '0 6 * * *', 'Europe/Paris', 2.5),
       ('report', 'Sales report', 'FULL', '@daily', NULL, 24),
       ('loop', 'Loop', 'FULL', NULL, NULL, NULL);

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, RUN_CONDITION) VALUES
{tasks};

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES
{parameters},
({task("sales", "extract")}, 'INPUT_PARAMS', '{{"page_size": 500}}');

INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
VALUES
{dependencies};

INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE) VALUES
({pipeline("sales")}, {pipeline("daily")}, 'SUCCESS'),
({pipeline("report")}, {pipeline("sales")}, 'ALWAYS');
"""


RETUNE = f"""\
UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{{"page_size": 1000}}'
WHERE TASK_ID = {task("sales", "extract")} AND PARAMETER_NAME = 'INPUT_PARAMS' AND ACTIVE_FLAG = 'Y';
"""


CREATE_REPAIR = """\
-- Two feeds, each loaded by a later task.
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, SLA_IN_HOURS)
VALUES ('repair', 'Repair', 'FULL', 1);

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column1, v.column2, p.PIPELINE_ID, 'PYTHON'
FROM (VALUES ('feed_a', 'INGESTION'), ('feed_b', 'INGESTION'), ('load_a', 'ETL'), ('load_b', 'ETL')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'repair' AND p.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, 'SCRIPT_NAME', v.column2
FROM (VALUES ('feed_a', 'feed_a.py'), ('feed_b', 'feed_b.py'), ('load_a', 'feed_a.py'), ('load_b', 'feed_b.py')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'repair' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS'
FROM (VALUES ('load_a', 'feed_a'), ('load_b', 'feed_b')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'repair' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = v.column2 AND u.ACTIVE_FLAG = 'Y';
"""


def build(scene: Scene) -> None:
    scene.migration("0001_pipelines.sql", create_pipelines())
    scene.migration("0002_retune.sql", RETUNE)
    scene.migration("0003_repair.sql", CREATE_REPAIR)
    scene.script("ok.py", OK_SCRIPT)
    scene.script("flaky.py", FLAKY_SCRIPT, failing=True)
    scene.script("feed_a.py", FLAKY_SCRIPT, failing=True)
    scene.script("feed_b.py", FLAKY_SCRIPT, failing=True)
    scene.ok("migrate")
    scene.ok("run", "--pipeline_code", "daily", "--run-key", "daily-0131", "--run-date", "2026-01-31")
    failed = scene.cli("run", "--pipeline_code", "sales", "--run-key", "sales-0131", "--run-date", "2026-01-31")
    assert failed.returncode == 1, failed
    rerun = scene.cli(
        "run", "--pipeline_code", "sales", "--task_code", "flaky", "--rerun", "--reason", "retry the feed",
        "--run-key", "sales-0131",
    )  # fmt: skip
    assert rerun.returncode == 1, rerun
    scene.ok("run", "--pipeline_code", "daily", "--skip", "--reason", "holiday", "--run-key", "daily-0201")
    failed = scene.cli("run", "--pipeline_code", "repair", "--run-key", "r1", "--run-date", "2026-02-01")
    assert failed.returncode == 1, failed
    scene.fix("feed_a.py")
    scene.ok("run", "--pipeline_code", "repair", "--task_code", "feed_a", "--rerun", "--reason", "feed a is back",
             "--run-key", "r1")  # fmt: skip
    db = scene.project.open_db()
    with acting_as(Actor("bob@test", ActorKind.HUMAN)), db.write() as conn:
        daily = conn.execute(sa.select(t.cfg_pipelines.c.pipeline_id).where(t.cfg_pipelines.c.pipeline_code == "daily"))
        conn.execute(
            t.aud_pipeline_pauses.insert().values(
                pipeline_id=daily.scalar_one(), paused_at=utc_now(), paused_by="bob@test", reason="quarter close"
            )
        )
