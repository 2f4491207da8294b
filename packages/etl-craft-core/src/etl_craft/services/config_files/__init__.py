"""`config export|plan|apply`: the six CSV files of `config/` as a second way to write CFG_ rows.

Export writes the Engine DB's live rows; plan works out every change, makes them in a transaction,
validates the result there and rolls it back; apply does the same under the migrate lock and
commits unless validate fails. CFG_ triggers record each change in AUD_METADATA_CHANGES under the
marker `config@<revision>`, the revision being the first 12 hex digits of the files' SHA-256.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etl_craft.core.errors import ConfigFilesError
from etl_craft.engine import locks
from etl_craft.engine.database import recording_migration
from etl_craft.engine.reads.cfg_rows import CfgRows, read_cfg_rows
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.schema import migrations
from etl_craft.services.config_files.changes import ConfigChange, carry_out, plan_changes
from etl_craft.services.config_files.files import FILES, ConfigFolder, read_folder, write_file
from etl_craft.services.context import OperationContext
from etl_craft.services.validate import ValidationReport, validate_metadata

__all__ = ["ConfigChange", "ConfigExportView", "ConfigSyncView", "apply", "config_directory", "export", "plan"]

VALIDATE_REFUSED = "validate failed the result, so nothing was changed"


def config_directory(ctx: OperationContext, explicit: str | None) -> Path:
    """--config-dir, else config/ beside craft-connector.yml."""
    return Path(explicit).absolute() if explicit else ctx.config.project_dir / "config"


# --- export --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportedFile:
    file: str
    rows: int


@dataclass(frozen=True)
class ConfigExportView:
    directory: str
    files: tuple[ExportedFile, ...]
    message: str


def _live_rows(rows: CfgRows) -> dict[str, list[dict[str, Any]]]:
    """Each file's rows: the active rows whose pipelines and tasks are active, codes in place of ids."""
    pipelines = {r["pipeline_id"]: r for r in rows.pipelines if r["active_flag"] == "Y"}
    tasks = {r["task_id"]: r for r in rows.tasks if r["active_flag"] == "Y" and r["pipeline_id"] in pipelines}

    def pcode(pipeline_id: int | None) -> str | None:
        return None if pipeline_id is None else pipelines[pipeline_id]["pipeline_code"]

    def of_task(task_id: int) -> dict[str, Any]:
        return {"pipeline_code": pcode(tasks[task_id]["pipeline_id"]), "task_code": tasks[task_id]["task_code"]}

    def live(row: dict[str, Any] | Any, *task_ids: int, pipeline_ids: tuple[int | None, ...] = ()) -> bool:
        return (
            row["active_flag"] == "Y"
            and all(t in tasks for t in task_ids)
            and all(p is None or p in pipelines for p in pipeline_ids)
        )

    found: dict[str, list[dict[str, Any]]] = {
        "pipelines.csv": [dict(r) for r in pipelines.values()],
        "tasks.csv": [{**r, "pipeline_code": pcode(r["pipeline_id"])} for r in tasks.values()],
        "task_parameters.csv": [{**r, **of_task(r["task_id"])} for r in rows.task_parameters if live(r, r["task_id"])],
        "task_dependencies.csv": [
            {
                **r,
                **of_task(r["task_id"]),
                "depends_on_pipeline_code": pcode(r["depends_on_pipeline_id"]),
                "depends_on_task_code": tasks[r["depends_on_task_id"]]["task_code"],
            }
            for r in rows.task_dependencies
            if live(r, r["task_id"], r["depends_on_task_id"], pipeline_ids=(r["depends_on_pipeline_id"],))
        ],
        "pipeline_dependencies.csv": [
            {
                **r,
                "pipeline_code": pcode(r["pipeline_id"]),
                "depends_on_pipeline_code": pcode(r["depends_on_pipeline_id"]),
            }
            for r in rows.pipeline_dependencies
            if live(r, pipeline_ids=(r["pipeline_id"], r["depends_on_pipeline_id"]))
        ],
        "business_rules.csv": [{**r, **of_task(r["task_id"])} for r in rows.business_rules if live(r, r["task_id"])],
    }
    for spec in FILES:
        keys = [c.db for c in spec.key_columns]
        found[spec.file].sort(key=lambda r, keys=keys: [str(r[k] or "") for k in keys])  # type: ignore[misc]
    return found


def export(ctx: OperationContext, config_dir: str | None = None, *, force: bool = False) -> ConfigExportView:
    """Write the six files from the Engine DB; existing files are overwritten only with `force`."""
    directory = config_directory(ctx, config_dir)
    existing = [spec.file for spec in FILES if (directory / spec.file).exists()]
    if existing and not force:
        raise ConfigFilesError(
            f"the configuration folder {directory}",
            found=f"{len(existing)} file(s) already there: {', '.join(existing)}",
            expected="a folder without configuration files",
            remedy="pass --force to overwrite them with what the Engine DB holds, or choose another --config-dir",
        )
    with ctx.db.snapshot() as conn:
        rows = _live_rows(read_cfg_rows(conn))
    written = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for spec in FILES:
            write_file(directory / spec.file, spec, rows[spec.file])
            written.append(ExportedFile(spec.file, len(rows[spec.file])))
    except OSError as exc:
        raise ConfigFilesError(
            f"the configuration folder {directory}",
            found=f"a folder that can't be written ({exc.strerror}: {exc.filename})",
            expected="a folder (or a place for a new one) you can write",
            remedy="choose another --config-dir, or correct the permissions",
        ) from None
    total = sum(f.rows for f in written)
    return ConfigExportView(
        str(directory), tuple(written), f"wrote {total} row(s) in {len(written)} file(s) to {directory}"
    )


# --- plan and apply ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigSyncView:
    command: str  # plan | apply
    revision: str
    directory: str
    changes: tuple[ConfigChange, ...]
    validation: ValidationReport
    applied: bool
    message: str

    @property
    def header(self) -> str:
        return f"config {self.revision} from {self.directory}: {len(self.changes)} change(s)"


class _RollBack(Exception):
    """Ends the transaction without committing it."""


def _sync(
    ctx: OperationContext, folder: ConfigFolder, *, commit: bool
) -> tuple[tuple[ConfigChange, ...], ValidationReport]:
    """Make the changes and validate the result in one transaction; commit only when asked and valid."""
    result: tuple[tuple[ConfigChange, ...], ValidationReport] | None = None
    try:
        with recording_migration(f"config@{folder.revision}"), ctx.db.write() as conn:
            steps = plan_changes(folder, read_cfg_rows(conn))
            carry_out(conn, steps)
            report = validate_metadata(conn, ctx.config)
            result = tuple(s.change for s in steps), report
            if not (commit and report.valid):
                raise _RollBack
    except _RollBack:
        pass
    assert result is not None
    return result


def plan(ctx: OperationContext, config_dir: str | None = None) -> ConfigSyncView:
    """Every change the files make, and validate's verdict on the result; nothing is kept."""
    folder = read_folder(config_directory(ctx, config_dir))
    changes, report = _sync(ctx, folder, commit=False)
    if not report.valid:
        message = f"validate failed the result: config apply would change nothing ({report.failed} failed)"
    elif changes:
        message = f"{len(changes)} change(s) would be applied; nothing was changed"
    else:
        message = "the Engine DB already holds what the files say"
    return ConfigSyncView("plan", folder.revision, str(folder.directory), changes, report, False, message)


def apply(ctx: OperationContext, config_dir: str | None = None) -> ConfigSyncView:
    """Make the changes in one transaction under the migrate lock, unless validate fails the result."""
    folder = read_folder(config_directory(ctx, config_dir))
    record_request(
        ctx.db, ctx.actor, "config apply", {"config_dir": str(folder.directory), "revision": folder.revision}
    )
    with locks.hold(ctx.db, locks.MIGRATE_LOCK, timeout=migrations.LOCK_TIMEOUT_SECONDS):
        changes, report = _sync(ctx, folder, commit=True)
    applied = report.valid and bool(changes)
    if not report.valid:
        message = VALIDATE_REFUSED
    elif changes:
        message = f"applied {len(changes)} change(s) as config@{folder.revision}"
    else:
        message = "the Engine DB already holds what the files say; nothing changed"
    return ConfigSyncView("apply", folder.revision, str(folder.directory), changes, report, applied, message)
