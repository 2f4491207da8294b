"""Which handler runs a task. Each handler is imported only when a task of its kind runs: a PYTHON
task's process then never loads sqlglot or a warehouse driver (the task process start is a hot path)."""

from __future__ import annotations

from collections.abc import Iterable

from etl_craft.core.enums import Handler
from etl_craft.handlers.context import HandlerResult, TaskContext


def run(ctx: TaskContext) -> HandlerResult:
    """Run the task's handler."""
    match ctx.handler:
        case Handler.PYTHON:
            from etl_craft.handlers import python_script

            return python_script.run(ctx)
        case Handler.SQL:
            from etl_craft.handlers import sql

            return sql.run(ctx)
        case Handler.BUSINESS_RULES:
            from etl_craft.handlers import business_rules

            return business_rules.run(ctx)
        case Handler.EMAIL_ALERT:
            from etl_craft.handlers import email_alert

            return email_alert.run(ctx)


def modules(handlers: Iterable[Handler]) -> list[str]:
    """The modules `run` imports for these handlers, for a fork server to import ahead of the task
    processes it starts (it takes names). tests/core/execution/test_handler_dispatch.py checks that
    they are the modules `run` imports."""
    return [f"{__package__}.{_MODULE_NAMES[h]}" for h in handlers]


_MODULE_NAMES = {
    Handler.PYTHON: "python_script",
    Handler.SQL: "sql",
    Handler.BUSINESS_RULES: "business_rules",
    Handler.EMAIL_ALERT: "email_alert",
}
