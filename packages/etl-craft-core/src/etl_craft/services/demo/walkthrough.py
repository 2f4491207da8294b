"""`etl-craft demo`: write the demo project, set it up, and run it through two deliveries of source files.

The project ships as package data (etl_craft/demo/project: configuration, migrations, SQL files,
ingestion scripts, seeds and the first batch of source files; etl_craft/demo/batch2: the second
batch). Everything runs in this process through the same service functions as the commands
(setup, validate, execute_run), so the demo costs no extra interpreter start per step; the task
processes are started by the engine, as for any run.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import sqlalchemy as sa

from etl_craft.core.errors import ConfigurationError, ExitCode, UsageError
from etl_craft.engine import reads
from etl_craft.engine.schema import tables as t
from etl_craft.engine.schema.migrations import MigrationFile
from etl_craft.execution.graph import load_graph
from etl_craft.services import setup
from etl_craft.services.context import OperationContext, open_context
from etl_craft.services.demo.events import DemoEvent, Listener, RunWatcher, elapsed
from etl_craft.services.runs.execute import execute_run
from etl_craft.services.runs.request import RunRequest

DEFAULT_FOLDER = "etl-craft-demo"
CONFIG_FILE = "craft-connector.yml"
WAREHOUSE_FILE = "warehouse.duckdb"
WAREHOUSE_DDL = "warehouse.sql"
CLIENTS = ("client_alpha", "client_beta", "client_gamma")
BATCHES: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "the first delivery of every client", ("support_setup", "support_reference", *CLIENTS)),
    (2, "the next delivery, read from the stored offsets", ("support_reference", *CLIENTS)),
)


@dataclass(frozen=True)
class DemoTaskView:
    task_code: str
    handler: str
    status: str
    attempts: int
    rows_written: int | None
    seconds: float | None
    error: str | None


@dataclass(frozen=True)
class DemoRunView:
    batch: int
    pipeline_code: str
    pipeline_run_id: int | None
    status: str
    seconds: float | None
    tasks: tuple[DemoTaskView, ...]
    rows_written: int
    rejected_tickets: int | None  # active REJECT flags of the pipeline's rules after the run
    message: str


@dataclass(frozen=True)
class DemoView:
    status: str  # SUCCESS when every run ended SUCCESS, else FAILED
    message: str
    exit_code: int
    project_dir: str
    engine_db: str
    warehouse: str
    migrations: tuple[str, ...]
    validation: str
    runs: tuple[DemoRunView, ...]
    rejected_tickets: dict[str, int]
    reported_tickets: dict[str, int]
    fact_rows: dict[str, int]  # active rows of dm.ticket_fact per client
    outbox: tuple[str, ...]
    explore: tuple[str, ...]
    seconds: float
    steps: tuple[str, ...] = field(default=())


def _usable(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def choose_folder(target: str | None, cwd: Path) -> Path:
    """DIR as given (new or empty), else a new etl-craft-demo, etl-craft-demo-2, ... in the working folder."""
    if target is not None:
        path = (cwd / target).absolute()
        if not _usable(path):
            what = "a folder that is not empty" if path.is_dir() else "a file"
            raise UsageError(
                f"etl-craft demo {target}",
                found=f"{path}, {what}",
                expected="a new or empty folder to write the demo project into; nothing is ever overwritten",
                remedy="name another folder, or leave DIR out to get a new etl-craft-demo folder here",
            )
        return path
    for number in range(1, 1000):
        path = cwd / (DEFAULT_FOLDER if number == 1 else f"{DEFAULT_FOLDER}-{number}")
        if not path.exists():
            return path
    raise UsageError(
        f"etl-craft demo in {cwd}",
        found=f"{DEFAULT_FOLDER} to {DEFAULT_FOLDER}-999 all taken",
        expected="a free folder name",
        remedy="name a folder: etl-craft demo DIR",
    )


def _copy_tree(source: Traversable, target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    copied = 0
    for item in source.iterdir():
        if item.name in ("__pycache__", "__init__.py"):  # package markers for the import contract only
            continue
        if item.is_dir():
            copied += _copy_tree(item, target / item.name)
        else:
            (target / item.name).write_bytes(item.read_bytes())
            copied += 1
    return copied


def _package_folder(name: str) -> Traversable:
    return resources.files("etl_craft").joinpath("demo", name)


def write_project(folder: Path) -> int:
    """Copy the demo project into a new folder; returns the number of files written."""
    folder.mkdir(parents=True, exist_ok=True)
    return _copy_tree(_package_folder("project"), folder)


def drop_batch(folder: Path, batch: int) -> int:
    """Put a later delivery's source files (and reference changes) in place, as the sources would."""
    return _copy_tree(_package_folder(f"batch{batch}"), folder)


def create_warehouse(folder: Path) -> Path:
    """Create warehouse.duckdb with the schemas and tables of warehouse.sql, as a team does before etl-craft runs."""
    import duckdb

    path = folder / WAREHOUSE_FILE
    with duckdb.connect(str(path)) as conn:
        conn.execute((folder / WAREHOUSE_DDL).read_text(encoding="utf-8"))
    return path


def launcher(folder: Path, environ: dict[str, str] | None = None) -> str:
    """How the person who ran the demo can start etl-craft again from the project folder."""
    env = dict(os.environ) if environ is None else environ
    script = Path(sys.argv[0]).absolute() if sys.argv and sys.argv[0] else None
    venv = env.get("VIRTUAL_ENV")
    if env.get("UV") and venv:
        # Under `uv run`: from inside the uv project, `uv run` finds it again; from elsewhere the
        # command is only on PATH while uv runs it, so name the installed script.
        project = Path(venv).parent
        if folder == project or project in folder.parents:
            return "uv run etl-craft" if shutil.which("uv") else "python3 -m uv run etl-craft"
        return str(Path(venv) / "bin" / "etl-craft")
    found = shutil.which("etl-craft")
    if found and script and script.name == "etl-craft" and Path(found).resolve() == script.resolve():
        return "etl-craft"
    if script and script.name == "etl-craft":
        return str(script)
    return "etl-craft"


def explore_commands(folder: Path, command: str, runs: list[DemoRunView]) -> tuple[str, ...]:
    """Commands to look further, with the real folder and run ids (commands act on a run named by id)."""
    alpha = [run.pipeline_run_id for run in runs if run.pipeline_code == "client_alpha" and run.pipeline_run_id]
    run = f" --run-id {alpha[-1]}" if alpha else ""
    return (
        f"cd {folder}",
        f"{command} status --pipeline_code client_alpha{run}",
        f"{command} explain --pipeline_code client_alpha --task_code alpha_stg_to_fact{run}",
        f"{command} history --pipeline_code client_alpha",
        f"{command} lineage --table dm.ticket_fact --column agent_name",
        f"{command} graph --pipeline_code client_alpha",
    )


# --- reading what happened ------------------------------------------------------------------------


def _flags(conn: sa.Connection, kind: str) -> dict[str, int]:
    """Tickets with an active flag of this kind (REJECT or REPORT), per pipeline."""
    results, rules, pipelines = t.aud_business_rules_results, t.cfg_business_rules, t.cfg_pipelines
    rows = conn.execute(
        sa.select(pipelines.c.pipeline_code, sa.func.count(sa.distinct(results.c.business_rule_key)))
        .join(rules, rules.c.business_rule_id == results.c.business_rule_id)
        .join(pipelines, pipelines.c.pipeline_id == rules.c.pipeline_id)
        .where(results.c.status == kind, results.c.active_flag == "Y")
        .group_by(pipelines.c.pipeline_code)
    ).all()
    return {code: int(count) for code, count in rows}


def fact_rows(warehouse: Path) -> dict[str, int]:
    """Active rows of dm.ticket_fact per client, read without holding the file for writing."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as conn:
        found = conn.execute(
            "SELECT client, COUNT(*) FROM dm.ticket_fact WHERE ACTIVE_FLAG = 'Y' GROUP BY client ORDER BY client"
        ).fetchall()
    return {str(client): int(count) for client, count in found}


def _run_view(ctx: OperationContext, batch: int, code: str, run_id: int | None, message: str) -> DemoRunView:
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, code)
        graph = load_graph(conn, pipeline)
        run = reads.run(conn, run_id) if run_id is not None else None
        task_runs = reads.task_runs_of(conn, run_id) if run_id is not None else {}
        rejected = _flags(conn, "REJECT").get(code, 0) if code in CLIENTS else None
    tasks = []
    for task_id, node in graph.tasks.items():
        task_run = task_runs.get(task_id)
        tasks.append(
            DemoTaskView(
                task_code=node.code,
                handler=node.handler.value,
                status=task_run.status if task_run else "NOT RUN",
                attempts=task_run.attempt_count if task_run else 0,
                rows_written=task_run.rows_written if task_run else None,
                seconds=elapsed(task_run.start_date, task_run.end_date) if task_run else None,
                error=(task_run.error_message or "").splitlines()[0] if task_run and task_run.error_message else None,
            )
        )
    # In the order the tasks were recorded, then the ones that never ran.
    recorded = {graph.tasks[i].code: r.task_run_id for i, r in task_runs.items() if i in graph.tasks}
    tasks.sort(key=lambda v: (v.task_code not in recorded, recorded.get(v.task_code, 0), v.task_code))
    return DemoRunView(
        batch=batch,
        pipeline_code=code,
        pipeline_run_id=run_id,
        status=run.status if run else "NOT RUN",
        seconds=elapsed(run.start_date, run.end_date) if run else None,
        tasks=tuple(tasks),
        rows_written=sum(task.rows_written or 0 for task in tasks),
        rejected_tickets=rejected,
        message=message,
    )


# --- the demo -------------------------------------------------------------------------------------


class _Steps:
    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.lines: list[str] = []

    def __call__(self, message: str, kind: str = "step", batch: int | None = None) -> None:
        self.lines.append(message)
        self.listener(DemoEvent(kind, message, batch=batch))


def _validation(ctx: OperationContext, step: _Steps) -> str:
    """Run validate, as a team would before its first run; a FAIL stops the demo before anything runs."""
    from etl_craft.services.validate import validate

    report = validate(ctx)
    summary = report.lines[-1] if report.lines else "validate: no findings"
    for line in report.lines[:-1]:
        step(f"validate: {line}")
    step(f"validate: {summary}")
    if not report.valid:
        raise ConfigurationError(
            "the demo project's metadata",
            found=summary,
            expected="no FAIL from etl-craft validate",
            remedy=f"this is a bug in the demo project; run etl-craft validate in {ctx.config.project_dir} for details",
        )
    return summary


def _prepare(folder: Path, target: str | None, step: _Steps) -> tuple[Path, tuple[str, ...]]:
    """Write the project and its warehouse, then set up its Engine DB: the warehouse file and the
    project migrations applied."""
    try:
        files = write_project(folder)
    except OSError as exc:
        raise UsageError(
            f"etl-craft demo {target or ''}".rstrip(),
            found=f"{folder}, which can't be written ({exc.strerror})",
            expected="a new or empty folder to write the demo project into",
            remedy="name a folder you can write",
        ) from None
    step(f"wrote the demo project to {folder} ({files} files)")
    warehouse = create_warehouse(folder)
    step(f"created the warehouse {warehouse.name}: the schemas and landing tables of {WAREHOUSE_DDL}")

    def announce(migration: MigrationFile) -> None:
        step(f"migrate: applying {migration.source.value} migration {migration.version}")

    made = setup.setup(str(folder / CONFIG_FILE), None, announce)
    if made.checks.failed:
        failed = "; ".join(f"{c.name}: {c.detail}" for c in made.checks.checks if c.status == "FAIL")
        raise ConfigurationError(
            f"setup of the demo project in {folder}", found=failed, remedy="fix what the check names and run it again"
        )
    step(f"setup: {made.message}")
    return warehouse, tuple(made.migrate.project_applied if made.migrate else ())


def _run_batches(
    ctx: OperationContext, folder: Path, step: _Steps, listener: Listener, log_level: str
) -> tuple[list[DemoRunView], DemoRunView | None]:
    """Every pipeline of every batch, in order, until a run does not succeed (that run is returned too)."""
    runs: list[DemoRunView] = []
    for batch, about, pipelines in BATCHES:
        if batch > 1:
            dropped = drop_batch(folder, batch)
            step(f"batch {batch}: dropped {dropped} new source and seed file(s) in place", "batch", batch)
        step(f"batch {batch}: {about}", "batch", batch)
        for code in pipelines:
            view = _run_pipeline(ctx, batch, code, listener, log_level)
            runs.append(view)
            if view.status != "SUCCESS":
                return runs, view
    return runs, None


def run_demo(
    target: str | None = None,
    listener: Listener = lambda _event: None,
    *,
    cwd: Path | None = None,
    log_level: str = "INFO",
) -> DemoView:
    """Write the demo project, set it up and run both batches; stops at the first run that does not succeed."""
    started = time.monotonic()
    folder = choose_folder(target, cwd or Path.cwd())
    step = _Steps(listener)
    warehouse, migrations = _prepare(folder, target, step)
    ctx = open_context(str(folder / CONFIG_FILE))
    try:
        validation = _validation(ctx, step)
        runs, failed_run = _run_batches(ctx, folder, step, listener, log_level)
        with ctx.db.read() as conn:
            rejected = _flags(conn, "REJECT")
            reported = _flags(conn, "REPORT")
    finally:
        ctx.close()
    facts = fact_rows(warehouse) if failed_run is None else {}
    outbox = tuple(sorted(str(p) for p in (folder / "outbox").glob("*.eml")))
    ok = failed_run is None
    if failed_run is None:
        message = f"every run of the demo ended SUCCESS ({len(runs)} runs)"
    else:
        message = (
            f"{failed_run.pipeline_code} run {failed_run.pipeline_run_id} ended {failed_run.status}; the demo "
            f"stopped there: {failed_run.message}"
        )
    return DemoView(
        status="SUCCESS" if ok else "FAILED",
        message=message,
        exit_code=int(ExitCode.SUCCESS if ok else ExitCode.FAILURE),
        project_dir=str(folder),
        engine_db=str(folder / "engine.db"),
        warehouse=str(warehouse),
        migrations=tuple(migrations),
        validation=validation,
        runs=tuple(runs),
        rejected_tickets={code: rejected.get(code, 0) for code in CLIENTS},
        reported_tickets={code: reported.get(code, 0) for code in CLIENTS},
        fact_rows=facts,
        outbox=outbox,
        explore=explore_commands(folder, launcher(folder), runs),
        seconds=round(time.monotonic() - started, 1),
        steps=tuple(step.lines),
    )


def _run_pipeline(ctx: OperationContext, batch: int, code: str, listener: Listener, log_level: str) -> DemoRunView:
    with ctx.db.read() as conn:
        graph = load_graph(conn, reads.find_pipeline(conn, code))
    watcher = RunWatcher(ctx, graph, batch, listener)
    result = execute_run(ctx, RunRequest(pipeline_code=code, log_level=log_level), watcher)
    watcher.look()
    run_id = result.run.pipeline_run_id if result.run else None
    view = _run_view(ctx, batch, code, run_id, result.message)
    listener(
        DemoEvent(
            "run_finished",
            f"[batch {batch}] {result.message}",
            batch=batch,
            pipeline_code=code,
            pipeline_run_id=run_id,
            status=view.status,
            rows_written=view.rows_written,
            seconds=view.seconds,
            tasks=len(view.tasks),
        )
    )
    return view
