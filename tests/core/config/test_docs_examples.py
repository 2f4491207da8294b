"""The complete examples in docs/reference/configuration.md load as documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "configuration.md"


def examples() -> list[str]:
    text = REFERENCE.read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    return [block for block in blocks if block.startswith("# craft-connector.yml")]


def test_the_reference_has_both_complete_examples():
    assert len(examples()) == 2


def test_local_sqlite_and_duckdb_example(project):
    config = project.load(examples()[0])
    assert config.engine.jdbc_url == f"jdbc:sqlite:{project.root / 'engine.db'}"
    assert config.warehouse is not None
    assert config.warehouse.jdbc_url == f"jdbc:duckdb:{project.root / 'warehouse.duckdb'}"
    assert config.orchestration.timezone == "Europe/Paris"


@pytest.mark.parametrize("profile", ["dev", "prod"])
def test_postgres_example_with_profiles(project, profile):
    (project.root / ".env").write_text(
        f"export ETL_CRAFT_PROFILE={profile}\nSMTP_SECRET=s\nENGINE_SECRET=e\nENGINE_PROD_SECRET=ep\n"
        "WAREHOUSE_SECRET=w\nWAREHOUSE_KEY_PASSPHRASE=k\n",
        encoding="utf-8",
    )
    config = project.load(examples()[1])
    assert config.engine.profile == profile
    assert config.engine.schema == "etl_craft"
    assert config.warehouse is not None
    if profile == "prod":
        assert config.orchestration.mode == "remote"
        assert config.engine.secret_var == "ENGINE_PROD_SECRET"
        assert config.engine.url_files == (("sslrootcert", project.root / "certs" / "ca.pem"),)
        assert config.warehouse.auth_mode == "key_file"
        assert config.warehouse.key_file == project.root / "certs" / "loader.key"
        assert config.warehouse.secret_var == "WAREHOUSE_KEY_PASSPHRASE"
    else:
        assert config.orchestration.max_parallel_tasks == 2
        assert config.engine.secret_var == "ENGINE_SECRET"
        assert config.warehouse.auth_mode == "password"
    assert (config.cloning.enabled, config.cloning.scope, config.cloning.every_minutes) == (True, "all", 15)
