"""The column names a SELECT returns, as far as they can be known without running it.

At run time the stage table says what the SELECT returned. Before that (validate), sqlglot can name
a column that is a plain or aliased column reference; `*` and unaliased expressions get names only
the warehouse knows, so they stay unknown and checks that need every name are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OutputNames:
    names: tuple[str, ...]  # the names that are known, in the warehouse's case
    complete: bool  # every output column is named (no *, no unaliased expression)


def output_names(select: str, sqlglot_dialect: str, identifier_case: str | None) -> OutputNames | None:
    """The SELECT's output names, folded as the warehouse folds unquoted names; None if it doesn't parse."""
    import sqlglot
    from sqlglot import exp

    try:
        statement = sqlglot.parse_one(select, read=sqlglot_dialect or None)
    except sqlglot.errors.SqlglotError:
        return None
    while isinstance(statement, exp.Subquery | exp.SetOperation):
        statement = statement.this  # a set operation takes the names of its first query
    if not isinstance(statement, exp.Select):
        return OutputNames((), False)  # VALUES and the like: the warehouse names the columns
    names: list[str] = []
    complete = True
    for projection in statement.expressions:
        if isinstance(projection, exp.Alias):
            identifier = projection.args.get("alias")
        elif isinstance(projection, exp.Column):
            identifier = projection.this
        else:
            identifier = None
        if not isinstance(identifier, exp.Identifier):
            complete = False  # *, t.* or an expression without an alias
            continue
        name = identifier.name
        if not identifier.quoted:
            name = {"lower": name.lower(), "upper": name.upper()}.get(identifier_case or "", name)
        names.append(name)
    return OutputNames(tuple(names), complete)
