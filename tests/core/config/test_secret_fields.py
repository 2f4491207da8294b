"""Secret fields name variables: checked at load, profile-specific names first, never shown."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit

PROFILED = """\
Secrets:
  Profile: {profile}
Orchestration: {{}}
Engine:
  schema: etl
  user: etl
  secret: {secret}
  dev:
    jdbc_url: jdbc:postgresql://dev-db/etl
  prod:
    jdbc_url: jdbc:postgresql://prod-db/etl
"""


def profiled(profile: str = "prod", secret: str = "ENGINE_SECRET") -> str:
    return PROFILED.format(profile=profile, secret=secret)


def test_the_profile_specific_variable_wins(project):
    config = project.load(profiled(), {"ENGINE_SECRET": "plain-1", "ENGINE_PROD_SECRET": "prod-2"})
    assert config.engine.secret_var == "ENGINE_PROD_SECRET"
    assert config.secret("ENGINE_PROD_SECRET") == "prod-2"
    assert config.secrets is not None
    assert config.secrets.resolved_values() == {"prod-2"}


def test_the_plain_variable_is_used_when_no_profile_specific_one_is_set(project):
    config = project.load(profiled("dev"), {"ENGINE_SECRET": "plain-1", "ENGINE_PROD_SECRET": "prod-2"})
    assert config.engine.secret_var == "ENGINE_SECRET"


def test_a_name_without_underscore_gets_the_profile_appended(project):
    config = project.load(profiled(secret="PGPASSWORD"), {"PGPASSWORD": "a", "PGPASSWORD_PROD": "b"})
    assert config.engine.secret_var == "PGPASSWORD_PROD"


def test_the_profile_specific_name_applies_to_a_section_without_profile_blocks(project):
    config = project.load(
        "Secrets:\n  Profile: uat\nOrchestration: {}\nEngine:\n  jdbc_url: jdbc:postgresql://db/etl\n"
        "  schema: etl\n  user: etl\n  secret: ENGINE_SECRET\n",
        {"ENGINE_UAT_SECRET": "uat-pw"},
    )
    assert config.engine.profile is None
    assert config.engine.secret_var == "ENGINE_UAT_SECRET"


def test_an_unset_secret_names_the_setting_both_names_and_near_misses(project):
    message = project.refuse(profiled(), {"ENGINE_SECRT": "x"})
    assert "craft-connector.yml: Engine.secret (line 7)" in message
    assert "ENGINE_PROD_SECRET is tried first" in message
    assert "variable ENGINE_SECRET is not set" in message
    assert "ENGINE_SECRT" in message


def test_an_empty_secret_in_the_env_file_is_refused(project):
    (project.root / ".env").write_text("ENGINE_PROD_SECRET=\n", encoding="utf-8")
    text = "Secrets:\n  Source_type: file\n  Path: .env\n" + profiled().split("\n", 1)[1]
    message = project.refuse(text)
    assert "variable ENGINE_PROD_SECRET in .env is empty" in message


def test_a_blank_secret_is_refused(project):
    message = project.refuse(profiled(), {"ENGINE_PROD_SECRET": "   "})
    assert "variable ENGINE_PROD_SECRET in the process environment holds only whitespace" in message


@pytest.mark.parametrize("written", ["'p@ss word!'", "12345", "[a, b]"])
def test_a_secret_written_literally_is_refused_without_being_shown(project, written):
    message = project.refuse(profiled(secret=written))
    assert "Engine.secret (line 7): must name a variable" in message
    for part in ("p@ss", "12345"):
        assert part not in message


def test_a_variable_name_that_is_set_is_never_taken_as_the_secret_itself(project):
    # ENGINE_SECRET is set, so the value comes from it; the name itself is what the model keeps.
    config = project.load(profiled("dev"), {"ENGINE_SECRET": "real-value"})
    assert config.engine.secret_var == "ENGINE_SECRET"
    assert "real-value" not in repr(config)


def test_repr_of_the_whole_config_contains_no_secret_value(project):
    (project.root / ".env").write_text(
        "ENGINE_PROD_SECRET=engine-value-1\nSMTP_SECRET=smtp-value-2\nNGROK_TOKEN=ngrok-value-3\n"
        "WAREHOUSE_SECRET=warehouse-value-4\n",
        encoding="utf-8",
    )
    config = project.load(
        """\
        Secrets:
          Source_type: file
          Path: .env
          Profile: prod
        Orchestration:
          Email:
            host: smtp.example.com
            from_address: etl@example.com
            user: etl
            secret: SMTP_SECRET
        Engine:
          prod:
            jdbc_url: jdbc:postgresql://db/etl
            schema: etl
            user: etl
            secret: ENGINE_SECRET
        Warehouse:
          jdbc_url: jdbc:postgresql://wh/analytics
          schema: marts
          user: loader
          secret: WAREHOUSE_SECRET
        Docs_site:
          Authtoken: NGROK_TOKEN
        """
    )
    shown = repr(config) + str(config) + repr(config.secrets)
    for value in ("engine-value-1", "smtp-value-2", "ngrok-value-3", "warehouse-value-4"):
        assert value not in shown
    assert config.secrets is not None
    assert config.secrets.resolved_values() == {
        "engine-value-1",
        "smtp-value-2",
        "ngrok-value-3",
        "warehouse-value-4",
    }
