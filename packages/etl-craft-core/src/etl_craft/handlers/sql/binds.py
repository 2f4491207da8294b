"""Bind parameters in an author's SQL: etl-craft binds no values, so `:name`, `?`, `%(name)s` or (on
PostgreSQL and DuckDB) `$1` and `$name` never run.

The markers are found with the warehouse dialect's own tokenizer, so string literals, quoted names,
comments, dollar-quoted bodies and `::` casts are never mistaken for one. A marker counts only where
a value is expected: after a column, a literal or a closing bracket, `?` is PostgreSQL's JSON
operator, `:` a JSON path or slice separator and `%` the modulo operator.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from etl_craft.core.errors import SqlGuardError

if TYPE_CHECKING:
    from sqlglot.tokens import Token

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
# Keywords sqlglot also accepts as names but after which SQL expects a value, so a marker there is one.
_VALUE_KEYWORDS = frozenset(
    {"IN", "IS", "LIMIT", "OFFSET", "CASE", "INTERVAL", "ESCAPE", "ANY", "ALL", "SOME", "EXISTS", "TOP", "FETCH"}
)

# Where `$1` and `$name` are bind parameters. Elsewhere they are not: in Snowflake `$1` is a staged
# file's column and `$name` a session variable; Trino and Databricks take part of a name with `$`.
_DOLLAR_BINDS = frozenset({"postgres", "duckdb"})


@dataclass(frozen=True)
class BindMarker:
    text: str  # as written, e.g. :since, ?, %(since)s
    name: str | None  # the parameter's name, when it has one
    line: int


def _operand_end(token: Token, names: frozenset[object]) -> bool:
    """Whether the token can end a value, so that an operator may follow it."""
    from sqlglot.tokens import TokenType

    closers = (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.NULL)
    if token.token_type in closers or token.token_type in (TokenType.TRUE, TokenType.FALSE):
        return True
    if token.token_type in (TokenType.NUMBER, TokenType.IDENTIFIER) or "STRING" in token.token_type.name:
        return True
    return token.token_type in names and token.text.upper() not in _VALUE_KEYWORDS


def _adjacent(tokens: Sequence[Token], start: int, texts: Sequence[str | None]) -> bool:
    """Whether tokens[start:] spell `texts` with nothing between them (None: any word)."""
    if start + len(texts) > len(tokens):
        return False
    for offset, wanted in enumerate(texts):
        token = tokens[start + offset]
        if offset and token.start != tokens[start + offset - 1].end + 1:
            return False
        if wanted is None and not _WORD.fullmatch(token.text):
            return False
        if wanted is not None and token.text != wanted:
            return False
    return True


def _marker_at(tokens: Sequence[Token], i: int, dollar: bool) -> BindMarker | None:
    from sqlglot.tokens import TokenType

    token = tokens[i]
    kind = token.token_type
    if dollar and kind is TokenType.PARAMETER and _adjacent(tokens, i, ("$", None)):
        word = tokens[i + 1].text
        return BindMarker(f"${word}", None if word.isdigit() else word, token.line)
    if kind is TokenType.PLACEHOLDER and token.text == "?":
        return BindMarker("?", None, token.line)
    if kind is TokenType.COLON and _adjacent(tokens, i, (":", None)):
        name = tokens[i + 1].text
        return BindMarker(f":{name}", name, token.line)
    if kind is TokenType.MOD and _adjacent(tokens, i, ("%", "(", None, ")", "s")):
        name = tokens[i + 2].text
        return BindMarker(f"%({name})s", name, token.line)
    if kind is TokenType.MOD and _adjacent(tokens, i, ("%", "s")):
        return BindMarker("%s", None, token.line)
    return None


def bind_markers(sql: str, sqlglot_dialect: str) -> list[BindMarker]:
    """Every bind parameter marker in `sql`, in order; none when the text does not tokenize (the
    read-only check then reports why it does not parse)."""
    import sqlglot
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.tokens import TokenType

    dialect = Dialect.get_or_raise(sqlglot_dialect or None)
    try:
        tokens = dialect.tokenize(sql)
    except sqlglot.errors.SqlglotError:
        return []
    names = frozenset(dialect.parser_class.ID_VAR_TOKENS)
    dollar = sqlglot_dialect in _DOLLAR_BINDS
    found = []
    for i in range(len(tokens)):
        marker = _marker_at(tokens, i, dollar)
        previous = tokens[i - 1] if i else None
        if marker is None or (previous is not None and _operand_end(previous, names)):
            continue  # after a value: an operator (JSON ?, path :, modulo %)
        if previous is not None and previous.token_type is TokenType.L_BRACKET and marker.text.startswith(":"):
            continue  # a slice such as list[:n]
        # The line from the offset: sqlglot's line count runs ahead after a `$word` (it looks for a
        # dollar-quote's closing tag across lines).
        found.append(replace(marker, line=sql.count("\n", 0, tokens[i].start) + 1))
    return found


def refuse_bind_parameters(
    sql: str, sqlglot_dialect: str, where: str, remedy: str, suggestions: Mapping[str, str] | None = None
) -> None:
    """Refuse SQL holding bind parameters; `suggestions` maps a parameter name to what to write instead."""
    markers = bind_markers(sql, sqlglot_dialect)
    if not markers:
        return
    shown = [f"{m.text} (line {m.line})" for m in markers[:5]]
    more = f" and {len(markers) - 5} more" if len(markers) > 5 else ""
    noun = "the bind parameter" if len(markers) == 1 else "bind parameters"
    specific = [
        f"write {suggestions[m.name]} instead of {m.text}"
        for m in markers
        if suggestions and m.name is not None and m.name in suggestions
    ]
    raise SqlGuardError(
        where,
        found=f"{noun} {', '.join(shown)}{more}",
        expected="SQL without bind parameters: etl-craft passes no values to bind, so the statement could never run",
        remedy="; ".join([*dict.fromkeys(specific), remedy]),
    )
