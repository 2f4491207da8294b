"""PYTHON tasks: SCRIPT_NAME, INPUT_PARAMS and the script's entry point, read with `ast` and never imported.

Importing a script would run its module body (network calls, writes). The syntax tree says enough:
a top-level `run` that is a plain function taking the task or nothing. A `run` bound some other way
(imported, assigned, decorated) can't be judged without running it, so it passes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from etl_craft.core.enums import Handler
from etl_craft.core.errors import HandlerError
from etl_craft.handlers.python_script import input_params, script_file
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Project

EXPECTED_RUN = "a top-level def run(task: ScriptTask) -> ScriptResult, or def run() -> ScriptResult"


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, including those inside top-level if, try and with blocks."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If | ast.With | ast.AsyncWith):
            yield from _top_level(statement.body)
            yield from _top_level(getattr(statement, "orelse", []))
        elif isinstance(statement, ast.Try | ast.TryStar):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from _top_level(block)
            for handler in statement.handlers:
                yield from _top_level(handler.body)


def _binds_run(statement: ast.stmt) -> bool:
    """Whether a statement binds `run` some way other than a def (import, assignment)."""
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return any((alias.asname or alias.name.split(".")[0]) == "run" for alias in statement.names)
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    return any(isinstance(n, ast.Name) and n.id == "run" for t in targets for n in ast.walk(t))


def run_problem(source: bytes, filename: str) -> tuple[str, str, str] | None:
    """(found, expected, remedy) when the script's `run` breaks the contract, else None."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return (
            f"{type(exc).__name__} at line {exc.lineno}: {exc.msg}",
            "Python source that compiles",
            f"fix the script; python -m py_compile {filename} shows the error",
        )
    except ValueError as exc:  # NUL bytes in the source
        return str(exc), "Python source text", "save the script as UTF-8 Python source"
    definitions = [s for s in _top_level(tree.body) if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    runs = [d for d in definitions if d.name == "run"]
    if not runs:
        if any(_binds_run(s) for s in _top_level(tree.body)):
            return None
        return "no top-level run", EXPECTED_RUN, "define run"
    last = runs[-1]  # the definition that stands when the module has run
    if isinstance(last, ast.AsyncFunctionDef):
        return (
            f"async def run at line {last.lineno}",
            f"{EXPECTED_RUN}, not async",
            "make run a plain def; call asyncio.run(...) inside it if the script needs asyncio",
        )
    if last.decorator_list:
        return None
    args = last.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    required_keywords = sum(default is None for default in args.kw_defaults)
    takes_task = required <= 1 and (positional >= 1 or args.vararg is not None)
    takes_nothing = required == 0
    if required_keywords or not (takes_task or takes_nothing):
        names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        return (
            f"def run({', '.join(names)}) at line {last.lineno}, which takes more than the task",
            EXPECTED_RUN,
            "take only the task; read settings from task.input_params (INPUT_PARAMS) or task.task_params",
        )
    return None


def check_scripts(project: Project, findings: Findings) -> None:
    folder = project.config.scripts_dir
    for task in project.checked_tasks(Handler.PYTHON):
        pipeline = project.code_of(task)
        try:
            input_params(task.values.get("INPUT_PARAMS"))
        except HandlerError as error:
            findings.error(error, pipeline, task.code)
        try:
            path, relative = script_file(task.values.get("SCRIPT_NAME"), folder)
        except HandlerError as error:
            findings.error(error, pipeline, task.code)
            continue
        problem = _script_problem(path)
        if problem is not None:
            found, expected, remedy = problem
            findings.fail(
                pipeline, task.code, f"ingestion script {relative}", found=found, expected=expected, remedy=remedy
            )


def _script_problem(path: Path) -> tuple[str, str, str] | None:
    try:
        source = path.read_bytes()
    except OSError as exc:
        return f"{path}, which can't be read ({exc.strerror})", "a readable file", "check the file's permissions"
    return run_problem(source, str(path))
