"""A throw-away project folder for configuration tests: write a craft-connector.yml, load it."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from etl_craft.config import ConnectorConfig, load_config
from etl_craft.core.errors import ConfigurationError, ExitCode


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, text: str, name: str = "craft-connector.yml") -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def load(self, text: str, environ: Mapping[str, str] | None = None) -> ConnectorConfig:
        return load_config(self.write(text), environ or {})

    def refuse(self, text: str, environ: Mapping[str, str] | None = None) -> str:
        """The message of the ConfigurationError loading `text` raises (exit status 3)."""
        with pytest.raises(ConfigurationError) as caught:
            self.load(text, environ)
        assert caught.value.exit_code == ExitCode.CONFIGURATION
        return str(caught.value)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    return Project(root)
