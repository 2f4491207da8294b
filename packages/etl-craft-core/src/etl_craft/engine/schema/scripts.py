"""A SQL script as etl-craft runs it: numbered statements, each with the line it starts on, and which
one failed (the dialect that runs the script says so where its driver runs statements one by one)."""

from __future__ import annotations

from dataclasses import dataclass

from etl_craft.core.text import one_line


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its number in the file, the line it starts on, its text."""

    number: int
    line: int
    sql: str

    def describe(self) -> str:
        return f"statement {self.number} (line {self.line}: {one_line(self.sql, 60)})"


class StatementFailed(Exception):
    """A statement of a script failed: which one, and what the database said about it."""

    def __init__(self, statement: Statement, detail: str) -> None:
        super().__init__(f"{statement.describe()}: {detail}")
        self.statement = statement
        self.detail = detail


class ScriptRefused(Exception):
    """The database refused a script as a whole, judged after its statements ran: no one statement
    is to blame (what it found is the message)."""
