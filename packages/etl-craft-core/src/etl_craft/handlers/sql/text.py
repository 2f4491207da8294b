"""The text of a task's SELECT: `$$` tokens, trailing semicolons, embedding and the read-only check.

Token substitution needs to know what is code and what is a string literal, quoted identifier,
comment or dollar-quoted body, and it must keep every other character exactly as written. A small
scanner does that: sqlglot's tokenizer would read `$$pipeline_run_id` as the start of a dollar-quoted
string and it does not give back the original text between tokens, so it can't rewrite in place.
The read-only check itself is sqlglot's parser.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from etl_craft.core.errors import SqlGuardError

# token -> the task parameter that enables it
TOKEN_SWITCHES: Mapping[str, str] = {
    "pipeline_id": "PIPELINE_ID_SUBSTITUTION",
    "pipeline_run_id": "PIPELINE_RUN_ID_SUBSTITUTION",
    "task_run_id": "TASK_RUN_ID_SUBSTITUTION",
    "pipeline_run_id_filter": "PIPELINE_RUN_ID_FILTER",
    "run_date": "RUN_DATE_SUBSTITUTION",
}
_RENAMED = {"pipeline_id_filter": "pipeline_run_id_filter"}
_IDENT_START = re.compile(r"[A-Za-z_]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


@dataclass(frozen=True)
class Piece:
    kind: str  # "code", "string", "identifier", "comment", "dollar"
    text: str


def scan(sql: str) -> list[Piece]:
    """Split SQL into code and the parts tokens never touch; joining the texts gives `sql` back."""
    pieces: list[Piece] = []
    code_start = 0
    i = 0
    n = len(sql)

    def flush(upto: int) -> None:
        if upto > code_start:
            pieces.append(Piece("code", sql[code_start:upto]))

    while i < n:
        ch = sql[i]
        end = -1
        kind = ""
        if ch == "'":
            escapes = i > 0 and sql[i - 1] in "eE" and (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
            end = _quoted_end(sql, i, "'", backslash=escapes)
            kind = "string"
        elif ch == '"':
            end = _quoted_end(sql, i, '"', backslash=False)
            kind = "identifier"
        elif sql.startswith("--", i):
            newline = sql.find("\n", i)
            end = n if newline < 0 else newline
            kind = "comment"
        elif sql.startswith("/*", i):
            end = _block_comment_end(sql, i)
            kind = "comment"
        elif ch == "$":
            end = _dollar_end(sql, i)
            kind = "dollar"
        if end < 0:
            i += 1
            continue
        flush(i)
        pieces.append(Piece(kind, sql[i:end]))
        i = code_start = end
    flush(n)
    return pieces


def _quoted_end(sql: str, start: int, quote: str, *, backslash: bool) -> int:
    i = start + 1
    while i < len(sql):
        if backslash and sql[i] == "\\":
            i += 2
            continue
        if sql[i] == quote:
            if sql.startswith(quote * 2, i):
                i += 2
                continue
            return i + 1
        i += 1
    return len(sql)  # unterminated: the rest is the literal, as the database would read it


def _block_comment_end(sql: str, start: int) -> int:
    depth = 0
    i = start
    while i < len(sql):
        if sql.startswith("/*", i):
            depth += 1
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return len(sql)


def _dollar_end(sql: str, start: int) -> int:
    """The end of a dollar-quoted body starting here, or -1 when this `$` starts none.

    `$$name` is a token, not a body: a body with an empty tag must start `$$` followed by
    something other than a letter or underscore (write `$x$...$x$` for other bodies).
    """
    if start > 0 and (sql[start - 1].isalnum() or sql[start - 1] == "_"):
        return -1  # part of an identifier such as price$
    match = _DOLLAR_TAG.match(sql, start)
    if not match:
        return -1
    if match.group(1) is None and start + 2 < len(sql) and _IDENT_START.match(sql[start + 2]):
        return -1
    tag = match.group(0)
    close = sql.find(tag, match.end())
    return len(sql) if close < 0 else close + len(tag)


def tokens_used(sql: str) -> list[str]:
    found: list[str] = []
    for piece in scan(sql):
        if piece.kind == "code":
            found.extend(m.group(1) for m in re.finditer(r"\$\$([A-Za-z_][A-Za-z0-9_]*)", piece.text))
    return found


def substitute(sql: str, values: Mapping[str, str], switches: Mapping[str, bool], where: str) -> str:
    """Replace `$$token` outside literals and comments; every used token needs its switch and vice versa."""
    used = set(tokens_used(sql))
    for token in sorted(used):
        if token not in TOKEN_SWITCHES:
            hint = f"; it was renamed $${_RENAMED[token]}" if token in _RENAMED else ""
            raise SqlGuardError(
                where,
                found=f"the token $${token}{hint}",
                expected="only $$" + ", $$".join(TOKEN_SWITCHES),
                remedy="use a supported token, or put the text inside a string literal or comment",
            )
        if not switches.get(TOKEN_SWITCHES[token], False):
            raise SqlGuardError(
                where,
                found=f"$${token} with {TOKEN_SWITCHES[token]} not true",
                expected=f"{TOKEN_SWITCHES[token]} = true for a SELECT that uses $${token}",
                remedy=f"set the task parameter {TOKEN_SWITCHES[token]} to true",
            )
    for token, switch in TOKEN_SWITCHES.items():
        if switches.get(switch, False) and token not in used:
            raise SqlGuardError(
                where,
                found=f"{switch} = true but no $${token} in the SELECT",
                expected=f"$${token} where {switch} is true",
                remedy=f"use $${token} in the SELECT, or set {switch} to false",
            )
    out = []
    for piece in scan(sql):
        if piece.kind != "code":
            out.append(piece.text)
            continue
        out.append(re.sub(r"\$\$([A-Za-z_][A-Za-z0-9_]*)", lambda m: values[m.group(1)], piece.text))
    return "".join(out)


def replace_tokens(sql: str, values: Mapping[str, str]) -> str:
    """Known tokens replaced outside literals and comments, switches not checked (for lineage)."""
    pattern = re.compile(r"\$\$(" + "|".join(sorted(values, key=len, reverse=True)) + r")(?![A-Za-z0-9_])")
    return "".join(p.text if p.kind != "code" else pattern.sub(lambda m: values[m.group(1)], p.text) for p in scan(sql))


def strip_trailing(sql: str) -> str:
    """The SELECT without the semicolons that end it (comments after them are kept)."""
    pieces = scan(sql)
    for index in range(len(pieces) - 1, -1, -1):
        piece = pieces[index]
        if piece.kind == "comment" or not piece.text.strip():
            continue
        if piece.kind == "code":
            text = piece.text.rstrip()
            while text.endswith(";"):
                text = text[:-1].rstrip()
            pieces[index] = Piece("code", text + piece.text[len(piece.text.rstrip()) :])
        break
    return "".join(p.text for p in pieces).strip()


def nested(select: str) -> str:
    """The SELECT in parentheses, closed on its own line so a trailing comment can't swallow it."""
    return f"(\n{strip_trailing(select)}\n)"


def embed(select: str) -> str:
    """The SELECT as a derived table; the closing parenthesis sits on its own line after any comment."""
    return f"(\n{strip_trailing(select)}\n) etl_src"


def check_read_only(sql: str, sqlglot_dialect: str, where: str, state_changing: frozenset[str] = frozenset()) -> None:
    """Refuse anything but one SELECT, WITH, TABLE or VALUES statement that reads, calling none of
    the `state_changing` functions (the dialect's `state_changing_functions`)."""
    import sqlglot
    from sqlglot import exp

    try:
        statements = [s for s in sqlglot.parse(sql, read=sqlglot_dialect) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SqlGuardError(
            where,
            found=f"SQL that does not parse ({message})",
            expected="one read-only SELECT, WITH, TABLE or VALUES statement",
            remedy="fix the syntax; the warehouse's own error is in sqlglot's message",
        ) from None
    if len(statements) != 1:
        raise SqlGuardError(
            where,
            found=f"{len(statements)} statements",
            expected="exactly one read-only SELECT, WITH, TABLE or VALUES statement",
            remedy="keep one statement per task and remove the others",
        )
    statement = statements[0]
    readable = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)
    if not isinstance(statement, readable):
        raise SqlGuardError(
            where,
            found=f"a statement that is not a query ({statement.key.upper()})",
            expected="one read-only SELECT, WITH, TABLE or VALUES statement",
            remedy="etl-craft writes the target itself: give the SELECT whose rows the action writes",
        )
    writers = (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Into)
    for node in statement.walk():
        if isinstance(node, writers):
            label = "SELECT ... INTO" if isinstance(node, exp.Into) else node.key.upper()
            raise SqlGuardError(
                where,
                found=f"{label} inside the query",
                expected="a query that only reads",
                remedy="remove the data-changing part; etl-craft writes the target itself",
            )
        function = _function_name(node)
        if function in state_changing:
            raise SqlGuardError(
                where,
                found=f"a call of {function}(), which changes the warehouse's state",
                expected=f"a query that only reads: no {', '.join(sorted(state_changing))} (read-only rule)",
                remedy="remove the call; etl-craft writes the target itself and assigns ROW_ID",
            )


def _function_name(node: object) -> str | None:
    """The lower-case name of a function call, as written; None for any other node."""
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None
