"""What `etl-craft demo` shows: live progress while it runs, then a summary.

On a terminal the progress is drawn with rich (imported only here, only then): finished runs scroll
by as one line each while the running one lists its tasks. Piped or redirected, every event is one
plain line. With --format json the lines go to stderr and stdout carries only the JSON document.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from etl_craft.core.enums import ENDED_WELL
from etl_craft.services.demo.events import DemoEvent

if TYPE_CHECKING:
    from etl_craft.services.demo.walkthrough import DemoRunView, DemoView

STEPS = ("source_to_lnd", "lnd_to_prs", "prs_to_cdc", "cdc_to_stg", "rules", "publish_rejects", "stg_to_fact")
CLIENT_PREFIX = "client_"
TEXT_COLUMNS = frozenset({"PIPELINE", "STATUS", "TASK (ROWS WRITTEN)"})


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _client(code: str) -> str:
    return code.removeprefix(CLIENT_PREFIX)


def _step_of(task_code: str, client: str) -> str:
    return task_code.removeprefix(f"{client}_")


def _tasks_done(run: DemoRunView) -> str:
    done = sum(task.status in ENDED_WELL for task in run.tasks)
    return f"{done}/{len(run.tasks)}"


def runs_table(view: DemoView) -> tuple[list[str], list[list[str]]]:
    header = ["BATCH", "PIPELINE", "RUN", "STATUS", "TASKS OK", "ROWS WRITTEN", "REJECTED", "DURATION"]
    rows = [
        [
            str(run.batch),
            run.pipeline_code,
            "-" if run.pipeline_run_id is None else str(run.pipeline_run_id),
            run.status,
            _tasks_done(run),
            _count(run.rows_written),
            _count(run.rejected_tickets),
            _seconds(run.seconds),
        ]
        for run in view.runs
    ]
    return header, rows


def client_steps_table(view: DemoView) -> tuple[list[str], list[list[str]]]:
    """Rows written per client task: one row per step, one column per client and batch."""
    columns = [
        (run.batch, _client(run.pipeline_code)) for run in view.runs if run.pipeline_code.startswith(CLIENT_PREFIX)
    ]
    written: dict[tuple[int, str, str], int | None] = {}
    alerts: dict[tuple[int, str], str] = {}
    for run in view.runs:
        if not run.pipeline_code.startswith(CLIENT_PREFIX):
            continue
        client = _client(run.pipeline_code)
        for task in run.tasks:
            step = _step_of(task.task_code, client)
            if task.handler == "EMAIL_ALERT":
                alerts[(run.batch, client)] = task.status
            elif task.status == "SUCCESS":
                written[(run.batch, client, step)] = task.rows_written or 0
            else:
                written[(run.batch, client, step)] = None
    header = ["TASK (ROWS WRITTEN)", *[f"{client} #{batch}" for batch, client in columns]]
    rows = [[step, *[_count(written.get((b, c, step))) for b, c in columns]] for step in STEPS]
    if alerts:
        rows.append(["failure_alert", *[alerts.get((b, c), "-").lower() for b, c in columns]])
    return header, rows


def other_tasks_lines(view: DemoView) -> list[str]:
    lines = []
    for run in view.runs:
        if run.pipeline_code.startswith(CLIENT_PREFIX) or run.pipeline_code == "support_setup":
            continue
        parts = ", ".join(f"{task.task_code} {_count(task.rows_written)}" for task in run.tasks)
        lines.append(f"{run.pipeline_code} #{run.batch}: {parts}")
    return lines


def outcome_lines(view: DemoView) -> list[str]:
    lines = []
    if view.fact_rows:
        facts = ", ".join(f"{client.lower()} {count:,}" for client, count in view.fact_rows.items())
        lines.append(f"dm.ticket_fact: {sum(view.fact_rows.values()):,} active tickets ({facts})")
    rejected = ", ".join(f"{_client(code)} {count}" for code, count in view.rejected_tickets.items())
    reported = ", ".join(f"{_client(code)} {count}" for code, count in view.reported_tickets.items())
    lines.append(f"rejected tickets, kept out of the fact table until a delivery fixes them: {rejected}")
    lines.append(f"reported tickets (slow or unhappy, for someone to look at): {reported}")
    if view.outbox:
        lines.append(f"alerts written to the outbox (no Email relay is configured): {', '.join(view.outbox)}")
    else:
        lines.append(
            "alerts: no Email relay is configured, so a failed run's alert would be written to "
            f"{view.project_dir}/outbox/ as an .eml file; every run succeeded, so none was"
        )
    return lines


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return [
        indent + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]
    ]


class PlainDisplay:
    """One line per event, and the summary as aligned text."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __enter__(self) -> PlainDisplay:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stream.flush()

    def event(self, event: DemoEvent) -> None:
        if event.kind == "batch":
            self.stream.write("\n")
        self.stream.write(event.message + "\n")
        self.stream.flush()

    def summary(self, view: DemoView) -> None:
        out: list[str] = ["", f"etl-craft demo: {view.message} in {view.seconds:.1f}s", "", "Runs:"]
        out += aligned(*runs_table(view))
        out += ["", "Rows written by each client's tasks (#1 and #2 are the batches):"]
        out += aligned(*client_steps_table(view))
        out += ["", *other_tasks_lines(view), "", *outcome_lines(view)]
        out += ["", f"The project is in {view.project_dir}. Explore it:"]
        out += [f"  {line}" for line in view.explore]
        self.stream.write("\n".join(out) + "\n")
        self.stream.flush()


_ICONS = {"SUCCESS": "[green]✔[/]", "FAILED": "[red]✘[/]", "SKIPPED": "[dim]–[/]", "CANCELLED": "[red]■[/]"}


class RichDisplay:
    """Live progress on a terminal: the running pipeline's tasks, finished runs as one line each."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console()
        self.live: Any = None
        self.tasks: dict[str, DemoEvent] = {}
        self.started: dict[str, float] = {}
        self.current: DemoEvent | None = None

    def __enter__(self) -> RichDisplay:
        from rich.live import Live

        self.live = Live(self, console=self.console, refresh_per_second=8, transient=True)
        self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.live.__exit__(*exc)

    def __rich__(self) -> Any:
        from rich.spinner import Spinner
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        if self.current is None:
            return table
        table.add_row(
            Spinner("dots", style="cyan"), f"[bold]{self.current.pipeline_code}[/] run {self.current.pipeline_run_id}"
        )
        for code, event in self.tasks.items():
            if event.kind == "task_finished":
                icon = _ICONS.get(event.status or "", "?")
                detail = (
                    f"{_count(event.rows_written)} rows  {_seconds(event.seconds)}"
                    if event.status == "SUCCESS"
                    else event.status
                )
                table.add_row(icon, f"{code}  [dim]{detail}[/]")
            else:
                running = time.monotonic() - self.started.get(code, time.monotonic())
                table.add_row(Spinner("dots"), f"{code}  [dim]{running:.1f}s[/]")
        return table

    def event(self, event: DemoEvent) -> None:
        from rich.markup import escape

        if event.kind == "batch":
            self.console.print(f"\n[bold]{escape(event.message[0].upper() + event.message[1:])}[/]")
        elif event.kind == "step":
            self.console.print(f"[dim]·[/] {escape(event.message)}")
        elif event.kind == "run_started":
            self.current, self.tasks, self.started = event, {}, {}
        elif event.kind in ("task_started", "task_finished") and event.task_code:
            self.tasks[event.task_code] = event
            if event.kind == "task_started":
                self.started[event.task_code] = time.monotonic()
        elif event.kind == "run_finished":
            icon = _ICONS.get(event.status or "", "?")
            self.console.print(
                f"{icon} [bold]{event.pipeline_code}[/] run {event.pipeline_run_id} {event.status}  "
                f"[dim]{len(self.tasks)} task(s), {_count(event.rows_written)} rows written, "
                f"{_seconds(event.seconds)}[/]"
            )
            self.current, self.tasks = None, {}
        if self.live is not None:
            self.live.refresh()

    def summary(self, view: DemoView) -> None:
        from rich.markup import escape
        from rich.table import Table

        def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
            result = Table(title=title, title_justify="left", title_style="bold")
            for name in header:
                result.add_column(name, justify="left" if name in TEXT_COLUMNS else "right")
            for row in rows:
                result.add_row(*[_ICONS.get(c, "") + " " + c if c in _ICONS else c for c in row])
            return result

        colour = "green" if view.status == "SUCCESS" else "red"
        self.console.print(f"\n[bold {colour}]etl-craft demo: {view.message}[/] in {view.seconds:.1f}s\n")
        self.console.print(table("Runs", *runs_table(view)))
        self.console.print(
            table("Rows written by each client's tasks (#1 and #2 are the batches)", *client_steps_table(view))
        )
        for line in [*other_tasks_lines(view), *outcome_lines(view)]:
            self.console.print(f"[dim]·[/] {escape(line)}")
        self.console.print(f"\nThe project is in [bold]{view.project_dir}[/]. Explore it:")
        for line in view.explore:
            self.console.print(f"  [cyan]{escape(line)}[/]", highlight=False, soft_wrap=True)


def display_for(json_output: bool) -> PlainDisplay | RichDisplay:
    if json_output:
        return PlainDisplay(sys.stderr)
    if sys.stdout.isatty():
        return RichDisplay()
    return PlainDisplay(sys.stdout)
