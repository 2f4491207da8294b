"""`history` and `audit`: past runs with their interventions, and the audit trail (read-only)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from etl_craft.cli import arguments
from etl_craft.cli.commands.run import add_run_selector
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit
from etl_craft.cli.text import ABSENT, compact_json, first_line, rows
from etl_craft.core.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from etl_craft.services.inspect.history import AuditView, HistoryView, InterventionView, MetadataChangeView
    from etl_craft.services.views import RunView, TaskRunView

# CFG_ columns etl-craft stamps on every change; the text leaves them out of BEFORE and AFTER.
STAMPS = frozenset({"CREATED_BY", "CREATE_DATE", "UPDATED_BY", "UPDATED_DATE"})


# --- history -----------------------------------------------------------------------------------------


def _to(i: InterventionView) -> str:
    if i.to_status is not None:
        return i.to_status
    return "(reset)" if i.action == "RESET" else ABSENT


_RUN_COLUMNS = ["PIPELINE_RUN_ID", "STATUS", "TRIGGER_KIND", "RUN_DATE", "START_DATE", "END_DATE", "SLA_STATUS"]
_TASK_COLUMNS = ["PIPELINE_RUN_ID", "STATUS", "TRIGGER_KIND", "ATTEMPTS", "SOURCE_COUNT", "TARGET_COUNT"]
_INTERVENTION_COLUMNS = ["PIPELINE_RUN_ID", "TASK", "ACTION", "FROM", "TO", "BY", "AT", "REASON"]


def _run_cells(r: RunView) -> list[object]:
    return [
        *(r.pipeline_run_id, r.status, r.trigger_kind, r.run_date, r.start_date, r.end_date, r.sla_status),
        *(r.started_by, r.ended_by),
    ]


def _task_cells(t: TaskRunView, trigger_kind: str | None) -> list[object]:
    return [
        *(t.pipeline_run_id, t.status, trigger_kind, t.attempt_count, t.source_count, t.target_count),
        *(t.start_date, t.end_date, first_line(t.error_message)),
    ]


def _intervention_cells(i: InterventionView) -> list[object]:
    return [
        *(i.pipeline_run_id, i.task_code or "(the run)", i.action, i.from_status, _to(i), i.requested_by),
        *(i.requested_at, i.reason),
    ]


def _run_lines(view: HistoryView) -> list[str]:
    return rows([*_RUN_COLUMNS, "STARTED_BY", "ENDED_BY"], [_run_cells(r) for r in view.runs])


def _task_lines(view: HistoryView) -> list[str]:
    kinds: dict[int | None, str] = {r.pipeline_run_id: r.trigger_kind for r in view.runs}
    cells = [_task_cells(t, kinds.get(t.pipeline_run_id)) for t in view.task_runs]
    return rows([*_TASK_COLUMNS, "START_DATE", "END_DATE", "ERROR_MESSAGE"], cells)


def _intervention_lines(view: HistoryView) -> list[str]:
    if not view.interventions:
        return ["Interventions: (none)"]
    return ["Interventions:", *rows(_INTERVENTION_COLUMNS, [_intervention_cells(i) for i in view.interventions])]


def history_text(view: HistoryView) -> list[str]:
    if not view.runs:
        return ["no runs yet"]
    lines = _run_lines(view) if view.task_code is None else _task_lines(view)
    return [*lines, *_intervention_lines(view)]


def _configure_history(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")
    parser.add_argument("--task_code", type=arguments.code, metavar="CODE", help="one task's row in each run")
    how_many = parser.add_mutually_exclusive_group()
    how_many.add_argument(
        "--limit",
        type=arguments.whole_number(1, remedy="Give a limit of 1 or more, or use --all for every run"),
        metavar="N",
        help="the newest N runs (default 20)",
    )
    how_many.add_argument("--all", action="store_true", help="every run")
    parser.add_argument(
        "--before",
        type=arguments.whole_number(1),
        metavar="RUN_ID",
        help="only runs older than this one (the next page)",
    )
    add_run_selector(parser)


def _run_history(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect import run_history
    from etl_craft.services.inspect.history import DEFAULT_LIMIT
    from etl_craft.services.runs.selection import RunSelector

    selector = RunSelector(args.run_id, args.run_key)
    if selector.explicit and (args.limit is not None or args.all or args.before is not None):
        flag = "--all" if args.all else "--limit" if args.limit is not None else "--before"
        raise UsageError(
            "etl-craft history",
            found=f"{selector.describe()} with {flag}",
            expected="a named run alone (it shows that one run), or --limit/--all/--before without one",
        )
    limit = None if args.all else DEFAULT_LIMIT if args.limit is None else args.limit
    ctx = open_context(args.config)
    try:
        view = run_history(
            ctx, args.pipeline_code, task_code=args.task_code, limit=limit, selector=selector, before=args.before
        )
    finally:
        ctx.close()
    emit(args, "history", view, history_text(view))
    return ExitCode.SUCCESS


# --- audit -------------------------------------------------------------------------------------------


def _arguments(arguments: Any) -> str:
    """The arguments that were given: unset (null) and off (false) ones are left out of the text."""
    if not isinstance(arguments, dict):
        return compact_json(arguments)
    return compact_json({k: v for k, v in arguments.items() if v is not None and v is not False})


def _images(change: MetadataChangeView) -> tuple[str, str]:
    """BEFORE and AFTER without the stamp columns; an UPDATE shows only the columns it changed."""
    before = {k: v for k, v in (change.before or {}).items() if k not in STAMPS}
    after = {k: v for k, v in (change.after or {}).items() if k not in STAMPS}
    if change.before is not None and change.after is not None:
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        before = {k: v for k, v in before.items() if k in changed}
        after = {k: v for k, v in after.items() if k in changed}
    return (
        ABSENT if change.before is None else compact_json(before),
        ABSENT if change.after is None else compact_json(after),
    )


def audit_text(view: AuditView) -> list[str]:
    lines = rows(
        ["AT", "ACTOR", "KIND", "COMMAND", "OUTCOME", "ARGUMENTS"],
        [[a.at, a.actor, a.actor_kind, a.command, a.outcome, _arguments(a.arguments)] for a in view.actions],
    )
    lines += rows(
        ["AT", "ACTOR", "KIND", "TABLE", "ROW", "OPERATION", "BEFORE", "AFTER", "MIGRATION"],
        [
            [c.at, c.actor, c.actor_kind, c.table_name, c.row_key, c.operation, *_images(c), c.migration]
            for c in view.metadata_changes
        ],
    )
    return lines


def _configure_audit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, metavar="CODE", help="only what concerns this pipeline")
    parser.add_argument(
        "--since", metavar="WHEN", help="from this ISO date or timestamp on (without an offset it is UTC)"
    )


def _run_audit(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect import audit, parse_since

    since = parse_since(args.since) if args.since is not None else None
    ctx = open_context(args.config)
    try:
        view = audit(ctx, args.pipeline_code, since)
    finally:
        ctx.close()
    emit(args, "audit", view, audit_text(view))
    return ExitCode.SUCCESS


HISTORY = Command(
    "history", "list a pipeline's runs, newest first, and their interventions", _run_history, _configure_history
)
AUDIT = Command("audit", "list command requests and metadata changes", _run_audit, _configure_audit)
