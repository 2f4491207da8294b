"""The fork server preloads the modules `handlers.dispatch.modules` names: they must be the ones
`dispatch.run` imports for each handler, or a task process would pay for an import it was promised."""

from __future__ import annotations

import ast
import inspect

import pytest

from etl_craft.core.enums import Handler
from etl_craft.handlers import dispatch

pytestmark = pytest.mark.unit


def _imported_by_run() -> dict[str, str]:
    """Handler name -> the module its case of `dispatch.run` imports."""
    tree = ast.parse(inspect.getsource(dispatch.run))
    imported = {}
    for case in (n for n in ast.walk(tree) if isinstance(n, ast.match_case)):
        assert isinstance(case.pattern, ast.MatchValue) and isinstance(case.pattern.value, ast.Attribute)
        (statement,) = (s for s in case.body if isinstance(s, ast.ImportFrom))
        imported[case.pattern.value.attr] = f"{statement.module}.{statement.names[0].name}"
    return imported


def test_every_handler_is_imported_by_run_and_named_for_preloading() -> None:
    imported = _imported_by_run()
    assert sorted(imported) == sorted(h.name for h in Handler)
    for handler in Handler:
        assert dispatch.modules([handler]) == [imported[handler.name]]
