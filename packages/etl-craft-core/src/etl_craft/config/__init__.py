"""Loading craft-connector.yml: sections, profiles and secrets."""

from __future__ import annotations

from etl_craft.config.loader import find_config, load_config
from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.config.secrets import SecretSource

__all__ = ["ConnectionProfile", "ConnectorConfig", "SecretSource", "find_config", "load_config"]
