"""Loading an ingestion script as a real module and finding its `run` (S2.E.1, B19).

A script is compiled from its current source without inheriting this module's compiler flags (our
`from __future__ import annotations` must not change the script's meaning), and it is registered in
sys.modules under a stable name with a real `__spec__` before its body runs. That is what
dataclasses, typing.get_type_hints, Enum, pickle and forked worker processes look up.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from etl_craft.scripting import ScriptContractError

MODULE_PREFIX = "etl_craft_script_"


def module_name(relative: str) -> str:
    """`crm/customers.py` gives `etl_craft_script_crm_customers_py`."""
    return MODULE_PREFIX + relative.replace("/", "_").replace(".", "_")


@contextmanager
def folder_on_path(folder: Path) -> Iterator[None]:
    """Let the script import helper modules that sit beside it, while it loads and runs."""
    entry = str(folder)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def compile_script(path: Path, relative: str) -> Any:
    """The script's code object; a script that doesn't compile is refused before anything runs."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise ScriptContractError(
            f"ingestion script {relative}",
            found=f"{path}, which can't be read ({exc.strerror})",
            expected="a readable file",
            remedy="check the file's permissions",
        ) from None
    try:
        return compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ScriptContractError(
            f"ingestion script {relative}",
            found=f"{type(exc).__name__} at line {exc.lineno}: {exc.msg}",
            expected="Python source that compiles",
            remedy=f"fix the script; python -m py_compile {path} shows the error",
        ) from None
    except ValueError as exc:  # NUL bytes in the source
        raise ScriptContractError(
            f"ingestion script {relative}",
            found=str(exc),
            expected="Python source text",
            remedy="save the script as UTF-8 Python source",
        ) from None


def load_script(path: Path, relative: str) -> ModuleType:
    """Run the script's body as module `etl_craft_script_<relative>`; it is unregistered if the body raises.

    Whatever the body raises is passed on, so the caller can tell a failing import from a refusal.
    """
    code = compile_script(path, relative)
    name = module_name(relative)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None, "a .py path always has a spec"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def find_run(module: ModuleType, relative: str) -> tuple[Callable[..., object], bool]:
    """The script's top-level `run` and whether it takes the task (`run(task)`) or nothing (`run()`)."""
    subject = f"ingestion script {relative}"
    expected = "a top-level def run(task: ScriptTask) -> ScriptResult, or def run() -> ScriptResult"
    run = module.__dict__.get("run")
    if run is None:
        raise ScriptContractError(subject, found="no top-level run", expected=expected, remedy="define run")
    if not callable(run):
        raise ScriptContractError(
            subject, found=f"run is a {type(run).__name__}", expected=expected, remedy="make run a function"
        )
    if inspect.iscoroutinefunction(run) or inspect.isasyncgenfunction(run):
        raise ScriptContractError(
            subject,
            found="async def run",
            expected=f"{expected}, not async",
            remedy="make run a plain def; call asyncio.run(...) inside it if the script needs asyncio",
        )
    try:
        signature = inspect.signature(run)
    except (TypeError, ValueError):
        return run, True  # a callable Python can't introspect: hand it the task
    for arguments in ((None,), ()):
        try:
            signature.bind(*arguments)
        except TypeError:
            continue
        return run, bool(arguments)
    raise ScriptContractError(
        subject,
        found=f"run{signature}, which takes more than the task",
        expected=expected,
        remedy="take only the task; read settings from task.input_params (INPUT_PARAMS) or task.task_params",
    )
