"""The command line itself: version, help, usage errors, global options and contributed commands."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from etl_craft import __version__
from tests.fixtures.cli import run_cli

pytestmark = pytest.mark.unit


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"etl-craft {__version__}"


def test_help_lists_the_core_commands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("doctor", "setup", "init-db", "migrate"):
        assert f"    {command} " in result.stdout


def test_no_command_is_a_usage_error() -> None:
    result = run_cli()
    assert result.returncode == 2
    assert "name a command" in result.stderr


def test_a_missing_config_is_a_configuration_error_naming_where_it_looked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ETL_CRAFT_CONFIG"}
    result = run_cli("init-db", env=env, cwd=tmp_path)
    assert result.returncode == 3, result
    assert result.stderr.startswith("error: no craft-connector.yml in")
    assert str(tmp_path / "etl-craft" / "craft-connector.yml") in result.stderr


def test_global_options_are_accepted_after_the_command_and_json_errors_are_documents(tmp_path: Path) -> None:
    result = run_cli("init-db", "--config", str(tmp_path / "nope.yml"), "--format", "json")
    assert result.returncode == 3
    doc = result.json()
    assert doc["schema"] == "etl-craft/error/1"
    assert doc["error"] == "ConfigurationError" and doc["exit_code"] == 3
    assert "nope.yml" in doc["message"]


@pytest.mark.parametrize(
    ("value", "why"),
    [("", "an empty value"), ("x" * 129, "129 characters"), ("bob\u0007", "control characters")],
)
def test_an_invalid_actor_is_refused_before_anything_runs(tmp_path: Path, value: str, why: str) -> None:
    env = dict(os.environ, ETL_CRAFT_ACTOR=value)
    result = run_cli("init-db", "--config", str(tmp_path / "x.yml"), env=env)
    assert result.returncode == 3
    assert "ETL_CRAFT_ACTOR" in result.stderr and why in result.stderr


def test_other_distributions_contribute_commands_through_entry_points(tmp_path: Path) -> None:
    # A real distribution on the path: a package with a Command and its dist-info entry point.
    (tmp_path / "hello_cmd.py").write_text(
        "from etl_craft.cli.framework import Command\n"
        "def _run(args):\n    print('hello from a plugin', args.format)\n    return 0\n"
        "COMMAND = Command('hello', 'say hello', _run)\n"
    )
    info = tmp_path / "hello_cmd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-cmd\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[etl_craft.commands]\nhello = hello_cmd:COMMAND\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    result = run_cli("hello", "--format", "json", env=env)
    assert result.returncode == 0, result
    assert result.stdout.strip() == "hello from a plugin json"
    assert "hello" in run_cli("--help", env=env).stdout
